"""What the wheel is built from, checked in the checkout (fast; test_wheel.py builds one).

- pyproject.toml lists every package under sidecar/ (it must: one directory is mapped).
- package-data ships exactly the editor configs a user needs: the whole Neovim plugin and
  the Helix files, the README files, the VS Code extension's .vsix; no extension sources.
- Everything that states the version says `sidecar.__version__`.
"""

from __future__ import annotations

import glob
import json
import re
import tomllib
from pathlib import Path
from typing import Any

from setuptools import find_packages

from sidecar import __version__

REPO = Path(__file__).resolve().parents[3]
CONFIGS = REPO / "editor-configs"
BUNDLED = "sidecar.editor_config.bundled"


def pyproject() -> dict[str, Any]:
    return tomllib.loads((REPO / "pyproject.toml").read_text())


def test_every_package_under_sidecar_is_listed() -> None:
    setuptools = pyproject()["tool"]["setuptools"]
    listed = set(setuptools["packages"])
    found = set(find_packages(str(REPO), include=["sidecar", "sidecar.*"]))
    assert listed - {BUNDLED} == found, (
        "[tool.setuptools] packages in pyproject.toml must list every package under sidecar/ "
        f"(missing: {sorted(found - listed)}, stale: {sorted(listed - found - {BUNDLED})})"
    )
    assert setuptools["package-dir"] == {BUNDLED: "editor-configs"}
    assert setuptools["include-package-data"] is False


def shipped_configs() -> set[str]:
    patterns = pyproject()["tool"]["setuptools"]["package-data"][BUNDLED]
    files: set[str] = set()
    for pattern in patterns:
        for match in glob.glob(pattern, root_dir=CONFIGS, recursive=True):
            if (CONFIGS / match).is_file():
                files.add(match)
    return files


def expected_configs() -> set[str]:
    """The files a user of the wheel needs: all of nvim/ and helix/ but dotfiles (lint config)."""
    files = {"README.md", "vscode/README.md", "vscode/LICENSE"}
    for editor in ("nvim", "helix"):
        for path in (CONFIGS / editor).rglob("*"):
            relative = path.relative_to(CONFIGS)
            if path.is_file() and not any(part.startswith(".") for part in relative.parts):
                files.add(relative.as_posix())
    vsix = CONFIGS / "vscode" / "acp-sidecar.vsix"
    if vsix.is_file():  # built by `make vsix`: shipped too
        files.add("vscode/acp-sidecar.vsix")
    return files


def test_package_data_ships_the_editor_configs_and_nothing_else() -> None:
    shipped, expected = shipped_configs(), expected_configs()
    assert shipped == expected, (
        "package-data of sidecar.editor_config.bundled in pyproject.toml does not match "
        f"editor-configs/: not shipped {sorted(expected - shipped)}, shipped but unexpected "
        f"{sorted(shipped - expected)}"
    )
    assert "nvim/plugin/acp_sidecar.lua" in shipped and "nvim/lua/acp_sidecar/init.lua" in shipped
    assert not [f for f in shipped if f.startswith(("vscode/src", "vscode/node_modules", "vscode/out"))]


def test_the_vsix_pattern_is_what_npm_run_package_writes() -> None:
    package = json.loads((CONFIGS / "vscode" / "package.json").read_text())
    written = re.search(r"-o (\S+\.vsix)", package["scripts"]["package"])
    assert written, package["scripts"]["package"]
    patterns = pyproject()["tool"]["setuptools"]["package-data"][BUNDLED]
    assert f"vscode/{written.group(1)}" in patterns


def test_versions_agree() -> None:
    """The version lives in sidecar/__init__.py; whatever else states one must say the same."""
    project = pyproject()["project"]
    assert "version" in project["dynamic"] and "version" not in project
    assert pyproject()["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "sidecar.__version__"}
    package = json.loads((CONFIGS / "vscode" / "package.json").read_text())
    lock = json.loads((CONFIGS / "vscode" / "package-lock.json").read_text())
    protocol = (REPO / "docs" / "protocol.md").read_text()
    example = re.search(r'"name": "acp-sidecar-demo",[^}]*"version": "([^"]+)"', protocol)
    assert example, "docs/protocol.md: the demo agent's agentInfo example is gone"
    stated = {
        "editor-configs/vscode/package.json": package["version"],
        "editor-configs/vscode/package-lock.json": lock["version"],
        'editor-configs/vscode/package-lock.json packages[""]': lock["packages"][""]["version"],
        "docs/protocol.md (the demo agent's agentInfo)": example.group(1),
    }
    assert {where: v for where, v in stated.items() if v != __version__} == {}, (
        f"sidecar.__version__ is {__version__}"
    )


def test_license_is_an_spdx_expression_with_its_file() -> None:
    project = pyproject()["project"]
    assert project["license"] == "Apache-2.0"
    assert project["license-files"] == ["LICENSE"]
    assert "Apache License" in (REPO / "LICENSE").read_text()
    assert not [c for c in project["classifiers"] if c.startswith("License ::")]  # PEP 639: not both
