"""What the user learns when the agent fails: exit code, stderr, where the log is, the agent's
own details; and where the agent runs."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException

from tests.lsp.editor import open_editor
from tests.procs import descendants

ERRING = str(Path(__file__).resolve().parents[1] / "agents" / "erring_agent.py")


async def test_an_agent_that_exits_at_start_is_explained(workspace: Path, state_dir: Path) -> None:
    dies = "import sys; sys.stderr.write('fatal: GEMINI_API_KEY is not set\\n'); sys.exit(3)"
    options = {"agent": {"command": [sys.executable, "-c", dies]}}
    async with open_editor("neovim", workspace, state_dir, init_options=options, wait_idle=False) as ed:
        # Its first use starts it (agents start on first use): the command fails, and says why.
        with pytest.raises(JsonRpcException) as info:
            await ed.command("acp.session.new")
        message = info.value.message
        # The exit code, the agent's own last words, and where the rest of its stderr is.
        assert "GEMINI_API_KEY is not set" in message, message
        assert ":LspLog" in message, message
        status = await ed.wait_for("acp/status", lambda s: s["state"] == "error")
        assert "code 3" in status["text"]


async def test_the_agents_error_details_reach_the_message(workspace: Path, state_dir: Path) -> None:
    error = {
        "code": -32603,
        "message": "Internal error",
        "data": {"details": "No previous sessions found for this project."},
    }
    env = {"ERRING_AGENT_ERRORS": json.dumps({"session/new": error})}
    options = {"agent": {"command": [sys.executable, ERRING]}}
    async with open_editor("vscode", workspace, state_dir, init_options=options, env=env) as ed:
        with pytest.raises(JsonRpcException) as info:
            await ed.command("acp.session.new")
        assert "Internal error: No previous sessions found for this project." in info.value.message


async def test_a_failed_reconcile_at_start_is_logged(workspace: Path, state_dir: Path) -> None:
    error = {"code": -32603, "message": "Internal error", "data": {"details": "list is broken"}}
    env = {"ERRING_AGENT_ERRORS": json.dumps({"session/list": error})}
    options = {"agent": {"command": [sys.executable, ERRING]}}
    async with open_editor("vscode", workspace, state_dir, init_options=options, env=env) as ed:
        await ed.command("acp.session.new")  # the agent is up; its start-up reconcile has run
        for _ in range(200):
            logged = [
                m.message for m in ed.client.log_messages if "session/list at start failed" in m.message
            ]
            if logged:
                break
            await asyncio.sleep(0.05)
        assert logged and "list is broken" in logged[0], [m.message for m in ed.client.log_messages]


async def test_the_agent_runs_in_the_workspace_folder(workspace: Path, state_dir: Path) -> None:
    async with open_editor("vscode", workspace, state_dir) as ed:
        await ed.command("acp.session.new")
        server = ed.client._server
        assert server is not None
        cwds = {
            os.readlink(f"/proc/{pid}/cwd")
            for pid in descendants(server.pid)
            if b"sidecar.demo_agent" in Path(f"/proc/{pid}/cmdline").read_bytes()
        }
        assert cwds == {str(workspace)}, cwds
