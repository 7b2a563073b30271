"""`acp-sidecar editor-config EDITOR`: print an editor's configuration for the sidecar.

Only `helix` so far: a languages.toml snippet generated from the installed Helix
(see :mod:`sidecar.editor_config.helix`).
"""

from __future__ import annotations

import argparse
import sys


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="acp-sidecar editor-config", description="Print an editor's configuration for acp-sidecar."
    )
    editors = ap.add_subparsers(dest="editor", required=True, metavar="EDITOR")
    helix = editors.add_parser(
        "helix",
        help="a languages.toml snippet: every language of the installed Helix, its default servers kept",
        description="Print a languages.toml snippet that adds acp-sidecar to every language the "
        "installed Helix knows, keeping each language's default servers first. Without a Helix "
        "(hx or helix on PATH, or --hx) it uses a built-in list of Helix 25.07.1's defaults.",
    )
    helix.add_argument("--hx", metavar="PATH", help="the Helix executable to ask (default: hx on PATH)")
    helix.add_argument(
        "--command", metavar="CMD", default="acp-sidecar", help="the sidecar's command in the snippet"
    )
    return ap


def main(argv: list[str]) -> int:
    from .helix import HelixReadError, installed_languages, languages_toml

    args = parser().parse_args(argv)
    try:
        found = installed_languages(args.hx)
    except HelixReadError as exc:
        print(f"acp-sidecar editor-config helix: {exc}", file=sys.stderr)
        return 1
    for note in found.notes:
        print(f"acp-sidecar editor-config helix: {note}; using {found.source}", file=sys.stderr)
    sys.stdout.write(languages_toml(found, args.command))
    return 0
