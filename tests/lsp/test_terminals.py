"""Client terminals (ACP terminal/*): a scripted agent sends the requests, a real sidecar runs them.

Every answer the agent gets is checked against the ACP v1 schema, and every frame the sidecar sends
the agent is read back from a tee (tests/agents/tee_agent.py) and validated too.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.lsp.editor import Editor, open_editor
from tests.lsp.test_agent_events import ended_progress
from tests.lsp.test_commands import expect_error
from tests.lsp.test_permissions_files import scripted
from tests.procs import alive, descendants, wait_gone
from tests.schema_check import assert_valid

AGENTS = Path(__file__).resolve().parents[1] / "agents"
SCRIPTED = AGENTS / "scripted_agent.py"
TEE = AGENTS / "tee_agent.py"
STUBBORN = AGENTS / "stubborn_command.py"
PY = sys.executable

# What the sidecar sends the agent, by method: the schema type each must be.
REQUEST_TYPES = {
    "initialize": "InitializeRequest",
    "session/new": "NewSessionRequest",
    "session/prompt": "PromptRequest",
    "session/cancel": "CancelNotification",
    "session/close": "CloseSessionRequest",
}
RESPONSE_TYPES = {
    "terminal/create": "CreateTerminalResponse",
    "terminal/output": "TerminalOutputResponse",
    "terminal/wait_for_exit": "WaitForTerminalExitResponse",
    "terminal/kill": "KillTerminalResponse",
    "terminal/release": "ReleaseTerminalResponse",
}


def validate_frames(frames: Path) -> list[dict[str, Any]]:
    """Every frame the sidecar sent the agent: requests and notifications of their schema type,
    answers a JSON-RPC result or an error with a code and a message."""
    sent = [json.loads(line) for line in frames.read_text().splitlines() if line.strip()]
    for frame in sent:
        assert frame.get("jsonrpc") == "2.0", frame
        method = frame.get("method")
        if method is not None:
            assert method in REQUEST_TYPES, f"unexpected {method}"
            assert_valid(REQUEST_TYPES[method], frame["params"])
        elif "error" in frame:
            assert isinstance(frame["error"].get("code"), int) and isinstance(frame["error"]["message"], str)
        else:
            assert "result" in frame and "id" in frame, frame
    initialize = next(f for f in sent if f.get("method") == "initialize")
    assert initialize["params"]["clientCapabilities"]["terminal"] is True
    return sent


def request(method: str, session_id: str, **params: Any) -> dict[str, Any]:
    return {"request": method, "params": {"sessionId": session_id, **params}}


def result_of(answer: dict[str, Any], method: str) -> dict[str, Any]:
    assert "result" in answer, answer
    result: dict[str, Any] = answer["result"]
    assert_valid(RESPONSE_TYPES[method], result)
    return result


def error_of(answer: dict[str, Any]) -> str:
    assert "error" in answer and "result" not in answer, answer
    return str(answer["error"]["message"])


class Agent:
    """One sidecar with the scripted agent behind a tee, and a session."""

    def __init__(self, ed: Editor, session_id: str) -> None:
        self.ed = ed
        self.sid = session_id

    async def run(self, *steps: dict[str, Any], timeout: float = 60) -> dict[int, Any]:
        return await scripted(self.ed, list(steps), timeout=timeout)

    async def create(self, command: str, *args: str, **params: Any) -> str:
        answer = (
            await self.run(request("terminal/create", self.sid, command=command, args=list(args), **params))
        )[0]
        return str(result_of(answer, "terminal/create")["terminalId"])

    async def call(self, method: str, terminal_id: str) -> dict[str, Any]:
        answer = (await self.run(request(method, self.sid, terminalId=terminal_id)))[0]
        return result_of(answer, method)

    async def output_with(self, terminal_id: str, text: str, timeout: float = 30) -> dict[str, Any]:
        """terminal/output, asked again until its output holds `text`."""
        async with asyncio.timeout(timeout):
            while text not in (output := await self.call("terminal/output", terminal_id))["output"]:
                await asyncio.sleep(0.1)
        return output


@contextlib.asynccontextmanager
async def agent_session(
    workspace: Path, state_dir: Path, tmp_path: Path, profile: str = "helix", tee: bool = True
) -> AsyncIterator[Agent]:
    """`tee`: frames logged and validated (the tee outlives an agent that crashes: not then)."""
    frames = tmp_path / "frames.jsonl"
    command = f"{PY} {TEE} {frames} {PY} {SCRIPTED}" if tee else f"{PY} {SCRIPTED}"
    async with open_editor(profile, workspace, state_dir, extra_args=["--agent", command]) as ed:
        sid = (await ed.command("acp.session.new"))["sessionId"]
        yield Agent(ed, sid)
    if tee:
        validate_frames(frames)


async def test_output_exit_code_env_and_cwd(workspace: Path, state_dir: Path, tmp_path: Path) -> None:
    async with agent_session(workspace, state_dir, tmp_path) as agent:
        code = "import os, sys; print('héllo ✓', os.environ['GREETING'], os.getcwd()); sys.exit(3)"
        env = [{"name": "GREETING", "value": "from the env"}]
        tid = await agent.create(PY, "-c", code, env=env, cwd=str(workspace / "src"))
        status = await agent.call("terminal/wait_for_exit", tid)
        assert status["exitCode"] == 3 and status["signal"] is None
        output = await agent.call("terminal/output", tid)
        assert output["output"] == f"héllo ✓ from the env {workspace / 'src'}\n"
        assert output["truncated"] is False
        assert output["exitStatus"] == {"exitCode": 3, "signal": None}
        # Without a cwd: the session's; stderr is in the output too.
        tid = await agent.create(
            PY, "-c", "import os, sys; print(os.getcwd()); print('oops', file=sys.stderr)"
        )
        assert (await agent.call("terminal/wait_for_exit", tid))["exitCode"] == 0
        assert (await agent.call("terminal/output", tid))["output"].split() == [str(workspace), "oops"]
        await agent.call("terminal/release", tid)
        # Released: the id is gone.
        gone = await agent.run(request("terminal/output", agent.sid, terminalId=tid))
        assert "unknown terminal" in error_of(gone[0])


async def test_output_limit_drops_from_the_front_at_a_character(
    workspace: Path, state_dir: Path, tmp_path: Path
) -> None:
    async with agent_session(workspace, state_dir, tmp_path) as agent:
        # "aé" is 3 bytes; the last 4 bytes start inside an "é": the output keeps the last 3.
        code = "import sys; sys.stdout.write('aé' * 1000)"
        tid = await agent.create(PY, "-c", code, outputByteLimit=4)
        await agent.call("terminal/wait_for_exit", tid)
        output = await agent.call("terminal/output", tid)
        assert output["output"] == "aé" and output["truncated"] is True
        # A limit the output fits in: untouched; 0 keeps nothing.
        tid = await agent.create(PY, "-c", "print('✓' * 10)", outputByteLimit=31)
        await agent.call("terminal/wait_for_exit", tid)
        assert await agent.call("terminal/output", tid) == {
            "output": "✓" * 10 + "\n",
            "truncated": False,
            "exitStatus": {"exitCode": 0, "signal": None},
        }
        tid = await agent.create(PY, "-c", "print('x')", outputByteLimit=0)
        await agent.call("terminal/wait_for_exit", tid)
        assert (await agent.call("terminal/output", tid))["output"] == ""


async def test_signals_kill_and_bad_requests(workspace: Path, state_dir: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (workspace / "escape").symlink_to(outside)
    async with agent_session(workspace, state_dir, tmp_path) as agent:
        tid = await agent.create(PY, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGUSR1)")
        assert await agent.call("terminal/wait_for_exit", tid) == {"exitCode": None, "signal": "SIGUSR1"}
        # Killed while it runs: SIGTERM first; the output stays readable until release.
        tid = await agent.create(PY, "-c", "import time\nprint('up', flush=True)\ntime.sleep(60)")
        assert (await agent.output_with(tid, "up"))["exitStatus"] is None
        assert await agent.call("terminal/kill", tid) == {}
        assert await agent.call("terminal/wait_for_exit", tid) == {"exitCode": None, "signal": "SIGTERM"}
        assert (await agent.call("terminal/output", tid))["output"] == "up\n"
        assert await agent.call("terminal/kill", tid) == {}  # already ended: nothing to do
        await agent.call("terminal/release", tid)
        answers = await agent.run(
            request("terminal/create", agent.sid, command=PY, cwd=str(outside)),
            request("terminal/create", agent.sid, command=PY, cwd=str(workspace / "escape")),
            request("terminal/create", agent.sid, command=PY, cwd="src"),
            request("terminal/create", agent.sid, command=PY, cwd=str(workspace / "README.md")),
            request("terminal/create", agent.sid, command="no-such-command-anywhere"),
            request("terminal/create", agent.sid, command=""),
            request("terminal/create", agent.sid, command=PY, args="-c"),
            request("terminal/create", agent.sid, command=PY, env=[{"name": "A=B", "value": "x"}]),
            request("terminal/create", agent.sid, command=PY, outputByteLimit=-1),
            request("terminal/create", "no-such-session", command=PY),
            request("terminal/wait_for_exit", agent.sid, terminalId="term-999"),
            request("terminal/release", agent.sid, terminalId=tid),
        )
        assert "outside the session" in error_of(answers[0])
        assert "outside the session" in error_of(answers[1])
        assert "not absolute" in error_of(answers[2])
        assert "not a directory" in error_of(answers[3])
        assert "cannot start" in error_of(answers[4]) and "No such file" in error_of(answers[4])
        assert "command" in error_of(answers[5])
        assert "args" in error_of(answers[6])
        assert "env" in error_of(answers[7])
        assert "outputByteLimit" in error_of(answers[8])
        assert "unknown session" in error_of(answers[9])
        assert "unknown terminal" in error_of(answers[10])
        assert "unknown terminal" in error_of(answers[11])
        assert not any(p.name == "created" for p in outside.iterdir())


async def _stubborn(agent: Agent, pids_file: Path) -> tuple[str, set[int]]:
    tid = await agent.create(PY, str(STUBBORN), str(pids_file))
    async with asyncio.timeout(30):
        while "done" not in pids_file.read_text():
            await asyncio.sleep(0.05)
    pids = {int(p) for p in pids_file.read_text().split() if p.isdigit()}
    assert len(pids) == 4 and all(alive(p) for p in pids)
    return tid, pids


@pytest.mark.fault
@pytest.mark.parametrize("how", ["release", "cancel", "agent crash", "sidecar SIGKILL", "shutdown"])
async def test_a_stubborn_command_leaves_nothing(
    how: str, workspace: Path, state_dir: Path, tmp_path: Path
) -> None:
    """A command that ignores SIGTERM with helpers in its group, out of it (setsid) and
    re-parented: none of them outlives the terminal's release, a cancel, the agent or the sidecar."""
    pids_file = tmp_path / "pids"
    pids_file.write_text("")
    pids: set[int] = set()
    try:
        async with agent_session(workspace, state_dir, tmp_path, tee=how != "agent crash") as agent:
            tid, pids = await _stubborn(agent, pids_file)
            sidecar = agent.ed.client._server
            if how == "release":
                await agent.call("terminal/release", tid)
                left = {p for p in pids if alive(p)}
                assert not left, f"alive right after terminal/release answered: {left}"
            elif how == "cancel":
                admitted = await agent.ed.command("acp.prompt", json.dumps([{"sleep": 60}]))
                await agent.ed.wait_for("acp/turn", lambda t: t["state"] == "running")
                await agent.ed.command("acp.cancel")
                await agent.ed.wait_turn_end(admitted["turnId"], timeout=30)
                await agent.ed.wait_for(
                    "acp/terminal", lambda p: p["terminalId"] == tid and p["state"] == "exited", timeout=20
                )
            elif how == "agent crash":
                await agent.ed.command("acp.prompt", json.dumps([{"exit": 3}]))
                await agent.ed.wait_for(
                    "acp/terminal", lambda p: p["terminalId"] == tid and p["state"] == "released", timeout=20
                )
            elif how == "sidecar SIGKILL":
                everything = pids | descendants(sidecar.pid)
                sidecar.send_signal(signal.SIGKILL)
                pids = everything
            # "shutdown": the editor closes the sidecar orderly at the end of the block.
        left = await asyncio.to_thread(wait_gone, pids, 15)
        assert not left, f"left alive after {how}: {sorted(left)}"
    finally:
        for pid in pids:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.load
