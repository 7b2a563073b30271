"""Production ACP agents from the npm registry, pinned, for the tests in tests/production.

Each agent is installed with npm into its own directory `CACHE/agents/NAME-VERSION/` (written under
a temporary name and renamed when complete, so an interrupted install is never taken for a done
one). They run on the machine's node (20 or newer). `problem()` starts each one and asks it an ACP
`initialize`, offline, with a private HOME.
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

NAME = "agents"
MIN_NODE_MAJOR = 20
START_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Agent:
    name: str  # short name used by the tests
    package: str
    version: str
    binary: str  # in node_modules/.bin
    args: tuple[str, ...] = ()  # to speak ACP on stdio

    def home(self, cache: Path) -> Path:
        return cache / "agents" / f"{self.name}-{self.version}"

    def command(self, cache: Path) -> list[str]:
        return [str(self.home(cache) / "node_modules" / ".bin" / self.binary), *self.args]


AGENTS = (
    Agent("gemini", "@google/gemini-cli", "0.61.0", "gemini", ("--acp",)),
    Agent("codex", "@zed-industries/codex-acp", "0.16.0", "codex-acp"),
    Agent("claude", "@zed-industries/claude-agent-acp", "0.23.1", "claude-agent-acp"),
)
BY_NAME = {agent.name: agent for agent in AGENTS}


def _node_problem() -> str | None:
    if shutil.which("node") is None or shutil.which("npm") is None:
        return "node and npm are missing: apt-get install nodejs npm (node 20 or newer)"
    out = subprocess.run(["node", "--version"], capture_output=True, text=True, check=False).stdout
    major = int(out.strip().lstrip("v").split(".")[0] or 0)
    return None if major >= MIN_NODE_MAJOR else f"node {out.strip()} is too old: the agents need node 20+"


def installed_version(agent: Agent, cache: Path) -> str | None:
    manifest = agent.home(cache) / "node_modules" / agent.package / "package.json"
    try:
        return str(json.loads(manifest.read_text())["version"])
    except (OSError, ValueError, KeyError):
        return None


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
    request = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}
    with tempfile.TemporaryDirectory(prefix=f"acp-agent-{agent.name}-") as tmp:
        home = Path(tmp)
        (home / ".codex").mkdir()
        env = offline_env(home)
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


def problem(cache: Path) -> str | None:
    node = _node_problem()
    if node:
        return node
    missing = [f"{a.package}@{a.version}" for a in AGENTS if installed_version(a, cache) != a.version]
    if missing:
        return f"not installed in {cache / 'agents'}: {', '.join(missing)}; {SETUP_HINT}"
    problems = [p for a in AGENTS if (p := initialize_problem(a, cache))]
    return "; ".join(problems) or None


def ensure(cache: Path) -> None:
    node = _node_problem()
    if node:
        raise ProvisionError(node)
    for agent in AGENTS:
        if installed_version(agent, cache) == agent.version:
            continue
        target = agent.home(cache)
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
        spec = f"{agent.package}@{agent.version}"
        done = subprocess.run(
            ["npm", "install", "--prefix", str(partial), "--no-audit", "--no-fund", "--save-exact", spec],
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
