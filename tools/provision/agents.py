"""Production ACP agents from the npm registry and PyPI, pinned, for the tests in tests/production.

Each agent is installed into its own directory `CACHE/agents/NAME-VERSION/`. An npm agent is written
under a temporary name and renamed when complete, so an interrupted install is never taken for a
done one; it runs on the machine's node (20 or newer), or on the cached Node 24
(tools/provision/vscode) when it needs a newer one. A PyPI agent gets a venv on the Python it needs
(3.12 or 3.13: found on PATH or under pyenv), created in place (a venv cannot be moved), and a
marker file written last says the install is complete. `problem()` starts each one and asks it an
ACP `initialize`, offline, with a private HOME.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from . import SETUP_HINT, ProvisionError
from .vscode import node_bin

NAME = "agents"
MIN_NODE_MAJOR = 20
START_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Agent:
    name: str  # short name used by the tests
    package: str
    version: str
    binary: str  # in node_modules/.bin, or a script under node_modules run with Node 24 (`node24`)
    args: tuple[str, ...] = ()  # to speak ACP on stdio
    node24: bool = False  # needs Node 22+: run on the cached Node 24, which is first on its PATH
    extras: tuple[str, ...] = ()  # more npm packages (name@version) installed beside it
    native: bool = False  # `binary` is an executable under node_modules, run as it is
    # A PyPI package, installed with pip into HOME/venv on this Python ("3.12"); `binary` is in the
    # venv's bin and `extras` are pip requirements installed after it (pins its own would break).
    python: str = ""
    # Variables it needs to start at all (a placeholder key), for the readiness probe.
    probe_env: tuple[tuple[str, str], ...] = ()

    def home(self, cache: Path) -> Path:
        return cache / "agents" / f"{self.name}-{self.version}"

    def command(self, cache: Path) -> list[str]:
        if self.python:
            return [str(self.home(cache) / "venv" / "bin" / self.binary), *self.args]
        if self.node24:
            return [str(node_bin(cache)), str(self.home(cache) / "node_modules" / self.binary), *self.args]
        if self.native:
            return [str(self.home(cache) / "node_modules" / self.binary), *self.args]
        return [str(self.home(cache) / "node_modules" / ".bin" / self.binary), *self.args]

    def path_env(self, cache: Path) -> dict[str, str]:
        """PATH for an agent on Node 24: some start `node` themselves."""
        if not self.node24:
            return {}
        # Its own node_modules/.bin too: pi-acp starts `pi` from PATH.
        dirs = (node_bin(cache).parent, self.home(cache) / "node_modules" / ".bin")
        return {"PATH": os.pathsep.join([*map(str, dirs), os.environ.get("PATH", "")])}


AGENTS = (
    Agent("gemini", "@google/gemini-cli", "0.61.0", "gemini", ("--acp",)),
    Agent("codex", "@zed-industries/codex-acp", "0.16.0", "codex-acp"),
    Agent("claude", "@zed-industries/claude-agent-acp", "0.23.1", "claude-agent-acp"),
    # Issue 27: more agents, in /work/shared/PRODUCTION-AGENTS.md's order of cost.
    Agent(
        "qwen",
        "@qwen-code/qwen-code",
        "0.24.4",
        "@qwen-code/qwen-code/cli-entry.js",
        ("--acp", "--auth-type", "gemini", "-m", "gemini-2.5-pro"),
        node24=True,
    ),
    Agent("claude-code", "@zed-industries/claude-code-acp", "0.16.2", "claude-code-acp"),
    # pi-acp drives `pi --mode rpc`; the old @mariozechner/pi-coding-agent makes session/new hang.
    Agent(
        "pi",
        "pi-acp",
        "0.0.34",
        "pi-acp/dist/index.js",
        node24=True,
        extras=("@earendil-works/pi-coding-agent@1.6.0",),
    ),
    # The platform binary itself: the meta package picks it in a postinstall npm does not run here.
    Agent(
        "opencode",
        "opencode-ai",
        "1.18.33",
        "opencode-linux-x64/bin/opencode",
        ("acp", "--pure"),
        native=True,
    ),
    # OpenCode's fork; its meta package @kilocode/cli has no matching platform package.
    Agent(
        "kilo", "@kilocode/cli-linux-x64", "7.7.9", "@kilocode/cli-linux-x64/bin/kilo", ("acp",), native=True
    ),
    # Its own model mode (BYOK: COPILOT_PROVIDER_*): no GitHub login.
    Agent(
        "copilot", "@github/copilot", "1.0.102", "@github/copilot-linux-x64/copilot", ("--acp",), native=True
    ),
    # From PyPI, each in a venv on the Python it needs. Vibe 3.0 needs Python 3.14 or a certifi
    # the index does not serve.
    Agent("vibe", "mistral-vibe", "2.26.1", "vibe-acp", python="3.12"),
    # Without [cli] it exits at start ("missing: rich").
    Agent("agentao", "agentao[cli]", "0.5.17", "agentao", ("--acp",), python="3.12"),
    # Factory Droid: the platform package (the 0.225.1 meta package has no platform binaries).
    Agent(
        "droid",
        "@factory/cli-linux-x64",
        "0.225.2",
        "@factory/cli-linux-x64/bin/droid",
        ("exec", "--output-format", "acp"),
        native=True,
    ),
    # Cline: its script execs the bundled binary of @cline/cli-linux-x64.
    Agent("cline", "cline", "3.0.65", "cline", ("--acp",)),
    # Kimi CLI: 1.49.0 on purpose (1.52.0 is a deprecation gate that runs a remote install script).
    Agent("kimi", "kimi-cli", "1.49.0", "kimi", ("acp",), python="3.13"),
    # fast-agent on a generic OpenAI-compatible model (GENERIC_BASE_URL); without a model it exits.
    Agent(
        "fast-agent",
        "fast-agent-mcp",
        "0.10.48",
        "fast-agent-acp",
        ("--model", "generic.mock-model"),
        python="3.13",
    ),
    # The Python port of claude-code-acp (its claude-agent-sdk wheel bundles Claude Code); the
    # newest ACP SDK breaks it at import, so the SDK is pinned after it.
    Agent(
        "claude-code-py",
        "claude-code-acp",
        "0.5.1",
        "claude-code-acp",
        python="3.12",
        extras=("agent-client-protocol==0.8.1",),
    ),
    # Hermes Agent: the [acp] extra brings its ACP server (and pins agent-client-protocol 0.9.0).
    Agent("hermes", "hermes-agent[acp]", "0.19.0", "hermes-acp", python="3.12"),
    # OpenHands CLI: its LLM settings come from ~/.openhands/agent_settings.json (env overrides are
    # ignored in ACP mode); the tests write that file with its own store.
    Agent("openhands", "openhands", "1.16.0", "openhands", ("acp",), python="3.12"),
    # agentpool (partially offline): the pydantic-ai it resolves lacks pydantic_ai.builtin_tools.
    Agent(
        "agentpool",
        "agentpool",
        "2.9.18",
        "agentpool",
        ("serve-acp",),
        python="3.13",
        extras=("pydantic-ai-slim[openai,google,anthropic,mistral,retries]<2",),
        probe_env=(("ANTHROPIC_API_KEY", "probe-key"),),  # without a key it exits at start
    ),
    # Auggie (partially offline: prompts need Augment's own backend).
    Agent(
        "auggie", "@augmentcode/auggie", "0.36.0", "@augmentcode/auggie/augment.mjs", ("--acp",), node24=True
    ),
)
BY_NAME = {agent.name: agent for agent in AGENTS}


def _node_problem() -> str | None:
    if shutil.which("node") is None or shutil.which("npm") is None:
        return "node and npm are missing: apt-get install nodejs npm (node 20 or newer)"
    out = subprocess.run(["node", "--version"], capture_output=True, text=True, check=False).stdout
    major = int(out.strip().lstrip("v").split(".")[0] or 0)
    return None if major >= MIN_NODE_MAJOR else f"node {out.strip()} is too old: the agents need node 20+"


def _package_version(root: Path, package: str) -> str | None:
    try:
        return str(json.loads((root / "node_modules" / package / "package.json").read_text())["version"])
    except (OSError, ValueError, KeyError):
        return None


def _python_marker(agent: Agent, cache: Path) -> Path:
    return agent.home(cache) / "installed.json"


def _python_specs(agent: Agent) -> list[str]:
    return [f"{agent.package}=={agent.version}", *agent.extras]


def installed_version(agent: Agent, cache: Path) -> str | None:
    """The agent's installed version; None when it, or one of its extras at its pinned version, is missing."""
    if agent.python:
        try:
            marker = json.loads(_python_marker(agent, cache).read_text())
        except (OSError, ValueError):
            return None
        return agent.version if marker == {"python": agent.python, "specs": _python_specs(agent)} else None
    for extra in agent.extras:
        package, _, version = extra.rpartition("@")
        if _package_version(agent.home(cache), package) != version:
            return None
    return _package_version(agent.home(cache), agent.package)


