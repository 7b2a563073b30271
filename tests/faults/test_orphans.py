"""No orphaned process: the agent's helpers die with it, even when the sidecar is killed with SIGKILL."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path

import pytest

from tests.faults.figures import FIGURES
from tests.lsp.editor import SIDECAR
from tests.procs import alive, descendants, wait_gone

pytestmark = pytest.mark.fault

FORKING = Path(__file__).resolve().parents[1] / "agents" / "forking_agent.py"


def _frame(obj: dict[str, object]) -> bytes:
    body = json.dumps(obj).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


async def _start(
    workspace: Path, state_dir: Path, pids_file: Path, stubborn: bool
) -> asyncio.subprocess.Process:
    env = dict(os.environ, ACP_SIDECAR_STATE_DIR=str(state_dir), FORKING_AGENT_PIDS=str(pids_file))
    env.pop("ACP_SIDECAR_AGENT", None)
    if stubborn:
        env.update(FORKING_AGENT_STUBBORN="1", ACP_SIDECAR_REQUEST_TIMEOUT_MS="2000")
    proc = await asyncio.create_subprocess_exec(
        SIDECAR,
        "--agent",
        f"{sys.executable} {FORKING}",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env=env,
        cwd=str(workspace),
    )
    assert proc.stdin is not None
    init = {"processId": None, "rootUri": workspace.as_uri(), "capabilities": {}}
    proc.stdin.write(_frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}))
    proc.stdin.write(_frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
    # Agents start on first use: a new session starts this one (and its helpers).
    new = {"command": "acp.session.new", "arguments": [{}]}
    proc.stdin.write(
        _frame({"jsonrpc": "2.0", "id": "new", "method": "workspace/executeCommand", "params": new})
    )
    await proc.stdin.drain()
    return proc


async def _helpers(pids_file: Path) -> set[int]:
    async with asyncio.timeout(30):
        while "done" not in pids_file.read_text():
            await asyncio.sleep(0.05)
    return {int(p) for p in pids_file.read_text().split() if p.isdigit()}


async def _stop(proc: asyncio.subprocess.Process, how: str) -> None:
    assert proc.stdin is not None
    if how == "sigkill":
        proc.send_signal(signal.SIGKILL)
    elif how == "sigterm":
        proc.send_signal(signal.SIGTERM)
    elif how == "editor gone":
        proc.stdin.close()
    else:  # shutdown, then exit
        proc.stdin.write(_frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown", "params": None}))
        proc.stdin.write(_frame({"jsonrpc": "2.0", "method": "exit", "params": None}))
        await proc.stdin.drain()


@pytest.mark.parametrize("agent", ["exits on EOF", "stuck for good"])
@pytest.mark.parametrize("how", ["sigkill", "sigterm", "editor gone", "shutdown"])
async def test_stubborn_helpers_die_with_the_sidecar(
    how: str, agent: str, workspace: Path, state_dir: Path, tmp_path: Path
) -> None:
    """Helpers that ignore SIGTERM (in the group, out of it, re-parented) and, in the second
    case, an agent that ignores SIGTERM and never reads stdin: nothing survives the sidecar."""
    pids_file = tmp_path / "helpers"
    pids_file.write_text("")
    proc = await _start(workspace, state_dir, pids_file, stubborn=agent == "stuck for good")
    everything: set[int] = set()
    try:
        helpers = await _helpers(pids_file)
        assert len(helpers) == 3 and all(alive(p) for p in helpers)
        everything = helpers | descendants(proc.pid)
        await _stop(proc, how)
        async with asyncio.timeout(20):
            await proc.wait()
        left = await asyncio.to_thread(wait_gone, everything, 15)
        FIGURES["processes: stubborn agent helpers started"] += len(helpers)
        FIGURES["processes: orphans left"] += len(left)
        assert not left, f"left alive after {how} ({agent}): {sorted(left)} of helpers {sorted(helpers)}"
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        for pid in everything:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
