"""How to run each production agent offline against the mock model, through the real sidecar.

Every agent gets a private HOME (its config, sessions, caches), its provider pointed at the mock,
and proxy variables pointed at the mock too, so that any outside host it reaches for is refused at
once instead of hanging. `IS_SANDBOX` (set to `yes` on these machines) must not reach
claude-agent-acp: it then exits when run as root; the tests remove it from their environment.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.lsp.editor import Editor, open_editor
from tests.procs import descendants, wait_gone
from tests.production.mock_model import MockModel
from tools.provision import SETUP_HINT, cache_dir
from tools.provision.agents import BY_NAME, installed_version, private_dirs

AGENT_NAMES = ("gemini", "codex", "claude")
PROFILE = "neovim"
# The option title to click in the permission dialog, per agent.
ALLOW_TITLE = {"gemini": "Allow", "codex": "Yes, proceed", "claude": "Allow"}
# The optionId of each agent's reject_once option (chosen through a code action).
REJECT_OPTION = {"gemini": "cancel", "codex": "abort", "claude": "reject"}
# codex's reject_once option is "abort": it ends the whole turn `cancelled`, the model is not asked.
REJECT_ABORTS_TURN = frozenset({"codex"})
# Agents whose edit permission carries the tool call's diff (codex-acp runs a command here).
EDITS_WITH_DIFF = frozenset({"gemini", "claude"})
# After session/cancel, claude-agent-acp answers the next prompt with an empty end_turn at once;
# each reply then arrives one prompt late, or together with the next one, depending on timing.
LATE_REPLY_AFTER_CANCEL = frozenset({"claude"})
# Agents that offer session/list (acp.session.list with refresh reconciles with it).
LISTS_SESSIONS = frozenset({"codex", "claude"})
# Agents whose sessions can be loaded by a new sidecar (and a new agent process).
LOADS_AFTER_RESTART = frozenset({"codex", "claude"})
CODEX_MODEL = "gpt-5.4"  # a model codex knows: an unknown one makes it print a warning into the reply


def agent_command(name: str) -> list[str]:
    """The installed agent's command; fails the test (never skips) when it is not provisioned."""
    agent = BY_NAME[name]
    cache = cache_dir()
    found = installed_version(agent, cache)
    if found != agent.version:
        pytest.fail(
            f"{agent.package}@{agent.version} is not installed in {cache / 'agents'} "
            f"(found {found}): {SETUP_HINT}",
            pytrace=False,
        )
    return agent.command(cache)


def agent_env(name: str, mock: MockModel, home: Path) -> dict[str, str]:
    """What the agent needs in its environment (given through initializationOptions.agent.env)."""
    env = private_dirs(home)
    for proxy in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"):
        env[proxy] = mock.base_url
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    if name == "gemini":
        env.update(GOOGLE_GEMINI_BASE_URL=mock.base_url, GEMINI_API_KEY="mock-key")
    elif name == "codex":
        codex_home = Path(env["CODEX_HOME"])
        codex_home.mkdir(parents=True, exist_ok=True)  # codex refuses a CODEX_HOME that does not exist
        (codex_home / "config.toml").write_text(
            f'model = "{CODEX_MODEL}"\n'
            'model_provider = "mock"\n'
            "[model_providers.mock]\n"
            'name = "Mock model"\n'
            f'base_url = "{mock.base_url}/v1"\n'
            'env_key = "MOCK_MODEL_API_KEY"\n'
            'wire_api = "responses"\n'
        )
        env["MOCK_MODEL_API_KEY"] = "mock-key"
    elif name == "claude":
        env.update(
            ANTHROPIC_BASE_URL=mock.base_url,
            ANTHROPIC_API_KEY="mock-key",
            DISABLE_AUTOUPDATER="1",
        )
    return env


@dataclass
class Setup:
    """One agent's launch for a test: its mock, its private home, the sidecar's options."""

    name: str
    mock: MockModel
    home: Path
    workspace: Path
    state_dir: Path

    def options(self, **extra: Any) -> dict[str, Any]:
        command = agent_command(self.name)
        env = agent_env(self.name, self.mock, self.home)
        return {"agent": {"command": command, "env": env}, "transcript": {"showOnPrompt": False}, **extra}

    @contextlib.asynccontextmanager
    async def editor(self, **extra: Any) -> AsyncIterator[Editor]:
        """The sidecar with this agent, idle; on a normal exit it is shut down as an editor does,
        and every process it started (the agent and the agent's own children) must be gone."""
        async with open_editor(
            PROFILE, self.workspace, self.state_dir, init_options=self.options(**extra), wait_idle=True
        ) as editor:
            yield editor
            await shut_down_cleanly(editor)
        # Every request the agent made was one the mock knows (else the script missed a call).
        assert not self.mock.unknown, f"requests the mock model could not answer: {self.mock.unknown}"


async def shut_down_cleanly(editor: Editor) -> None:
    server = editor.client._server
    assert server is not None
    started = descendants(server.pid)
    assert started, "the agent should run as a child of the sidecar"
    async with asyncio.timeout(30):
        await editor.client.shutdown_session()
    assert server.returncode == 0, f"the sidecar exited with {server.returncode}"
    left = await asyncio.to_thread(wait_gone, started, 15.0)
    assert not left, f"processes left after shutdown: {_commands(left)}"
    # Already shut down: open_editor's teardown must not send `shutdown` to a closed pipe.
    editor.client.capabilities = None


def _commands(pids: set[int]) -> list[str]:
    found = []
    for pid in sorted(pids):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            command = "(gone)"
        found.append(f"{pid}: {command}")
    return found