async def test_sixty_four_terminals_at_once_and_one_more_is_refused(
    workspace: Path, state_dir: Path, tmp_path: Path
) -> None:
    async with agent_session(workspace, state_dir, tmp_path) as agent:
        count = 64
        # All 65 sent before any answer: exactly one is refused, at once, not after a wait.
        creates = [
            {
                "request": "terminal/create",
                "params": {
                    "sessionId": agent.sid,
                    "command": "/bin/sh",
                    "args": ["-c", f"echo up-{i}; exec sleep 120"],
                },
            }
            for i in range(count + 1)
        ]
        [burst] = (await agent.run({"at_once": creates}, timeout=120)).values()
        refused = [i for i, a in enumerate(burst["result"]) if "error" in a]
        assert len(refused) == 1, burst
        assert "already holds 64 terminals" in error_of(burst["result"][refused[0]])
        answers = [a for i, a in enumerate(burst["result"]) if i != refused[0]]
        ids = [result_of(answers[i], "terminal/create")["terminalId"] for i in range(count)]
        assert len(set(ids)) == count
        more = await agent.run(request("terminal/create", agent.sid, command="/bin/sh", args=["-c", "true"]))
        assert "already holds 64 terminals" in error_of(more[0])
        echoed = [i for i in range(count + 1) if i != refused[0]]
        # Each terminal: its reaper (the command on its command line) and the command (sh, exec'd
        # into sleep); not the agent's reaper.
        terminal_process = re.compile(r"(?:reaper\.py \d+ -- |^)/bin/sh -c echo up-|^sleep 120 $")
        sidecar = agent.ed.client._server.pid
        started = {p for p in descendants(sidecar) if terminal_process.search(_cmdline(p))}
        assert len(started) == 2 * count
        outputs = await agent.run(
            *[request("terminal/output", agent.sid, terminalId=t) for t in ids], timeout=60
        )
        for i, tid in enumerate(ids):
            output = result_of(outputs[i], "terminal/output")
            assert output["exitStatus"] is None, tid
            assert output["output"] in ("", f"up-{echoed[i]}\n")
        released = await agent.run(
            *[request("terminal/release", agent.sid, terminalId=t) for t in ids], timeout=120
        )
        assert all(result_of(released[i], "terminal/release") == {} for i in range(count))
        left = {p for p in started if alive(p)}
        assert not left, f"alive right after terminal/release answered: {sorted(left)}"
        # Room again.
        tid = await agent.create("/bin/sh", "-c", "exit 0")
        assert await agent.call("terminal/wait_for_exit", tid) == {"exitCode": 0, "signal": None}


