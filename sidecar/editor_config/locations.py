"""Where the editor configs and this install's `acp-sidecar` executable are.

The wheel carries the repository's `editor-configs/` as `sidecar/editor_config/bundled/`
(pyproject.toml maps the directory to that package). In a checkout, editable installs
included, there is no such directory: the configs are read from `editor-configs/` itself.
"""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

APP = "acp-sidecar"
VSIX_NAME = "acp-sidecar.vsix"  # what `npm run package` writes (editor-configs/vscode/package.json)


class ConfigsMissing(RuntimeError):
    """Neither the installed copy nor a checkout's editor-configs/ is there; the message says so."""


@dataclass(frozen=True)
class EditorConfigs:
    root: Path
    installed: bool  # True: the copy in the installed package; False: a checkout's editor-configs/

    @property
    def nvim_plugin(self) -> Path:
        return self.root / "nvim"

    @property
    def helix(self) -> Path:
        return self.root / "helix"

    @property
    def vscode(self) -> Path:
        return self.root / "vscode"

    @property
    def vsix(self) -> Path | None:
        path = self.vscode / VSIX_NAME
        return path if path.is_file() else None


def editor_configs() -> EditorConfigs:
    here = Path(__file__).resolve().parent
    bundled = here / "bundled"
    if bundled.is_dir():
        return EditorConfigs(bundled, installed=True)
    checkout = here.parents[1] / "editor-configs"
    if checkout.is_dir():
        return EditorConfigs(checkout, installed=False)
    raise ConfigsMissing(
        f"the editor configs are not installed (no {bundled}, no {checkout}): "
        "reinstall acp-sidecar from a wheel or a checkout of the repository"
    )


@dataclass(frozen=True)
class SidecarCommand:
    """The command an editor should start: `acp-sidecar` when PATH finds this install's, else its path."""

    command: str
    full_path_because: str | None = None  # set when `command` is this install's full path: why


def _this_executable() -> Path | None:
    """The `acp-sidecar` script of this install: the one running now, else in this Python's scripts dir."""
    running = Path(sys.argv[0])
    if running.name == APP and running.is_file():
        return running.absolute()  # not resolved: a pipx or uv symlink on PATH is the stable name
    scripts = Path(sysconfig.get_path("scripts")) / APP
    return scripts if scripts.is_file() else None


def _same_file(a: str | Path, b: str | Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def sidecar_command() -> SidecarCommand:
    ours = _this_executable()
    on_path = shutil.which(APP)
    if ours is None or (on_path is not None and _same_file(on_path, ours)):
        return SidecarCommand(APP)
    why = f"PATH finds another {APP}, {on_path}" if on_path else f"{APP} is not on PATH"
    return SidecarCommand(str(ours), why)