def private_dirs(home: Path) -> dict[str, str]:
    """Environment variables that keep an agent's config, sessions and caches under `home`."""
    return {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "CODEX_HOME": str(home / ".codex"),
    }


def offline_env(home: Path) -> dict[str, str]:
    """The environment to start an agent in: private dirs under `home`, no sandbox flag.

    `IS_SANDBOX=yes` (set on these machines) makes claude-agent-acp exit when run as root.
    """
    env = {k: v for k, v in os.environ.items() if k != "IS_SANDBOX"}
    env.update(private_dirs(home), NO_UPDATE_NOTIFIER="1")
    return env


def initialize_problem(agent: Agent, cache: Path) -> str | None:
    """Start the agent and ask ACP `initialize`; None when it answers."""
    # Agentao refuses an `initialize` without clientCapabilities (-32602), though the schema has a default.
    params = {"protocolVersion": 1, "clientCapabilities": {}}
    request = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
    with tempfile.TemporaryDirectory(prefix=f"acp-agent-{agent.name}-") as tmp:
        home = Path(tmp)
        (home / ".codex").mkdir()
        env = offline_env(home)
        env.update(agent.path_env(cache), **dict(agent.probe_env))
        # Nothing outside may be reached: a closed local port makes any attempt fail at once.
        env.update(HTTPS_PROXY="http://127.0.0.1:9", HTTP_PROXY="http://127.0.0.1:9")
        try:
            proc = subprocess.Popen(
                agent.command(cache),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=env,
                cwd=tmp,
                start_new_session=True,
            )
        except OSError as exc:
            return f"{agent.name}: cannot start {agent.command(cache)[0]}: {exc}"
        try:
            return _answer_problem(agent, proc, json.dumps(request).encode() + b"\n")
        finally:
            # Some agents outlive a closed stdin: end the whole group we started.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _answer_problem(agent: Agent, proc: subprocess.Popen[bytes], request: bytes) -> str | None:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(request)
    proc.stdin.flush()
    deadline = time.monotonic() + START_TIMEOUT_S
    while (left := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select([proc.stdout], [], [], left)
        if not ready:
            break
        line = proc.stdout.readline()
        if not line:
            return f"{agent.name}: exited (code {proc.wait()}) without answering ACP initialize"
        with contextlib.suppress(ValueError):
            message = json.loads(line)
            if isinstance(message, dict) and message.get("id") == 1 and "result" in message:
                return None
    return f"{agent.name}: no answer to ACP initialize within {START_TIMEOUT_S:.0f} s"


def find_python(version: str) -> Path | None:
    """An interpreter of Python `version` ("3.12") that runs: pyenv's newest, else one on PATH
    (a pyenv shim on PATH may name a version that is not selected, and then fails)."""
    root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")

    def patch_level(path: Path) -> int:
        last = path.parents[1].name.rpartition(".")[2]
        return int(last) if last.isdigit() else -1

    candidates = sorted(root.glob(f"versions/{version}.*/bin/python{version}"), key=patch_level, reverse=True)
    on_path = shutil.which(f"python{version}")
    candidates += [Path(on_path)] if on_path else []
    for candidate in candidates:
        check = [str(candidate), "-c", "import sys, venv; print('%d.%d' % sys.version_info[:2])"]
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            ran = subprocess.run(check, capture_output=True, text=True, check=False, timeout=30)
            if ran.returncode == 0 and ran.stdout.strip() == version:
                return candidate
    return None


def _python_problem() -> str | None:
    missing = sorted({a.python for a in AGENTS if a.python and find_python(a.python) is None})
    if not missing:
        return None
    return (
        f"Python {', '.join(missing)} is missing (neither python3.x on PATH nor under pyenv): "
        f"the PyPI agents need it (pyenv install {missing[0]})"
    )


def problem(cache: Path) -> str | None:
    python = _python_problem()
    if python:
        return python
    node = _node_problem()
    if node:
        return node
    if any(a.node24 for a in AGENTS) and not node_bin(cache).is_file():
        return f"Node 24 is missing in {node_bin(cache).parent}: {SETUP_HINT} (its vscode step)"
    missing = [f"{a.package}@{a.version}" for a in AGENTS if installed_version(a, cache) != a.version]
    if missing:
        return f"not installed in {cache / 'agents'}: {', '.join(missing)}; {SETUP_HINT}"
    problems = [p for a in AGENTS if (p := initialize_problem(a, cache))]
    return "; ".join(problems) or None


def _install_python_agent(agent: Agent, cache: Path) -> None:
    python = find_python(agent.python)
    if python is None:
        raise ProvisionError(_python_problem() or f"Python {agent.python} is missing")
    target = agent.home(cache)
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    venv = target / "venv"
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    # The package, then the extras (pins that override what it resolved).
    steps = [[str(python), "-m", "venv", str(venv)], [*pip, _python_specs(agent)[0]]]
    steps += [[*pip, *agent.extras]] if agent.extras else []
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            shutil.rmtree(target, ignore_errors=True)
            reason = done.stderr.strip()[-800:]
            raise ProvisionError(f"{' '.join(step[-1:])} failed (is PyPI reachable?): {reason}")
    _python_marker(agent, cache).write_text(
        json.dumps({"python": agent.python, "specs": _python_specs(agent)})
    )


def ensure(cache: Path) -> None:
    node = _node_problem()
    if node:
        raise ProvisionError(node)
    for agent in AGENTS:
        if installed_version(agent, cache) == agent.version:
            continue
        if agent.python:
            started = time.monotonic()
            _install_python_agent(agent, cache)
            took = time.monotonic() - started
            print(f"provision agents: {agent.package}=={agent.version} installed in {took:.0f} s", flush=True)
            continue
        target = agent.home(cache)
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
        spec = f"{agent.package}@{agent.version}"
        started = time.monotonic()
        npm = ["npm", "install", "--prefix", str(partial), "--no-audit", "--no-fund", "--save-exact"]
        done = subprocess.run(
            [*npm, spec, *agent.extras],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            shutil.rmtree(partial, ignore_errors=True)
            reason = done.stderr.strip()[-800:]
            raise ProvisionError(f"npm install {spec} failed (is the npm registry reachable?): {reason}")
        shutil.rmtree(target, ignore_errors=True)
        partial.rename(target)
        # CI's time budget: each agent's install time is worth seeing.
        print(f"provision agents: {spec} installed in {time.monotonic() - started:.0f} s", flush=True)
