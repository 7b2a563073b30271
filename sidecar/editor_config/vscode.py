"""`acp-sidecar editor-config vscode`: the bundled .vsix, or exactly how to build one.

A wheel carries `acp-sidecar.vsix` only when it was built before packaging (`make vsix`);
the extension's sources are not in the wheel, so without it the way is a checkout.
"""

from __future__ import annotations

import json
import shlex

from sidecar import __version__
from sidecar.editor_config.locations import EditorConfigs, SidecarCommand

BUILD = "npm ci && npm run package"


def build_steps(configs: EditorConfigs) -> list[str]:
    if configs.installed:
        where = "cd editor-configs/vscode"
        intro = "Build it in a checkout of the acp-sidecar repository (the one this was installed from):"
    else:
        where = f"cd {shlex.quote(str(configs.vscode))}"
        intro = "Build it in this checkout:"
    return [intro, f"  {where} && {BUILD}", "  code --install-extension acp-sidecar.vsix"]


def _path_setting(command: SidecarCommand) -> list[str]:
    if not command.full_path_because:
        return []
    setting = json.dumps({"acpSidecar.path": command.command})[1:-1]
    return [
        f"{command.full_path_because}: give the extension this install's, in settings.json:",
        f"  {setting}",
    ]


def render(configs: EditorConfigs, command: SidecarCommand) -> str:
    vsix = configs.vsix
    if vsix is not None:
        lines = [
            f"acp-sidecar {__version__} for VS Code 1.90+: the extension built into this install:",
            f"  {vsix}",
            "Install it:",
            f"  code --install-extension {shlex.quote(str(vsix))}",
        ]
    else:
        has_none = "this install has" if configs.installed else "this checkout has"
        lines = [
            f"acp-sidecar {__version__} for VS Code 1.90+: {has_none} no built extension (acp-sidecar.vsix).",
            *build_steps(configs),
        ]
    lines += _path_setting(command)
    lines.append(f"Settings and commands: {configs.vscode / 'README.md'}")
    return "\n".join(lines) + "\n"