def _peak_rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        return int(fh.read().split("VmHWM:")[1].split()[0])


@pytest.mark.slow
@pytest.mark.load
async def test_a_100_mb_stream_keeps_memory_bounded(workspace: Path, state_dir: Path, tmp_path: Path) -> None:
    """100 MB through a terminal shown in a tool call: the sidecar keeps the last 1 MiB (the default
    limit) and the transcript a bounded part; its peak RSS grows by less than 60 MiB."""
    from tests.faults.figures import FIGURES

    async with agent_session(workspace, state_dir, tmp_path) as agent:
        pid = agent.ed.client._server.pid
        before = _peak_rss_kib(pid)
        code = (
            "import sys\nline = ('é' * 49 + '\\n').encode() * 1024\n"
            "for _ in range(1000): sys.stdout.buffer.write(line)"
        )
        tid = await agent.create(PY, "-c", code)
        show = {
            "sessionUpdate": "tool_call",
            "toolCallId": "flood",
            "title": "flood",
            "kind": "execute",
            "status": "in_progress",
            "content": [{"type": "terminal", "terminalId": tid}],
        }
        await agent.run({"update": show})
        status = await agent.call("terminal/wait_for_exit", tid)
        assert status == {"exitCode": 0, "signal": None}
        output = await agent.call("terminal/output", tid)
        assert output["truncated"] is True
        size = len(output["output"].encode())
        assert 1024 * 1024 - 4 <= size <= 1024 * 1024
        assert set(output["output"]) == {"é", "\n"}
        await agent.call("terminal/release", tid)
        grown_mib = (_peak_rss_kib(pid) - before) / 1024
        FIGURES["terminals: peak RSS growth over a 100 MB stream (MiB)"] = round(grown_mib)
        assert grown_mib < 60, f"the sidecar's peak RSS grew by {grown_mib:.1f} MiB"
        transcript = await agent.ed.command("acp.session.transcript")
        text = Path(transcript["uri"].removeprefix("file://")).read_text()
        assert "exited with code 0" in text
        # The scripted agent's own RESULT chunks hold the output JSON-escaped ("\u00e9"): every "é"
        # in the document is from the terminal's blocks, bounded (16 000 + a 2 000-character tail).
        assert 16_000 <= text.count("é") < 18_000 + 100
        assert "bytes of output not shown here" in text


