"""Real Helix in tmux, set up as editor-configs/helix/README.md tells a user.

One `HelixEditor` is one private world: a tmux server on its own socket
(`tmux -L NAME`), private HOME and XDG_* dirs (the user's config is never
read or touched), the README's languages.toml (generated)/config.toml in its
XDG_CONFIG_HOME, a workspace (a git repository, so Helix sends a workspace
folder), `acp-sidecar` from this checkout's venv on PATH, a private sidecar
state dir, and `hx -v --log FILE` recording the LSP traffic.

Tests drive it with keys and read the screen (`tmux capture-pane -p`): the
last line is Helix's message line, the one above its status line. Every wait
has a timeout and fails with the last screen and the tail of the log. Every
process started for it carries a marker in its environment, so `close()` can
prove none is left (and kill stragglers before failing).
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

from tests import procs
from tests.editors.helix.lsp_log import LspLog
from tools.provision import SETUP_HINT, cache_dir
from tools.provision import helix as provision_helix

REPO = Path(__file__).resolve().parents[3]
HELIX_CONFIGS = REPO / "editor-configs" / "helix"
SIDECAR_SERVER = "acp-sidecar"  # the server's name in languages.toml
MARKER = "ACP_SIDECAR_HELIX_TEST"
ANSI = re.compile(r"\x1b\[[0-9;]*m")
SGR = re.compile(r"(\x1b\[[0-9;]*m)")
HEALTH_SERVER = re.compile(r"^\s+([✓✘]) ([^:\s]+): ")
SPINNER = re.compile(r"[\u2800-\u28ff]")  # Helix's progress spinner is braille dots
T = TypeVar("T")


def find_hx() -> Path:
    """The provisioned Helix wrapper; fails (never skips) with how to get it."""
    hx = provision_helix.hx_path(cache_dir())
    problem = provision_helix.problem(cache_dir())
    if problem is not None:
        raise AssertionError(f"real Helix is not installed: {problem}; {SETUP_HINT}")
    return hx


def find_tmux() -> str:
    tmux = shutil.which("tmux")
    if tmux is None:
        raise AssertionError(f"tmux not found (Debian package tmux); {SETUP_HINT}")
    return tmux


def find_sidecar() -> Path:
    """The acp-sidecar of the venv running the tests (this checkout)."""
    sidecar = Path(sys.executable).with_name("acp-sidecar")
    if not sidecar.exists():
        raise AssertionError(f"{sidecar} not found: run `make install`")
    return sidecar


@functools.cache
def generated_snippet(hx: str, sidecar: str) -> str:
    """`acp-sidecar editor-config helix` for this Helix, with this checkout's acp-sidecar on PATH
    (once per test process: it asks `hx --health all-languages`)."""
    env = dict(os.environ, PATH=f"{Path(sidecar).parent}:/usr/local/bin:/usr/bin:/bin")
    result = subprocess.run(
        [sidecar, "editor-config", "helix", "--hx", hx], capture_output=True, text=True, env=env, timeout=120
    )
    assert result.returncode == 0 and result.stderr == "", result.stderr
    return result.stdout


def marked_processes(token: str) -> set[int]:
    """Live processes this harness started (their environment carries its marker)."""
    return procs.marked_processes(MARKER, token)


def describe(pids: Iterable[int]) -> str:
    out = []
    for pid in sorted(pids):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            cmdline = "?"
        out.append(f"{pid}: {cmdline.strip()[:200]}")
    return "\n".join(out)


class HelixEditor:
    """Helix on a private tmux socket; see the module doc."""

    def __init__(
        self,
        root: Path,
        *,
        width: int = 160,
        height: int = 45,
        env: dict[str, str] | None = None,
    ) -> None:
        self.root = root
        self.hx = find_hx()
        self.tmux = find_tmux()
        self.sidecar = find_sidecar()
        self.token = uuid.uuid4().hex[:12]
        self.socket = f"acp-helix-{self.token}"
        self.width, self.height = width, height
        self.home = root / "home"
        self.config_dir = self.home / ".config" / "helix"
        self.workspace = root / "ws"
        # The sidecar's state dir holds the transcripts, whose paths Helix shows in its status line:
        # a short one (not under pytest's long tmp_path, longer still under xdist) is shown whole.
        self.state_dir = Path(tempfile.mkdtemp(prefix="acp-hx-", dir="/tmp"))
        self.log_path = root / "helix.log"
        self.bin_dir = root / "bin"
        self.extra_env = dict(env or {})
        self.started = False
        self.closed = False
        self.socket_path: Path | None = None
        for d in (self.config_dir, self.workspace, self.state_dir, self.bin_dir):
            d.mkdir(parents=True, exist_ok=True)
        # README step 1: `acp-sidecar` on PATH. Only it: other servers (ruff is in the venv) stay out.
        (self.bin_dir / "acp-sidecar").symlink_to(self.sidecar)
        self.install_user_config()
        self.make_workspace()

    # ------------------------------------------------------------------ setup
    def install_user_config(self) -> None:
        """README steps 2 and 3 into an empty user config: languages.toml is what
        `acp-sidecar editor-config helix` prints for this Helix, config.toml what `--config` prints."""
        (self.config_dir / "languages.toml").write_text(generated_snippet(str(self.hx), str(self.sidecar)))
        shutil.copyfile(HELIX_CONFIGS / "config.toml", self.config_dir / "config.toml")

    def make_workspace(self) -> None:
        self.write("main.py", 'def greet(name):\n    return f"hello {name}"\n')
        self.write("notes.md", "# Notes\n\nThe sidecar reads this file.\n")
        self.write("README.md", "# Practice project\n\nA small project for the Helix tests.\n")
        # A project root marker: Helix then sends the workspace folder (without one it sends none).
        subprocess.run(["git", "init", "-q", str(self.workspace)], check=True, capture_output=True)

    def write(self, relpath: str, text: str) -> Path:
        path = self.workspace / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def env(self) -> dict[str, str]:
        home = str(self.home)
        env = {
            "PATH": f"{self.bin_dir}:/usr/local/bin:/usr/bin:/bin",
            "HOME": home,
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            "XDG_CACHE_HOME": str(self.home / ".cache"),
            "XDG_DATA_HOME": str(self.home / ".local" / "share"),
            "XDG_STATE_HOME": str(self.home / ".local" / "state"),
            "XDG_RUNTIME_DIR": str(self.home / ".run"),
            "LANG": "C.UTF-8",
            "TERM": "xterm-256color",
            "ACP_SIDECAR_STATE_DIR": str(self.state_dir),
            MARKER: self.token,
        }
        env.update(self.extra_env)
        return env

    # ------------------------------------------------------------------ tmux
    def _tmux(self, *args: str, check: bool = True) -> str:
        result = subprocess.run(
            [self.tmux, "-L", self.socket, *args],
            capture_output=True,
            text=True,
            env=self.env(),
            timeout=30,
            check=False,
        )
        if check and result.returncode != 0:
            raise AssertionError(f"tmux {' '.join(args)} failed: {result.stderr.strip()}")
        return result.stdout

    def start(self, *files: str, wait_for: str | None = None) -> None:
        """Open `files` (relative to the workspace) in Helix; wait until its status line is drawn."""
        assert not self.started, "start() once per HelixEditor"
        (self.home / ".run").mkdir(mode=0o700, exist_ok=True)
        conf = self.root / "tmux.conf"
        # escape-time 0: an Escape followed by `:` must not become Alt-:.
        # remain-on-exit: keep the last screen of a Helix that exits or crashes.
        conf.write_text("set -g escape-time 0\nset -g remain-on-exit on\nset -g history-limit 1000\n")
        self.started = True
        argv = [str(self.hx), "-v", "--log", str(self.log_path), *files]
        self._tmux(
            "-f", str(conf), "new-session", "-d", "-s", "helix",
            "-x", str(self.width), "-y", str(self.height), "-c", str(self.workspace), *argv,
        )  # fmt: skip
        self.socket_path = Path(self._tmux("display-message", "-p", "#{socket_path}").strip())
        first = files[0] if files else "[scratch]"
        self.wait_screen(re.escape(Path(first).name) if wait_for is None else wait_for, region="status")

    def pane_dead(self) -> bool:
        return self._tmux("display-message", "-p", "-t", "helix", "#{pane_dead}").strip() == "1"

    def send_keys(self, *keys: str) -> None:
        """tmux key names: "Enter", "Escape", "Down", "C-c", "space", ... (one key each)."""
        self._tmux("send-keys", "-t", "helix", *keys)

    def type_text(self, text: str) -> None:
        """Literal text, typed as is."""
        self._tmux("send-keys", "-t", "helix", "-l", text)

    def normal_mode(self) -> None:
        """Escape, and wait for normal mode. Helix reads an Escape and the next key arriving
        together as Alt-key (`Escape space` as Alt-space, then `A t` types a "t"): it must take
        the Escape alone, back in normal mode, before the next key."""
        self.send_keys("Escape")
        time.sleep(0.05)
        self.wait_screen(r"^\s*NOR\b", region="status")

    def command(self, cmdline: str) -> None:
        """Run a typable command: Escape to normal mode, `:`, the text, Enter."""
        self.normal_mode()
        self.type_text(":" + cmdline)
        self.send_keys("Enter")

    def workspace_command(self, name: str, *json_args: str) -> None:
        """`:lsp-workspace-command NAME ARG...`; each ARG is JSON text, e.g. '"Fix auth"'."""
        self.command(" ".join(["lsp-workspace-command", name, *json_args]))

    # ------------------------------------------------------------------ screen
    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-t", "helix")

    def lines(self) -> list[str]:
        lines = self.screen().split("\n")
        # capture-pane ends with a newline per row: keep exactly `height` rows.
        return (lines + [""] * self.height)[: self.height]

    def message_line(self) -> str:
        return self.lines()[-1].strip()

    def status_line(self) -> str:
        return self.lines()[-2].strip()

    def reverse_video(self) -> list[str]:
        """Per screen row, its text shown in reverse video (the cursor, a menu's selected row)."""
        rows: list[str] = []
        for row in self._tmux("capture-pane", "-p", "-e", "-t", "helix").split("\n"):
            reverse, text = False, []
            for part in SGR.split(row):
                if part.startswith("\x1b["):
                    codes = part[2:-1].split(";")
                    if codes in ([""], ["0"]) or "27" in codes:
                        reverse = False
                    if "7" in codes:
                        reverse = True
                elif reverse:
                    text.append(part)
            rows.append("".join(text).strip())
        return rows

    def selected_item(self, items: list[str]) -> str | None:
        """Which of a menu's `items` is highlighted (e.g. a showMessageRequest popup's actions)."""
        highlighted = self.reverse_video()
        # A menu drawn over a line of text may run into that line's reverse-video cells (seen:
        # "Revert this agent change  emo agent."): the item, then a gap of two spaces or more.
        found = [item for item in items if any(h == item or h.startswith(item + "  ") for h in highlighted)]
        return found[0] if len(found) == 1 else None

    def select_item(self, item: str, tries: int = 12) -> None:
        """Walk an open menu down to `item`, one Down at a time, each once the screen showed the
        last (Downs sent at once overshoot on a loaded machine, and the menu wraps around)."""
        for _ in range(tries):
            before = self.reverse_video()
            if self.selected_item([item]) == item:
                return
            self.send_keys("Down")
            with contextlib.suppress(AssertionError):
                self.wait_until(
                    lambda shown=before: self.reverse_video() != shown, "the menu to move", timeout=3
                )
        self.wait_until(lambda: self.selected_item([item]) == item, f"{item!r} selected")

    def spinner_visible(self) -> bool:
        return SPINNER.search(self.status_line()) is not None

    def region(self, region: str) -> str:
        if region == "screen":
            return self.screen()
        if region == "message":
            return self.message_line()
        if region == "status":
            return self.status_line()
        raise ValueError(region)

    def wait_until(self, check: Callable[[], T | None], what: str, timeout: float = 30) -> T:
        """Poll `check` until it returns something truthy; fail with the screen and log tail."""
        deadline = time.monotonic() + timeout
        while True:
            value = check()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout:g} s waiting for {what}\n{self.context()}")
            if self.started and self.pane_dead():
                value = check()
                if value:
                    return value
                raise AssertionError(f"Helix exited while waiting for {what}\n{self.context()}")
            time.sleep(0.1)

    def wait_screen(self, pattern: str, *, region: str = "screen", timeout: float = 30) -> re.Match[str]:
        """Wait until `region` ("screen", "message", "status") matches the regex `pattern`."""
        regex = re.compile(pattern)
        return self.wait_until(
            lambda: regex.search(self.region(region)), f"{region} to match {pattern!r}", timeout
        )

    def wait_screen_gone(self, pattern: str, *, region: str = "screen", timeout: float = 30) -> None:
        regex = re.compile(pattern)
        what = f"{region} to stop matching {pattern!r}"
        self.wait_until(lambda: regex.search(self.region(region)) is None, what, timeout)

    # ------------------------------------------------------------------ log
    def log(self) -> LspLog:
        return LspLog.read(self.log_path)

    def wait_log(self, check: Callable[[LspLog], T | None], what: str, timeout: float = 30) -> T:
        return self.wait_until(lambda: check(self.log()), what, timeout)

    def wait_attached(self, server: str = SIDECAR_SERVER, timeout: float = 30) -> None:
        """Until `server` answered `initialize` (it runs for the open document)."""

        def answered(log: LspLog) -> bool:
            sent = log.of(server, "initialize", to_server=True)
            return bool(sent) and log.response_to(sent[0]) is not None

        self.wait_log(answered, f"{server} to answer initialize", timeout)

    def wait_agent_ready(self, timeout: float = 30) -> None:
        """Until the sidecar reports its agent idle (an `acp/status` Helix logs but does not show)."""

        def idle(log: LspLog) -> bool:
            return any(
                m.params.get("state") == "idle" for m in log.of(SIDECAR_SERVER, "acp/status", to_server=False)
            )

        self.wait_attached(timeout=timeout)
        self.wait_log(idle, "the sidecar's agent to be ready (acp/status idle)", timeout)

    def wait_turns_ended(self, count: int, timeout: float = 30) -> None:
        """Until the sidecar has ended `count` progresses (turns) and the spinner stopped."""

        def ended(log: LspLog) -> bool:
            progress = log.of(SIDECAR_SERVER, "$/progress", to_server=False)
            return sum(m.params["value"]["kind"] == "end" for m in progress) >= count

        self.wait_log(ended, f"{count} turn(s) to end (progress end)", timeout)
        self.wait_until(lambda: not self.spinner_visible(), "the progress spinner to stop", timeout)

    def processes(self, name: str) -> list[int]:
        """Live processes of this Helix whose command line mentions `name` (e.g. "acp-sidecar")."""
        return sorted(pid for pid in marked_processes(self.token) if name in describe([pid]).split(":", 1)[1])

    def log_tail(self, lines: int = 30, width: int = 400) -> str:
        if not self.log_path.exists():
            return "(no log yet)"
        tail = self.log_path.read_text(errors="replace").splitlines()[-lines:]
        return "\n".join(line[:width] for line in tail)

    def context(self) -> str:
        """What a failure message carries: the last screen and the tail of Helix's log."""
        try:
            screen = self.screen() if self.started and not self.closed else "(no tmux server)"
        except (AssertionError, subprocess.SubprocessError, OSError) as exc:
            screen = f"(screen unavailable: {exc})"
        log = f"--- log tail ({self.log_path}) ---\n{self.log_tail()}"
        return f"--- last screen ---\n{screen.rstrip()}\n{log}"

    # ------------------------------------------------------------------ hx --health
    def health(self, language: str) -> dict[str, bool]:
        """`hx --health LANGUAGE` under this private config: each configured server -> found on PATH."""
        result = subprocess.run(
            [str(self.hx), "--health", language],
            capture_output=True,
            text=True,
            env=self.env(),
            cwd=self.workspace,
            timeout=60,
        )
        text = ANSI.sub("", result.stdout)
        assert result.returncode == 0 and "Configured language servers" in text, text + result.stderr
        return {m[2]: m[1] == "✓" for m in map(HEALTH_SERVER.match, text.splitlines()) if m}

    # ------------------------------------------------------------------ teardown
    def quit(self, timeout: float = 30) -> None:
        """`:q!`: Helix exits, and with it every process it started."""
        self.command("q!")
        self.wait_until(self.pane_dead, "Helix to exit after :q!", timeout)
        self.assert_no_processes_left(timeout, keep_tmux=True)

    def assert_no_processes_left(self, timeout: float = 20, *, keep_tmux: bool = False) -> None:
        """Every marked process (sidecar, agent, Helix) is gone; stragglers are killed, then it fails."""
        tmux_pid = self._tmux("display-message", "-p", "#{pid}").strip() if keep_tmux else ""
        deadline = time.monotonic() + timeout
        while True:
            left = marked_processes(self.token) - ({int(tmux_pid)} if tmux_pid else set())
            if not left or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        if left:
            listing = describe(left)
            for pid in left:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            message = f"processes left after Helix ended (now killed):\n{listing}"
            raise AssertionError(f"{message}\n{self.context()}")

    def close(self) -> None:
        """Kill the tmux server (Helix gets SIGHUP); then nothing of ours may be left."""
        if self.closed:
            return
        self.closed = True
        try:
            if self.started:
                self._tmux("kill-server", check=False)
                if self.socket_path is not None:
                    self.socket_path.unlink(missing_ok=True)  # tmux leaves it behind
            self.assert_no_processes_left()
        finally:
            shutil.rmtree(self.state_dir, ignore_errors=True)
