"""The embedded demo agent: a real, offline, deterministic ACP agent.

Run it as ``python -m sidecar.demo_agent [--state-dir DIR]`` (or through the
sidecar's CLI, which calls :func:`main`). It speaks newline-delimited
JSON-RPC 2.0 (ACP schema v1) on stdin/stdout. Its behaviour is scripted by
prompt keywords (see :mod:`sidecar.demo_agent.script`) and environment
variables (see README.md next to this file).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path

from sidecar import __version__

__all__ = ["main", "resolve_state_dir"]


def resolve_state_dir(explicit: str | None) -> Path:
    """``--state-dir``, else ``ACP_DEMO_AGENT_STATE_DIR``, else
    ``$ACP_SIDECAR_STATE_DIR/demo-agent``, else the platformdirs state dir."""
    if explicit:
        return Path(explicit).expanduser()
    env = os.environ.get("ACP_DEMO_AGENT_STATE_DIR")
    if env:
        return Path(env).expanduser()
    sidecar = os.environ.get("ACP_SIDECAR_STATE_DIR")
    if sidecar:
        return Path(sidecar).expanduser() / "demo-agent"
    import platformdirs  # only needed for the default, keep startup lean

    return Path(platformdirs.user_state_dir("acp-sidecar")) / "demo-agent"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="acp-sidecar demo-agent",
        description="The acp-sidecar demo ACP agent (JSON-RPC on stdin/stdout).",
    )
    parser.add_argument("--version", action="version", version=__version__)
    parser.add_argument("--state-dir", help="where sessions are saved")
    commands = parser.add_subparsers(dest="command")
    seed = commands.add_parser("seed", help="write synthetic saved sessions (for tests)")
    # SUPPRESS: do not let the subcommand's default erase a --state-dir given before it.
    seed.add_argument("--state-dir", default=argparse.SUPPRESS, help="where sessions are saved")
    seed.add_argument("--cwd", required=True, help="absolute working directory of the sessions")
    seed.add_argument("--count", type=int, required=True, help="how many sessions")
    seed.add_argument("--titled", type=int, default=0, help="how many of them have a title")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    state_dir = resolve_state_dir(args.state_dir)
    from sidecar.demo_agent.store import Store, seed

    if args.command == "seed":
        if not os.path.isabs(args.cwd):
            print(f"seed: --cwd must be an absolute path: {args.cwd!r}", file=sys.stderr)
            return 2
        if args.count < 0 or not args.titled >= 0:
            print("seed: --count and --titled must not be negative", file=sys.stderr)
            return 2
        ids = seed(Store(state_dir), os.path.normpath(args.cwd), args.count, args.titled)
        print(json.dumps({"stateDir": str(state_dir), "sessionIds": ids}))
        return 0

    from sidecar.demo_agent.server import serve
    from sidecar.demo_agent.settings import Settings

    settings = Settings.from_env(os.environ)
    if settings.crash_at == "startup":
        return 3
    return asyncio.run(serve(settings, Store(state_dir)))