async def _transcript_text(ed: Editor) -> str:
    transcript = await ed.command("acp.session.transcript")
    return Path(transcript["uri"].removeprefix("file://")).read_text()


@pytest.mark.parametrize("profile", ["helix", "neovim"])
async def test_demo_agent_runs_a_terminal_shown_in_the_transcript(
    profile: str, workspace: Path, state_dir: Path
) -> None:
    """End to end over a real LSP pipe: the demo agent asks permission, runs its command in the
    sidecar's terminal and embeds it in the tool call; the transcript shows the output, fenced,
    and how it ended; the editor gets acp/terminal notifications."""
    async with open_editor(profile, workspace, state_dir) as ed:
        await ed.command("acp.session.new")
        admitted, end = await ed.prompt_and_wait("#terminal", timeout=60)
        assert end["stopReason"] == "end_turn"
        said = ed.text_of(admitted["turnId"])
        assert "ended with code 0; its last line was “demo terminal line 4 ✓” (5 lines)" in said
        events = ed.of("acp/terminal")
        assert {e["state"] for e in events} >= {"running", "exited", "released"}
        shown = [e for e in events if e.get("toolCallId")]
        assert shown and shown[0]["command"].endswith(shown[0]["command"].split(" ", 1)[-1])
        assert any(e.get("lastLine") == "demo terminal line 4 ✓" for e in shown)
        text = await _transcript_text(ed)
        assert "**Terminal:** `" in text
        body = text.split("```text\n", 1)[1]
        assert body.startswith("demo terminal line 0 ✓\n")
        assert "demo terminal line 4 ✓" in text
        assert "exited with code 0." in text
        if profile == "helix":  # its capabilities declare work-done progress
            done = await ended_progress(ed, f"acp-{admitted['turnId']}-", 1)
            reports = [v.message for v in done[0] if v.kind == "report"]
            assert any(str(m).startswith("$ ") and "demo terminal line" in str(m) for m in reports), reports
        assert not [p for p in descendants(ed.client._server.pid) if "demo terminal" in _cmdline(p)]


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


