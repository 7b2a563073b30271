"""LSP's standard launch arguments, the client process watch, a terminal on stdin, help texts."""

from __future__ import annotations

import asyncio
import os
import pty
import select
import signal
import subprocess
import sys
import time
import tty
from pathlib import Path

import pytest

from tests.lsp.editor import SIDECAR
from tests.lsp.raw import RawSidecar, frame
from tests.procs import alive, wait_gone


async def _stand_in_editor() -> asyncio.subprocess.Process:
    """A process that stands for the editor: its pid is what the sidecar watches."""
    return await asyncio.create_subprocess_exec(sys.executable, "-c", "import time; time.sleep(600)")


@pytest.mark.parametrize("form", ["--clientProcessId=PID", "--clientProcessId PID", "initialize processId"])
async def test_sidecar_and_agent_exit_when_the_client_process_dies(
    form: str, workspace: Path, state_dir: Path
) -> None:
    editor = await _stand_in_editor()
    if form == "--clientProcessId=PID":
        args = [f"--clientProcessId={editor.pid}"]
    elif form == "--clientProcessId PID":
        args = ["--clientProcessId", str(editor.pid)]
    else:
        args = []
    sidecar = await RawSidecar.start(workspace, state_dir, args)
    try:
        process_id = editor.pid if form == "initialize processId" else None
        await sidecar.initialize(workspace, process_id=process_id)
        await sidecar.wait_idle()
        agents = await sidecar.agent_pids()
        assert agents
        # The sidecar's stdin stays open (this test holds it): only the watch can notice.
        editor.kill()
        await editor.wait()
        async with asyncio.timeout(15):
            code = await sidecar.proc.wait()
        assert code == 1, "the editor went away without shutdown: exit code 1"
        assert not await asyncio.to_thread(wait_gone, agents, 10), "the agent exits with the sidecar"
        await asyncio.sleep(0.2)
        assert b"Traceback" not in sidecar.stderr, sidecar.stderr.decode(errors="replace")
    finally:
        if editor.returncode is None:
            editor.kill()
            await editor.wait()
        await sidecar.close()


async def test_a_live_client_process_keeps_the_sidecar_serving(workspace: Path, state_dir: Path) -> None:
    editor = await _stand_in_editor()
    sidecar = await RawSidecar.start(workspace, state_dir, [f"--clientProcessId={editor.pid}"])
    try:
        await sidecar.initialize(workspace, process_id=editor.pid)
        await sidecar.wait_idle()
        await asyncio.sleep(1.5)  # longer than one polling interval
        answer = await sidecar.command("acp.status", {})
        assert answer["result"]["state"] == "idle"
        await sidecar.close()
        assert sidecar.proc.returncode == 0, "shutdown and exit: 0"
    finally:
        await sidecar.close()
        editor.kill()
        await editor.wait()


@pytest.mark.parametrize("flag", ["--pipe=/tmp/lsp.sock", "--socket=6009", "--port=6009", "--port"])
def test_other_lsp_transports_are_refused_clearly(flag: str) -> None:
    out = subprocess.run([SIDECAR, flag], capture_output=True, text=True, timeout=30, stdin=subprocess.PIPE)
    assert out.returncode == 2
    name = flag.split("=")[0]
    assert name in out.stderr and "stdio" in out.stderr, out.stderr
    assert "unrecognized" not in out.stderr and "Traceback" not in out.stderr


def test_help_says_what_is_written_where() -> None:
    out = subprocess.run([SIDECAR, "--help"], capture_output=True, text=True, timeout=30)
    text = " ".join(out.stdout.split())
    for written in ("titles.sqlite3", "agents.json", "features/conversation/", "demo agent"):
        assert written in text, written
    assert "title cache and logs" not in text
    assert "no log" in text.lower()
    for flag in ("--clientProcessId", "--stdio", "--log-file"):
        assert flag in text


def _read_line(fd: int, timeout: float) -> bytes:
    data = b""
    deadline = time.monotonic() + timeout
    while not data.endswith(b"\n") and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            break
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        data += chunk
    return data


def _read_message(fd: int, timeout: float) -> bytes:
    data = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        head, sep, body = data.partition(b"\r\n\r\n")
        if sep:
            length = int(head.split(b"\r\n")[0].split(b":")[1])
            if len(body) >= length:
                return body[:length]
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            break
        data += os.read(fd, 65536)
    return data


def test_started_in_a_terminal_it_says_what_it_is_and_keeps_serving(tmp_path: Path) -> None:
    master, slave = pty.openpty()
    tty.setraw(slave)  # bytes pass unchanged, no echo: LSP can still flow through it
    env = dict(os.environ, ACP_SIDECAR_STATE_DIR=str(tmp_path))
    proc = subprocess.Popen(
        [SIDECAR], stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=tmp_path
    )
    os.close(slave)
    try:
        assert proc.stderr is not None and proc.stdout is not None
        line = _read_line(proc.stderr.fileno(), 30).decode()
        assert line.count("\n") == 1, line
        assert "language server" in line and "editor" in line and "--help" in line, line
        assert proc.poll() is None, "it keeps serving"
        body = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"processId":null,"capabilities":{}}}'
        os.write(master, frame(body))
        answer = _read_message(proc.stdout.fileno(), 30)
        assert b'"capabilities"' in answer and b'"id": 1' in answer.replace(b'"id":1', b'"id": 1'), answer
    finally:
        proc.kill()
        proc.wait(10)
        os.close(master)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    assert not alive(proc.pid)


def test_not_in_a_terminal_it_prints_nothing(tmp_path: Path) -> None:
    env = dict(os.environ, ACP_SIDECAR_STATE_DIR=str(tmp_path))
    out = subprocess.run(
        [SIDECAR], input=b"", capture_output=True, timeout=30, env=env, cwd=tmp_path, check=False
    )
    assert out.stderr == b"", out.stderr


async def test_a_signal_during_the_stop_is_no_crash(workspace: Path, state_dir: Path) -> None:
    sidecar = await RawSidecar.start(workspace, state_dir)
    try:
        await sidecar.initialize(workspace)
        await sidecar.wait_idle()
        agents = await sidecar.agent_pids()
        await sidecar.command("acp.session.new", {})
        await sidecar.command("acp.prompt", "#hang")  # the agent ignores cancel: stopping takes a while
        await sidecar.wait_for(lambda m: m.get("method") == "acp/turn" and m["params"]["state"] == "running")
        assert sidecar.proc.stdin is not None
        sidecar.proc.stdin.close()  # the editor goes away: the clean stop begins
        await asyncio.sleep(0.3)
        assert sidecar.proc.returncode is None, "still stopping"
        sidecar.proc.send_signal(signal.SIGTERM)
        async with asyncio.timeout(15):
            code = await sidecar.proc.wait()
        assert code == 1, "the editor went away first"
        assert not await asyncio.to_thread(wait_gone, agents, 10)
        await asyncio.sleep(0.2)
        assert b"Traceback" not in sidecar.stderr, sidecar.stderr.decode(errors="replace")
    finally:
        await sidecar.close()
