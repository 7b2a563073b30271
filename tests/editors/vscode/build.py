"""Builds the VS Code extension (.vsix) the way a developer does: npm ci, compile, unit tests, package.

Shared by the packaging test (tests/editor_configs) and the workbench tests,
so one pytest run builds it once: the build goes to a directory named after
a hash of the extension's sources under pytest's base temp directory.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
VSCODE = REPO / "editor-configs" / "vscode"
VSIX_NAME = "acp-sidecar.vsix"
IGNORED = ("node_modules", "out", "*.vsix")
# (npm arguments, timeout in seconds)
STEPS: tuple[tuple[tuple[str, ...], float], ...] = (
    (("ci", "--no-audit", "--no-fund"), 600.0),
    (("run", "compile"), 300.0),
    (("test",), 180.0),
    (("run", "package"), 300.0),
)


@dataclass
class Build:
    root: Path
    vsix: Path
    seconds: dict[str, float] = field(default_factory=dict)


_builds: dict[Path, Build] = {}


def sources_hash() -> str:
    digest = hashlib.sha256()
    for path in sorted(VSCODE.rglob("*")):
        rel = path.relative_to(VSCODE)
        if rel.parts[0] in ("node_modules", "out") or path.suffix == ".vsix" or not path.is_file():
            continue
        digest.update(str(rel).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def npm(args: tuple[str, ...], cwd: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    found = shutil.which("npm")
    if found is None:
        raise AssertionError("npm is not installed: apt-get install npm (Debian), or run `make setup`")
    return subprocess.run(
        [found, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )


def build_vsix(base: Path) -> Build:
    """The extension built from a copy of its sources under `base` (once per source state)."""
    root = base / f"vscode-extension-{sources_hash()}"
    if root in _builds:
        return _builds[root]
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(VSCODE, root, ignore=shutil.ignore_patterns(*IGNORED))
    build = Build(root=root, vsix=root / VSIX_NAME)
    for args, timeout in STEPS:
        started = time.monotonic()
        res = npm(args, root, timeout)
        build.seconds[" ".join(args[:2])] = time.monotonic() - started
        if res.returncode != 0:
            raise AssertionError(f"npm {' '.join(args)} failed:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}")
    if not build.vsix.is_file():
        raise AssertionError(f"npm run package made no {VSIX_NAME} in {root}")
    _builds[root] = build
    return build