async def test_the_editor_kills_a_terminal(workspace: Path, state_dir: Path) -> None:
    """`#terminal=slow` runs two minutes; the transcript's code action "Kill terminal" (the
    command acp.terminal.kill) ends it: the demo agent's tool call fails, it says the signal."""
    async with open_editor("helix", workspace, state_dir) as ed:
        sid = (await ed.command("acp.session.new"))["sessionId"]
        admitted = await ed.command("acp.prompt", "#terminal=slow")
        # Fed every 0.5 s: the last line of each feed (two or three lines arrive between feeds).
        shown = await ed.wait_for(
            "acp/terminal", lambda e: str(e.get("lastLine")).startswith("slow terminal line"), timeout=30
        )
        assert shown["state"] == "running" and shown["toolCallId"]
        uri = (await ed.command("acp.session.transcript"))["uri"]
        actions = await ed.code_actions(uri)
        kills = [a for a in actions if a.title.startswith("Kill terminal: ")]
        assert len(kills) == 1 and kills[0].command is not None
        assert kills[0].command.command == "acp.terminal.kill"
        assert "\n" not in kills[0].title and "import time for i" in kills[0].title  # one line
        result = await ed.command("acp.terminal.kill", *kills[0].command.arguments or [])
        assert len(result["killed"]) == 1
        end = await ed.wait_turn_end(admitted["turnId"], timeout=30)
        assert end["stopReason"] == "end_turn"
        assert "ended with signal SIGTERM" in ed.text_of(admitted["turnId"])
        text = await _transcript_text(ed)
        assert "slow terminal line 0\n" in text and "was ended by SIGTERM." in text
        assert not [a for a in await ed.code_actions(uri) if a.title.startswith("Kill terminal")]
        # Nothing left to kill: an error that says so; by session: an empty list.
        assert await ed.command("acp.terminal.kill", {"sessionId": sid}) == {"killed": []}
        err = await expect_error(ed, "acp.terminal.kill", "term-1")
        assert "no running terminal" in err.message


async def test_cancelling_the_turn_ends_its_terminal(workspace: Path, state_dir: Path) -> None:
    """acp.cancel while the demo agent waits for its command: the sidecar kills it, the agent
    releases it, the turn ends cancelled and the command's process is gone."""
    async with open_editor("helix", workspace, state_dir) as ed:
        await ed.command("acp.session.new")
        admitted = await ed.command("acp.prompt", "#terminal=slow")
        await ed.wait_for(
            "acp/terminal", lambda e: str(e.get("lastLine")).startswith("slow terminal line"), timeout=30
        )
        running = [p for p in descendants(ed.client._server.pid) if "slow terminal line" in _cmdline(p)]
        assert running
        assert (await ed.command("acp.cancel"))["cancelled"] is True
        end = await ed.wait_turn_end(admitted["turnId"], timeout=30)
        assert end["stopReason"] == "cancelled"
        await ed.wait_for("acp/terminal", lambda e: e["state"] == "released", timeout=20)
        assert not await asyncio.to_thread(wait_gone, set(running), 10)
