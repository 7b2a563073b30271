"""A real VS Code for tests: code-server (VS Code 1.139) with the extension, driven in headless Chromium.

- `CodeServer`: private user-data, extensions, config and state directories,
  the .vsix installed with `--install-extension`, `acpSidecar.path` in the
  machine settings (it is machine-overridable), a workspace folder; its own
  process group, so stopping it leaves nothing behind.
- `Driver`: driver.js (playwright-core) as a subprocess, one JSON request per line.
- `Workbench`: what a test does in the workbench (palette, chat view,
  notifications, status bar); every failed wait takes a screenshot and names
  it in the failure message.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.procs import alive, descendants, wait_gone
from tools.provision import cache_dir
from tools.provision import vscode as provision

HERE = Path(__file__).resolve().parent
DRIVER_JS = HERE / "driver.js"
# The sidecar the extension starts: this checkout's, or another build to try the extension against.
SIDECAR = os.environ.get("ACP_SIDECAR_VSCODE_SIDECAR") or str(Path(sys.executable).with_name("acp-sidecar"))
EXTENSION_ID = "acp-sidecar.acp-sidecar"
MACHINE_SETTINGS = {"acpSidecar.path": SIDECAR}
# The machine is shared and loaded: waits are generous, never fixed sleeps.
START_TIMEOUT_S = 120.0
WAIT_S = 60.0

# The user settings of the test profile: no trust prompt (the extension needs a
# trusted folder), no welcome page or built-in AI chat in the way of screenshots.
USER_SETTINGS = {
    "security.workspace.trust.enabled": False,
    "workbench.startupEditor": "none",
    "chat.disableAIFeatures": True,
    "workbench.tips.enabled": False,
    "telemetry.telemetryLevel": "off",
    "extensions.autoCheckUpdates": False,
    "extensions.autoUpdate": False,
    "update.mode": "none",
    "window.restoreWindows": "none",
    "workbench.secondarySideBar.defaultVisibility": "hidden",
    # code-server is a web build, where files.autoSave defaults to afterDelay (1 s): an unsaved
    # change would be saved behind the tests' back, and so would an agent's edit applied to it.
    "files.autoSave": "off",
}


@dataclass(frozen=True)
class Tools:
    node: Path
    code_server: Path
    playwright: Path
    chromium: Path


def find_tools() -> Tools:
    """The provisioned tools, or a failure that says how to install them (never a skip)."""
    cache = cache_dir()
    problem = provision.problem(cache)
    if problem:
        raise AssertionError(f"the VS Code workbench tests need code-server and Chromium: {problem}")
    return Tools(
        node=provision.node_bin(cache),
        code_server=provision.code_server_entry(cache),
        playwright=provision.playwright_dir(cache),
        chromium=provision.CHROMIUM,
    )


def cmdline(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return [part.decode(errors="replace") for part in fh.read().split(b"\0") if part]
    except OSError:
        return []


def is_sidecar(pid: int) -> bool:
    """The sidecar (not its demo agent): a process running the acp-sidecar script."""
    argv = cmdline(pid)
    return any(arg.endswith("/acp-sidecar") for arg in argv[:2]) and "demo-agent" not in argv


def is_agent(pid: int) -> bool:
    """The demo agent itself (the sidecar runs it under a reaper process whose argv names it too)."""
    argv = cmdline(pid)
    return "sidecar.demo_agent" in argv and not any(arg.endswith("reaper.py") for arg in argv)


def is_agent_or_reaper(pid: int) -> bool:
    return "sidecar.demo_agent" in cmdline(pid)


class CodeServer:
    def __init__(self, tools: Tools, root: Path, workspace: Path) -> None:
        self.tools = tools
        self.root = root
        self.workspace = workspace
        self.user_data = root / "user-data"
        self.extensions = root / "extensions"
        self.state = root / "state"
        self.log_path = root / "code-server.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""
        self._seen: set[int] = set()
        for d in (
            self.user_data / "User",
            self.user_data / "Machine",
            self.extensions,
            self.state,
            root / "xdg",
        ):
            d.mkdir(parents=True, exist_ok=True)
        self.write_settings(USER_SETTINGS)
        self.write_machine_settings(MACHINE_SETTINGS)
        # A key for restarts, so that a test can ask for several faster than through the palette.
        keys = [{"key": "ctrl+alt+r", "command": "acpSidecar.restart"}]
        (self.user_data / "User" / "keybindings.json").write_text(json.dumps(keys))

    def env(self) -> dict[str, str]:
        env = provision.node_env(cache_dir())
        env.update(
            XDG_CONFIG_HOME=str(self.root / "xdg" / "config"),
            XDG_DATA_HOME=str(self.root / "xdg" / "data"),
            XDG_CACHE_HOME=str(self.root / "xdg" / "cache"),
            ACP_SIDECAR_STATE_DIR=str(self.state),
        )
        for key in ("ACP_SIDECAR_AGENT", "VSCODE_IPC_HOOK_CLI"):
            env.pop(key, None)
        return env

    def write_settings(self, settings: dict[str, Any]) -> None:
        (self.user_data / "User" / "settings.json").write_text(json.dumps(settings, indent=2))

    def write_machine_settings(self, settings: dict[str, Any]) -> None:
        # code-server is a remote window: machine-overridable settings are read here.
        (self.user_data / "Machine" / "settings.json").write_text(json.dumps(settings, indent=2))

    def base_args(self) -> list[str]:
        return [
            str(self.tools.node),
            str(self.tools.code_server),
            "--user-data-dir",
            str(self.user_data),
            "--extensions-dir",
            str(self.extensions),
            "--config",
            str(self.root / "code-server.yaml"),
        ]

    def install_extension(self, vsix: Path) -> None:
        res = subprocess.run(
            [*self.base_args(), "--install-extension", str(vsix)],
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=START_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
        if res.returncode != 0 or "successfully installed" not in res.stdout:
            raise AssertionError(f"--install-extension failed:\n{res.stdout}\n{res.stderr}")

    def start(self) -> str:
        args = [
            *self.base_args(),
            "--auth",
            "none",
            "--bind-addr",
            "127.0.0.1:0",
            "--disable-telemetry",
            "--disable-update-check",
            "--disable-workspace-trust",
            str(self.workspace),
        ]
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            args,
            env=self.env(),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        log.close()
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            found = re.search(
                rb"HTTP server listening on (http://127\.0\.0\.1:\d+/)", self.log_path.read_bytes()
            )
            if found:
                self.url = found.group(1).decode()
                return self.url
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        raise AssertionError(
            f"code-server did not start:\n{self.log_path.read_text(errors='replace')[-3000:]}"
        )

    def processes(self) -> set[int]:
        """Every live process under code-server (remembered, so that orphans are found later too)."""
        if self.proc is not None and alive(self.proc.pid):
            self._seen |= descendants(self.proc.pid)
        return {p for p in self._seen if alive(p)}

    def sidecars(self) -> set[int]:
        return {p for p in self.processes() if is_sidecar(p)}

    def agents(self) -> set[int]:
        return {p for p in self.processes() if is_agent(p)}

    def agent_processes(self) -> set[int]:
        """The agents and the reapers the sidecar runs them under."""
        return {p for p in self.processes() if is_agent_or_reaper(p)}

    def stop(self, timeout: float = 30.0) -> int | None:
        """SIGTERM to code-server itself (as Ctrl+C would), then wait for it; returns its exit code."""
        if self.proc is None:
            return None
        self.processes()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def cleanup(self) -> set[int]:
        """Kills whatever is left (the group and every process seen under it); returns what was left."""
        left: set[int] = set()
        if self.proc is not None:
            self.stop(timeout=15.0)
            left = {p for p in self._seen if alive(p)}
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            for pid in left:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(10)
            wait_gone(left, 10)
        return left

    def output_channel(self, name: str) -> str:
        """What an output channel (e.g. the extension's "ACP Sidecar") holds, from its log file."""
        files = sorted(self.user_data.glob(f"logs/*/exthost*/output_logging_*/*-{name}.log"))
        return "\n".join(p.read_text(errors="replace") for p in files)

    def exthost_log(self) -> str:
        """The remote extension host's log (activation errors of extensions land there)."""
        return "\n".join(
            p.read_text(errors="replace") for p in sorted(self.user_data.glob("logs/*/exthost*/*.log"))
        )


class DriverError(AssertionError):
    pass


class Driver:
    """driver.js as a subprocess; `call` sends one request and waits for its answer."""

    def __init__(self, tools: Tools, log_path: Path) -> None:
        env = dict(os.environ, PLAYWRIGHT_CORE=str(tools.playwright))
        self._stderr = log_path.open("ab")
        self.proc = subprocess.Popen(
            [str(tools.node), str(DRIVER_JS)],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            start_new_session=True,
        )
        self._answers: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._next = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with contextlib.suppress(ValueError):
                self._answers.put(json.loads(line))
        self._answers.put(None)

    def call(self, cmd: str, timeout: float = WAIT_S, **args: Any) -> Any:
        assert self.proc.stdin is not None
        self._next += 1
        request_id = self._next
        args["timeout"] = int(timeout * 1000)
        try:
            self.proc.stdin.write(json.dumps({"id": request_id, "cmd": cmd, "args": args}).encode() + b"\n")
            self.proc.stdin.flush()
        except (OSError, ValueError) as exc:
            raise DriverError(f"the driver is closed ({exc}); {cmd} not sent") from exc
        deadline = time.monotonic() + timeout + 30.0
        while True:
            try:
                answer = self._answers.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty as exc:
                raise DriverError(f"driver: no answer to {cmd} within {timeout + 30:.0f} s") from exc
            if answer is None:
                raise DriverError(f"driver exited (code {self.proc.poll()}) during {cmd}")
            if answer.get("id") != request_id:
                continue  # the late answer of a request that timed out on this side
            if not answer.get("ok"):
                raise DriverError(f"{cmd} {json.dumps(args)[:300]}: {answer.get('error')}")
            return answer.get("value")

    def close(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(DriverError, OSError):
                self.call("close", timeout=20.0)
            with contextlib.suppress(OSError):
                assert self.proc.stdin is not None
                self.proc.stdin.close()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        self._stderr.close()


def normalize(text: str) -> str:
    """Monaco and webviews use no-break spaces; tests compare plain text."""
    return text.replace("\u00a0", " ")
