"""`acp-sidecar editor-config nvim|helix|vscode`: print what an editor needs, from this install.

The configs are the package's own copy of the repository's editor-configs/
(:mod:`sidecar.editor_config.locations`): the Neovim plugin, the Helix snippets, the
VS Code extension when it was built into the wheel. Helix's languages.toml snippet is
generated from the installed Helix (:mod:`sidecar.editor_config.helix`).
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sidecar.editor_config.locations import EditorConfigs

PROG = "acp-sidecar editor-config"


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog=PROG,
        description="Print an editor's setup for acp-sidecar, from the editor configs installed with it.",
        epilog="Each prints to stdout; `--help` after the editor's name says more.",
    )
    editors = ap.add_subparsers(dest="editor", required=True, metavar="EDITOR")
    nvim = editors.add_parser(
        "nvim",
        help="the Neovim plugin's directory, a lazy.nvim spec and the runtimepath lines",
        description="Print the directory of the Neovim plugin installed with this sidecar, a "
        "lazy.nvim spec for it, and the lines that load it without a plugin manager (init.lua, "
        "init.vim). When PATH does not find this install's acp-sidecar, the setup gives its full "
        "path as `cmd`.",
    )
    only = nvim.add_mutually_exclusive_group()
    only.add_argument("--path", action="store_true", help="print only the plugin directory")
    only.add_argument(
        "--lazy",
        action="store_true",
        help="print only a lazy.nvim plugin file (save it as ~/.config/nvim/lua/plugins/acp-sidecar.lua)",
    )
    helix = editors.add_parser(
        "helix",
        help="a languages.toml snippet for every language of the installed Helix, and the config.toml part",
        description="Print a languages.toml snippet that adds acp-sidecar to every language the "
        "installed Helix knows, keeping each language's default servers first, followed by the "
        "config.toml settings and key bindings as comments. Without a Helix (hx or helix on PATH, "
        "or --hx) it uses a built-in list of Helix 25.07.1's defaults.",
    )
    helix.add_argument("--hx", metavar="PATH", help="the Helix executable to ask (default: hx on PATH)")
    helix.add_argument(
        "--command",
        metavar="CMD",
        help="the sidecar's command in the snippet (default: acp-sidecar, or this install's full path "
        "when PATH does not find it)",
    )
    helix.add_argument(
        "--config", action="store_true", help="print only the config.toml part (settings, key bindings)"
    )
    vscode = editors.add_parser(
        "vscode",
        help="the path of the VS Code extension (.vsix) built into this install, else how to build it",
        description="Print the path of the VS Code extension (acp-sidecar.vsix) when it was built "
        "into this install, with the command that installs it; else exactly how to build it.",
    )
    vscode.add_argument(
        "--path",
        action="store_true",
        help="print only the .vsix path (exit code 1, and how to build it on stderr, when there is none)",
    )
    return ap


def _fail(editor: str, message: str) -> int:
    print(f"{PROG} {editor}: {message}", file=sys.stderr)
    return 1


def _helix(
    args: argparse.Namespace, configs: EditorConfigs, command: str, full_path_because: str | None
) -> int:
    from sidecar.editor_config.helix import (
        HelixReadError,
        config_toml_as_comment,
        installed_languages,
        languages_toml,
    )

    config_toml = (configs.helix / "config.toml").read_text(encoding="utf-8")
    if args.config:
        sys.stdout.write(config_toml)
        return 0
    try:
        found = installed_languages(args.hx)
    except HelixReadError as exc:
        return _fail("helix", str(exc))
    for reason in found.notes:
        print(f"{PROG} helix: {reason}; using {found.source}", file=sys.stderr)
    snippet = languages_toml(found, command, full_path_because)
    sys.stdout.write(snippet + config_toml_as_comment(config_toml))
    return 0


def main(argv: list[str]) -> int:
    from sidecar.editor_config import nvim, vscode
    from sidecar.editor_config.locations import ConfigsMissing, editor_configs, sidecar_command

    args = parser().parse_args(argv)
    try:
        configs = editor_configs()
    except ConfigsMissing as exc:
        return _fail(args.editor, str(exc))
    command = sidecar_command()
    if args.editor == "helix":
        if args.command:
            return _helix(args, configs, args.command, None)
        return _helix(args, configs, command.command, command.full_path_because)
    if args.editor == "nvim":
        if args.path:
            text = f"{configs.nvim_plugin}\n"
        elif args.lazy:
            text = nvim.lazy_file(configs, command)
        else:
            text = nvim.render(configs, command)
        sys.stdout.write(text)
        return 0
    if args.path:
        if configs.vsix is None:
            steps = "\n".join(vscode.build_steps(configs))
            where = "this install" if configs.installed else "this checkout"
            return _fail("vscode", f"no acp-sidecar.vsix in {where}.\n{steps}")
        sys.stdout.write(f"{configs.vsix}\n")
        return 0
    sys.stdout.write(vscode.render(configs, command))
    return 0
