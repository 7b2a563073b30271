"""How to run each production agent offline against the mock model, through the real sidecar.

Every agent gets a private HOME (its config, sessions, caches), its provider pointed at the mock,
and proxy variables pointed at the mock too, so that any outside host it reaches for is refused at
once instead of hanging. `IS_SANDBOX` (set to `yes` on these machines) must not reach
claude-agent-acp: it then exits when run as root; the tests remove it from their environment
(the old claude-code-acp and its Python port are the opposite: they get `IS_SANDBOX=1`). The
per-agent facts below are what the scenarios branch on; tests/production/matrix.py turns them
into docs/agents.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.lsp.editor import Editor, open_editor
from tests.procs import descendants, marked_processes, wait_gone
from tests.production.mock_model import MockModel
from tools.provision import SETUP_HINT, cache_dir
from tools.provision.agents import BY_NAME, installed_version, private_dirs

AGENT_NAMES = (
    "gemini",
    "codex",
    "claude",
    "qwen",
    "claude-code",
    "pi",
    "opencode",
    "kilo",
    "copilot",
    "vibe",
    "agentao",
    "droid",
    "kimi",
    "fast-agent",
    "claude-code-py",
    "cline",
    "hermes",
    "openhands",
)
PROFILE = "neovim"
# The option title to click in the permission dialog, per agent.
ALLOW_TITLE = {
    "gemini": "Allow",
    "codex": "Yes, proceed",
    "claude": "Allow",
    "qwen": "Allow",
    "claude-code": "Allow",
    "opencode": "Allow once",
    "kilo": "Allow once",
    "copilot": "Allow once",
    "vibe": "Allow once",
    "droid": "Allow",
    "cline": "Allow once",
    "kimi": "Approve once",
    "fast-agent": "Allow Once",
    "claude-code-py": "Allow",
    "hermes": "Allow edit",
    "openhands": "Yes, proceed",
}
# The optionId of each agent's reject_once option (chosen through a code action).
REJECT_OPTION = {
    "gemini": "cancel",
    "codex": "abort",
    "claude": "reject",
    "qwen": "cancel",
    "claude-code": "reject",
    "opencode": "reject",
    "kilo": "reject",
    "copilot": "reject_once",
    "vibe": "reject_once",
    "droid": "cancel",
    "cline": "reject_once",
    "kimi": "reject",
    "fast-agent": "reject_once",
    "claude-code-py": "reject",
    "hermes": "deny",
    "openhands": "reject",
}
# Agents that ask permission for reads too (Cline's auto_approve is off; fast-agent always asks).
ASKS_FOR_READS = frozenset({"cline", "fast-agent", "openhands"})
# Agents that never ask permission (they write the disk at once): the edit is checked without one.
# A tuple, not a set: tests are parametrized over it, and xdist workers must collect them in one order.
NEVER_ASKS = ("pi", "agentao")
ASKS_PERMISSION = tuple(name for name in AGENT_NAMES if name not in NEVER_ASKS)
# The mode to set before an edit, where the agent's first mode writes without asking.
ASKING_MODE = {"qwen": "default", "vibe": "ask"}
# Agents whose reject_once option ends the whole turn without asking the model again, and the stop
# reason they give: codex's "abort" (`cancelled`); qwen's "cancel", the "reject" of the old
# claude-code-acp, OpenCode and Kilo, Copilot's "Deny" and Droid's "No, cancel" (`end_turn`).
REJECT_ABORTS_TURN = {
    "codex": "cancelled",
    "qwen": "end_turn",
    "claude-code": "end_turn",
    "opencode": "end_turn",
    "kilo": "end_turn",
    "copilot": "end_turn",
    "droid": "end_turn",
    "kimi": "end_turn",  # its "reject" stops the turn (a rejection without feedback)
}
# What such an agent says in that turn, where it says something (else nothing).
REJECTED_TEXT = {"copilot": "Info: Operation cancelled by user"}
# Agents whose edit permission carries the tool call's diff (codex-acp runs a command here;
# claude-code-acp and Copilot send none).
EDITS_WITH_DIFF = frozenset({"gemini", "claude", "qwen", "opencode", "kilo", "kimi", "hermes"})
# Agents whose tool calls never report an end (no tool_call_update with a status), and why: the
# turn still ends, and the scenarios check the tool call is shown as the agent left it.
TOOL_CALLS_NEVER_END = {
    "hermes": "Hermes 0.19.0 builds its completed update from the call's arguments as the model sent "
    "them, a JSON string, where its ACP adapter expects an object: AttributeError, logged at debug, "
    "no update"
}
# Agents that start the model's text after a tool call with a blank line ("\n\n"), their own:
# the sidecar passes it on as sent.
TEXT_AFTER_TOOL_PREFIX = {"hermes": "\n\n"}
# After session/cancel, claude-agent-acp answers the next prompt with an empty end_turn at once;
# each reply then arrives one prompt late, or together with the next one, depending on timing.
LATE_REPLY_AFTER_CANCEL = frozenset({"claude"})
# After session/cancel, the Python claude-code-acp does not read the rest of the interrupted reply:
# the next turn shows that rest instead of its own reply, and each reply comes one prompt late.
STALE_REPLY_AFTER_CANCEL = frozenset({"claude-code-py"})
# After session/cancel, OpenHands lets its model call run to its end (it does not stream: the reply
# comes whole): the cancelled reply then shows at the start of the next turn, before that turn's own.
CANCELLED_REPLY_IN_NEXT_TURN = frozenset({"openhands"})
# Agents that send the model's text only once its message is complete (one chunk, not streamed):
# a slow reply shows nothing until it ends.
WHOLE_MESSAGES = frozenset({"droid", "openhands"})
# Agents whose tool calls carry no `kind` (Kimi: its read is titled "ReadFile: <name>", nothing more;
# the Python claude-code-acp: "Read <path>").
TOOL_CALLS_WITHOUT_KIND = frozenset({"kimi", "claude-code-py"})
# Agents that offer session/list (acp.session.list with refresh reconciles with it).
LISTS_SESSIONS = frozenset(
    {"codex", "claude", "qwen", "claude-code", "pi", "opencode", "kilo", "copilot", "vibe", "droid", "hermes"}
    | {"kimi", "fast-agent", "claude-code-py"}
)
# Agents that title a session themselves with session_info_update (fast-agent: its first
# prompt), which outranks the title of session/list.
TITLES_BY_UPDATE = frozenset({"fast-agent"})
# Agents that list sessions without titles (the Python claude-code-acp: the sessions of its
# process, ids and cwd only): the local fallback title stays.
LISTS_WITHOUT_TITLES = frozenset({"claude-code-py"})
# Left out of the reviewed-edit scenario, with why (docs/agents.md says it). OpenCode 1.18.33 and
# Kilo 7.7.9 were, until the sidecar kept the user's text for the whole tool call: they write
# their edit through the client and also to the disk themselves, in either order.
REVIEW_NOT_SETTLED: dict[str, str] = {}
# What an agent lists a session under when it is not the first prompt: OpenCode a title its model
# made (a side request: the mock's generic reply), Kilo its placeholder "New session - <date>",
# Droid a title its model made too.
LISTED_TITLE = {
    "opencode": "Mock title",
    "kilo": "New session - ",
    "droid": "Mock title",
    "hermes": "Mock title",
}
# Agents that title a session with a model request of their own made after its first turn has
# ended (Hermes: a background thread), and that title: until it arrives the session is listed under
# its first prompt. A rename asked before it arrives is overtaken by it, and the sidecar says so
# (`changed`): 3 of 4 runs here when the scenario renamed at once. The scenario waits for it first.
TITLES_AFTER_THE_TURN = {"hermes": "Mock title"}
# Agents that rename a session without a prompt, through their own method (the sidecar tries the
# standard `session/set_title` first), and confirm it with session_info_update: Mistral Vibe.
RENAMES_BY_METHOD = {"vibe": "_session/set_title"}
# Agents whose sessions can be loaded by a new sidecar (and a new agent process).
LOADS_AFTER_RESTART = frozenset(
    {
        "codex",
        "claude",
        "qwen",
        "claude-code",
        "pi",
        "opencode",
        "kilo",
        "copilot",
        "vibe",
        "agentao",
        "droid",
        "cline",
        "kimi",
        "fast-agent",
        "hermes",
        "openhands",
    }
)
# What an agent not in LOADS_AFTER_RESTART answers a new process's session/load (or resume) with:
# the Python claude-code-acp keeps its sessions in its process's memory only.
LOAD_REFUSAL = {"gemini": "No previous sessions", "claude-code-py": "Session not found"}
# Agents that start a daemon of their own which leaves the agent's process group (setsid) and
# outlives the agent: Cline's hub (`cline --cline-hub-daemon`, started with the first prompt; it
# ignores SIGTERM). A signal to the agent's group misses it; the sidecar's reaper, a child
# subreaper, still has it as a descendant and ends it. Tests that prompt check it ran, in its own
# session, and is gone after shutdown (found by the agent's HOME: it is no longer the agent's child).
DETACHED_DAEMON = {"cline": "--cline-hub-daemon"}
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


OPENCODE_SWITCHES = (
    "OPENCODE_DISABLE_MODELS_FETCH",
    "OPENCODE_DISABLE_AUTOUPDATE",
    "OPENCODE_DISABLE_LSP_DOWNLOAD",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS",
    "OPENCODE_DISABLE_SHARE",
)


def opencode_config(mock: MockModel) -> dict[str, Any]:
    """OpenCode on the mock over Anthropic Messages; "ask" makes it request permission for edits,
    with a diff (by default it edits without asking)."""
    model = {"name": "Mock", "tool_call": True}
    provider = {
        "npm": "@ai-sdk/anthropic",
        "name": "Mock",
        "options": {"baseURL": f"{mock.base_url}/v1", "apiKey": "mock-key"},
        "models": {"claude-sonnet-4-5": model},
    }
    return {
        "autoupdate": False,
        "share": "disabled",
        "model": "mock/claude-sonnet-4-5",
        "small_model": "mock/claude-sonnet-4-5",
        "permission": {"edit": "ask", "bash": "ask"},
        "provider": {"mock": provider},
    }


def agent_env(name: str, mock: MockModel, home: Path) -> dict[str, str]:
    """What the agent needs in its environment (given through initializationOptions.agent.env)."""
    env = private_dirs(home)
    env.update(BY_NAME[name].path_env(cache_dir()))
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
    elif name in ("claude", "claude-code", "claude-code-py"):
        env.update(
            ANTHROPIC_BASE_URL=mock.base_url,
            ANTHROPIC_API_KEY="mock-key",
            DISABLE_AUTOUPDATER="1",
        )
        if name in ("claude-code", "claude-code-py"):
            # As root, the old package's (and the port's) session/new fails without it (it refuses to
            # skip permissions).
            env["IS_SANDBOX"] = "1"
    elif name == "pi":
        agent_dir = home / ".pi" / "agent"
        agent_dir.mkdir(parents=True, exist_ok=True)
        provider = {
            "baseUrl": mock.base_url,
            "api": "anthropic-messages",
            "apiKey": "MOCK_API_KEY",  # the name of the variable holding the key
            "models": [{"id": "claude-sonnet-4-5", "name": "Mock"}],
        }
        (agent_dir / "models.json").write_text(json.dumps({"providers": {"mock": provider}}))
        # quietStartup: no "pi vX" banner chunk right after session/new (it may land in the first turn).
        defaults = {"defaultProvider": "mock", "defaultModel": "claude-sonnet-4-5", "quietStartup": True}
        (agent_dir / "settings.json").write_text(json.dumps(defaults))
        env["MOCK_API_KEY"] = "mock-key"
    elif name == "opencode":
        env.update(dict.fromkeys(OPENCODE_SWITCHES, "1"))
        env["OPENCODE_CONFIG_CONTENT"] = json.dumps(opencode_config(mock))
    elif name == "kilo":  # OpenCode's fork: the same settings under its own prefix
        switches = [s.replace("OPENCODE_", "KILO_") for s in OPENCODE_SWITCHES]
        extra = ("KILO_DISABLE_SESSION_INGEST", "KILO_DISABLE_PRESENCE", "KILO_DISABLE_CODEBASE_INDEXING")
        env.update(dict.fromkeys([*switches, *extra], "1"))
        env["KILO_CONFIG_CONTENT"] = json.dumps(opencode_config(mock))
    elif name == "copilot":
        env.update(
            COPILOT_PROVIDER_BASE_URL=f"{mock.base_url}/v1",
            COPILOT_PROVIDER_API_KEY="mock-key",
            COPILOT_MODEL="gpt-4.1",
        )
    elif name == "droid":
        # Air-gap mode (no Factory login) with a custom model over Anthropic Messages; its id is
        # `custom:<displayName>-<index>`.
        env.update(
            FACTORY_AIRGAP_ENABLED="1",
            DROID_DISABLE_AUTO_UPDATE="true",
            FACTORY_DROID_AUTO_UPDATE_ENABLED="false",
        )
        model = {
            "model": "claude-sonnet-4-5",
            "displayName": "Mock",
            "baseUrl": mock.base_url,
            "apiKey": "mock-key",
            "provider": "anthropic",
            "maxOutputTokens": 8192,
        }
        settings = home / ".factory" / "settings.json"
        settings.parent.mkdir(parents=True, exist_ok=True)
        settings.write_text(json.dumps({"model": "custom:Mock-0", "customModels": [model]}))
    elif name == "cline":
        # Its provider, written once per mock port by its own CLI; its ACP server also wants a key
        # in the environment before it starts a session (its authenticate methods are all OAuth).
        cline_auth(mock, env)
        env.update(CLINE_API_KEY="mock-key", CLINE_PROVIDER="openai-compatible")
    elif name == "qwen":
        env.update(GOOGLE_GEMINI_BASE_URL=mock.base_url, GEMINI_API_KEY="mock-key")
        settings = home / ".qwen" / "settings.json"
        settings.parent.mkdir(parents=True, exist_ok=True)
        # Without it, qwen sends telemetry to an outside host (refused by the proxy, but noisy).
        settings.write_text(
            '{"privacy":{"usageStatisticsEnabled":false},"telemetry":{"enabled":false},'
            '"general":{"enableAutoUpdate":false}}'
        )
    elif name == "vibe":
        vibe_home = home / ".vibe"
        vibe_home.mkdir(parents=True, exist_ok=True)
        # Anthropic style: Vibe appends /v1/messages to api_base itself.
        (vibe_home / "config.toml").write_text(
            'active_model = "mock"\n'
            "enable_telemetry = false\n"
            "enable_update_checks = false\n"
            "enable_auto_update = false\n"
            "[[providers]]\n"
            'name = "mock"\n'
            f'api_base = "{mock.base_url}"\n'
            'api_key_env_var = "MOCK_API_KEY"\n'
            'api_style = "anthropic"\n'
            "[[models]]\n"
            'name = "claude-sonnet-4-5"\n'
            'provider = "mock"\n'
            'alias = "mock"\n'
        )
        env.update(VIBE_HOME=str(vibe_home), MOCK_API_KEY="mock-key")
    elif name == "hermes":
        # Its own home (config, sessions); a custom OpenAI-compatible provider on the mock.
        hermes_home = home / ".hermes"
        hermes_home.mkdir(parents=True, exist_ok=True)
        (hermes_home / "config.yaml").write_text(
            "model:\n"
            "  provider: custom\n"
            f"  base_url: {mock.base_url}/v1\n"
            "  default: mock-model\n"
            "  api_key: mock-key\n"
        )
        env["HERMES_HOME"] = str(hermes_home)
    elif name == "agentao":
        env.update(
            LLM_PROVIDER="OPENAI",
            OPENAI_API_KEY="mock-key",
            OPENAI_BASE_URL=f"{mock.base_url}/v1",
            OPENAI_MODEL="mock-model",
        )
    elif name == "kimi":
        kimi_config(mock, home)
        env.update(KIMI_DISABLE_TELEMETRY="1", KIMI_CLI_NO_AUTO_UPDATE="1")
    elif name == "fast-agent":  # its `generic.*` models: any OpenAI-compatible Chat Completions
        env.update(GENERIC_BASE_URL=f"{mock.base_url}/v1", GENERIC_API_KEY="mock-key")
    elif name == "openhands":
        openhands_settings(mock, env)
        env.update(LITELLM_LOCAL_MODEL_COST_MAP="True", OPENHANDS_SUPPRESS_BANNER="1")
    elif name == "agentpool":  # its default agent: pydantic-ai on Anthropic Messages
        env.update(ANTHROPIC_BASE_URL=mock.base_url, ANTHROPIC_API_KEY="mock-key")
    elif name == "auggie":
        # A fake Augment session (no login): session/new works; its tenant is a closed local port,
        # since its prompts need Augment's own backend, which the mock does not imitate.
        session = {"accessToken": "mock-token", "tenantURL": "http://127.0.0.1:9/", "scopes": ["email"]}
        env.update(AUGMENT_SESSION_AUTH=json.dumps(session), AUGMENT_DISABLE_AUTO_UPDATE="1")
    return env


# OpenHands' own store writes its settings file (~/.openhands/agent_settings.json) from LLM_* variables.
_OPENHANDS_STORE = (
    "from openhands_cli.stores.agent_store import AgentStore, LLMEnvOverrides\n"
    "store = AgentStore()\n"
    "store.save(store._ensure_agent(None, LLMEnvOverrides.from_env(enabled=True)))\n"
)


def openhands_settings(mock: MockModel, env: dict[str, str]) -> None:
    """OpenHands CLI on the mock over Chat Completions (LiteLLM's `openai/` provider). In ACP mode it
    ignores its LLM_* overrides and reports itself authenticated only with a settings file, written
    here by its own store (bounded: it must not hang a test)."""
    python = Path(agent_command("openhands")[0]).with_name("python")
    llm = {"LLM_API_KEY": "mock-key", "LLM_MODEL": "openai/mock-model", "LLM_BASE_URL": f"{mock.base_url}/v1"}
    done = subprocess.run(
        [str(python), "-c", _OPENHANDS_STORE],
        env={**os.environ, **env, **llm},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, f"OpenHands settings failed: {done.stdout}{done.stderr}"


def kimi_config(mock: MockModel, home: Path) -> None:
    """Kimi CLI on the mock over Chat Completions (`openai_legacy`). Its ACP server wants a Kimi
    login token file even when the provider is a plain API key: a dummy one does."""
    kimi_home = home / ".kimi"
    (kimi_home / "credentials").mkdir(parents=True, exist_ok=True)
    (kimi_home / "config.toml").write_text(
        'default_model = "mock"\n'
        "[providers.mock]\n"
        'type = "openai_legacy"\n'
        f'base_url = "{mock.base_url}/v1"\n'
        'api_key = "mock-key"\n'
        "[models.mock]\n"
        'provider = "mock"\n'
        'model = "mock-model"\n'
        "max_context_size = 200000\n"
    )
    token = {
        "access_token": "mock-token",
        "refresh_token": "",
        "expires_at": 4102444800,
        "scope": "",
        "token_type": "Bearer",
        "expires_in": 0,
    }
    (kimi_home / "credentials" / "kimi-code.json").write_text(json.dumps(token))


def cline_auth(mock: MockModel, env: dict[str, str]) -> None:
    """`cline auth` for the mock, with the agent's private HOME (bounded: it must not hang a test)."""
    command = [*agent_command("cline")[:-1], "auth", "-p", "openai", "-k", "mock-key", "-m", "mock-model"]
    done = subprocess.run(
        [*command, "-b", f"{mock.base_url}/v1"],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, f"cline auth failed: {done.stdout}{done.stderr}"


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
            daemons = self.daemons()
            await shut_down_cleanly(editor, self.home)
            assert not daemons & marked_processes("HOME", str(self.home)), _commands(daemons)
        # Every request the agent made was one the mock knows (else the script missed a call).
        assert not self.mock.unknown, f"requests the mock model could not answer: {self.mock.unknown}"

    def daemons(self) -> set[int]:
        """The agent's detached daemon (DETACHED_DAEMON), which must be running once it was
        prompted: in a session of its own, so only the reaper can end it."""
        marker = DETACHED_DAEMON.get(self.name)
        if marker is None or not any(r.scenario for r in self.mock.requests):
            return set()
        mine = marked_processes("HOME", str(self.home))
        found = {pid for pid in mine if marker in _commands({pid})[0]}
        assert found, f"no {marker} process of {self.name}: {_commands(mine)}"
        assert all(os.getsid(pid) == pid for pid in found), _commands(found)
        return found


async def shut_down_cleanly(editor: Editor, home: Path | None = None) -> None:
    server = editor.client._server
    assert server is not None
    started = descendants(server.pid)
    assert started, "the agent should run as a child of the sidecar"
    async with asyncio.timeout(30):
        await editor.client.shutdown_session()
    assert server.returncode == 0, f"the sidecar exited with {server.returncode}"
    left = await asyncio.to_thread(wait_gone, started, 15.0)
    assert not left, f"processes left after shutdown: {_commands(left)}"
    if home is not None:
        # Daemons an agent detaches (re-parented to init) are found by the agent's private HOME.
        detached = await asyncio.to_thread(wait_gone, marked_processes("HOME", str(home)), 15.0)
        assert not detached, f"processes of the agent left after shutdown: {_commands(detached)}"
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
