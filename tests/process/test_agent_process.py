"""The agent process behind its reaper: no code between fork and exec, statuses relayed, nothing left."""

from __future__ import annotations

import asyncio
import errno
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sidecar.acp.process import AgentProcess
from tests.procs import alive, descendants, wait_gone

FORKING = Path(__file__).resolve().parents[1] / "agents" / "forking_agent.py"


def _py(code: str) -> list[str]:
    return [sys.executable, "-c", code]


async def test_no_code_runs_between_fork_and_exec(monkeypatch: pytest.MonkeyPatch) -> None:
    """preexec_fn runs Python in the forked child: unsafe once any thread runs (the title store's does)."""
    seen: list[dict[str, Any]] = []
    real_init = subprocess.Popen.__init__

    def recording_init(self: subprocess.Popen[bytes], *args: Any, **kwargs: Any) -> None:
        seen.append(kwargs)
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(subprocess.Popen, "__init__", recording_init)
    proc = AgentProcess(_py("import sys; sys.stdin.read()"))
    await proc.start()
    try:
        assert seen and all(kw.get("preexec_fn") is None for kw in seen), seen
        assert seen[0].get("start_new_session") is True
        assert proc.agent_pid is not None and proc.agent_pid != proc.pid
        assert os.getpgid(proc.agent_pid) == proc.pid, "the agent runs in the group the reaper leads"
    finally:
        assert await proc.stop(grace=5) == 0


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("raise SystemExit(3)", 3),
        ("import os; os.kill(os.getpid(), 15)", -15),
        ("import os; os.kill(os.getpid(), 9)", -9),  # what the OOM killer does: no handler to reset
    ],
)
async def test_exit_status_is_the_agents(code: str, expected: int) -> None:
    proc = AgentProcess(_py(code))
    await proc.start()
    async with asyncio.timeout(20):
        assert await proc.wait() == expected
    await proc.stop()


async def test_a_missing_command_is_an_os_error() -> None:
    proc = AgentProcess(["/nonexistent/agent-binary", "--acp"])
    with pytest.raises(OSError) as info:
        await proc.start()
    assert info.value.errno == errno.ENOENT and info.value.strerror
    if proc.pid is not None:
        assert proc.returncode is not None, "the reaper is gone too"


async def test_stop_and_kill_now_leave_no_helper(tmp_path: Path) -> None:
    for how in ("stop", "kill_now"):
        pids_file = tmp_path / f"helpers-{how}"
        pids_file.write_text("")
        proc = AgentProcess(
            [sys.executable, str(FORKING)], env={**os.environ, "FORKING_AGENT_PIDS": str(pids_file)}
        )
        await proc.start()
        assert proc.pid is not None
        async with asyncio.timeout(30):
            while "done" not in pids_file.read_text():
                await asyncio.sleep(0.05)
        helpers = {int(p) for p in pids_file.read_text().split() if p.isdigit()}
        everything = helpers | descendants(proc.pid) | {proc.pid}
        try:
            if how == "stop":
                async with asyncio.timeout(20):
                    await proc.stop(grace=0.5, term_grace=1)
            else:
                proc.kill_now()
                async with asyncio.timeout(20):
                    await proc.wait()
            assert not wait_gone(everything, 10), f"{how} left helpers alive"
        finally:
            for pid in everything:
                if alive(pid):
                    os.kill(pid, signal.SIGKILL)
