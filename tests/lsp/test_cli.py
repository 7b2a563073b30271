"""The command line: --version, --help, agent precedence, --log-file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from sidecar import __version__
from tests.lsp.editor import SIDECAR, Editor, open_editor

SCRIPTED = Path(__file__).resolve().parents[1] / "agents" / "scripted_agent.py"
SDK = Path(__file__).resolve().parents[1] / "agents" / "sdk_agent.py"


def test_version_and_help() -> None:
    out = subprocess.run([SIDECAR, "--version"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0 and out.stdout.strip() == f"acp-sidecar {__version__}"
    out = subprocess.run([SIDECAR, "--help"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0
    for flag in ("--agent", "--state-dir", "--log-file", "--tcp"):
        assert flag in out.stdout
    out = subprocess.run([SIDECAR, "--bogus"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 2 and "--bogus" in out.stderr


async def started(ed: Editor) -> Any:
    """The status once the agent ran: agents start on their first use (a new session)."""
    await ed.command("acp.session.new")
    return await ed.command("acp.status")


async def test_agent_precedence(workspace: Path, state_dir: Path) -> None:
    scripted = f"{sys.executable} {SCRIPTED}"
    sdk = [sys.executable, str(SDK)]
    # The environment variable alone.
    async with open_editor("vscode", workspace, state_dir, env={"ACP_SIDECAR_AGENT": scripted}) as ed:
        assert (await started(ed))["agent"]["name"] == "scripted-agent"
    # initializationOptions beat the environment.
    options = {"agent": {"command": sdk}}
    async with open_editor(
        "vscode", workspace, state_dir, env={"ACP_SIDECAR_AGENT": scripted}, init_options=options
    ) as ed:
        status = await started(ed)
        assert status["agent"]["name"] not in ("scripted-agent", "acp-sidecar-demo")
    # --agent beats both.
    async with open_editor(
        "vscode",
        workspace,
        state_dir,
        env={"ACP_SIDECAR_AGENT": " ".join(sdk)},
        init_options={"agent": {"command": sdk}},
        extra_args=["--agent", scripted],
    ) as ed:
        assert (await started(ed))["agent"]["name"] == "scripted-agent"
    # Nothing configured: the embedded demo agent (agentInfo.name, and its title for display).
    async with open_editor("vscode", workspace, state_dir) as ed:
        agent = (await started(ed))["agent"]
        assert (agent["name"], agent["title"]) == ("acp-sidecar-demo", "acp-sidecar demo agent")


async def test_log_file(workspace: Path, state_dir: Path, tmp_path: Path) -> None:
    log = tmp_path / "logs" / "sidecar.log"
    async with open_editor("vscode", workspace, state_dir, extra_args=["--log-file", str(log)]) as ed:
        await ed.command("acp.session.new")
        await ed.prompt_and_wait("#garbage #chunks=1")
    text = log.read_text()
    assert "invalid JSON" in text
    assert "Sending data" not in text, "pygls' message bodies (prompts included) stay out of the log"


async def test_stdio_flag_is_accepted(workspace: Path, state_dir: Path) -> None:
    # vscode-languageclient appends --stdio to the server's command line.
    async with open_editor("vscode", workspace, state_dir, extra_args=["--stdio"]) as ed:
        assert (await ed.command("acp.status"))["state"] in ("idle", "starting")
