"""The `acp-sidecar` command line."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import shlex
import sys
from pathlib import Path

from . import __version__

APP = "acp-sidecar"


def state_dir(cli_value: str | None) -> Path:
    if cli_value:
        return Path(cli_value).expanduser().resolve()
    env = os.environ.get("ACP_SIDECAR_STATE_DIR")
    if env:
        return Path(env).expanduser().resolve()
    import platformdirs  # only for this default: not on every start's path

    return Path(platformdirs.user_state_dir(APP))


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog=APP,
        description="A language server that lets LSP editors drive ACP coding agents. "
        "Speaks LSP on stdin/stdout; starts the agent as a subprocess.",
        epilog="Subcommands: `acp-sidecar demo-agent [--state-dir DIR]` runs the embedded demo agent; "
        "`acp-sidecar editor-config helix` prints a languages.toml snippet for the installed Helix.",
    )
    ap.add_argument("--version", action="version", version=f"{APP} {__version__}")
    ap.add_argument(
        "--agent", metavar="CMD", help='agent command line, e.g. "codex-acp" (default: demo agent)'
    )
    ap.add_argument("--state-dir", metavar="DIR", help="title cache and logs (default: platform state dir)")
    ap.add_argument("--log-file", metavar="PATH", help="write the sidecar's own log here")
    ap.add_argument("--stdio", action="store_true", help="speak LSP on stdin/stdout (the default)")
    ap.add_argument("--tcp", metavar="HOST:PORT", help="listen on TCP instead of stdio (debugging only)")
    ap.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    return ap


def _setup_logging(log_file: str | None, level: str) -> None:
    # pygls logs every message body at INFO (prompts included): keep it quiet.
    logging.getLogger("pygls").setLevel(logging.WARNING)
    # It logs every error answer with a traceback; a user's bad argument is not a crash.
    logging.getLogger("pygls.protocol.json_rpc").setLevel(logging.CRITICAL)
    root = logging.getLogger()
    root.setLevel(level)
    handler: logging.Handler
    if log_file:
        Path(log_file).expanduser().parent.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(Path(log_file).expanduser(), encoding="utf-8")
    else:
        # stderr: stdout carries LSP.
        handler = logging.StreamHandler(sys.stderr)
        handler.setLevel(logging.WARNING)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root.addHandler(handler)


def _seconds(variable: str, default: float) -> float:
    """A timeout from the environment in milliseconds; bad values fall back with a warning."""
    raw = os.environ.get(variable)
    if not raw:
        return default
    try:
        value = int(raw)
        if value <= 0:
            raise ValueError
    except ValueError:
        logging.getLogger(__name__).warning(
            "%s=%r is not a positive integer; using %g s", variable, raw, default
        )
        return default
    return value / 1000


def main(argv: list[str] | None = None) -> int:
    args_list = sys.argv[1:] if argv is None else argv
    if args_list[:1] == ["demo-agent"]:
        from .demo_agent import main as demo_main

        return demo_main(args_list[1:])
    # --- editor-config (infra): minimal dispatch; the lead wires the full command (issue 17). ---
    if args_list[:1] == ["editor-config"]:
        from .editor_config import main as editor_config_main

        return editor_config_main(args_list[1:])
    # --- end editor-config ---
    args = parser().parse_args(args_list)
    _setup_logging(args.log_file, args.log_level)

    from .lsp.server import LaunchConfig, build_server, serve_stdio

    launch = LaunchConfig(
        agent_command=shlex.split(args.agent) if args.agent else None,
        state_dir=state_dir(args.state_dir),
        env_agent=os.environ.get("ACP_SIDECAR_AGENT") or None,
        request_timeout=_seconds("ACP_SIDECAR_REQUEST_TIMEOUT_MS", 60.0),
        cancel_timeout=_seconds("ACP_SIDECAR_CANCEL_TIMEOUT_MS", 10.0),
    )
    server = build_server(launch)
    if args.tcp:
        host, _, port = args.tcp.rpartition(":")
        server.start_tcp(host or "127.0.0.1", int(port))
        return 0

    async def run() -> int:
        return await serve_stdio(server)

    try:
        return asyncio.run(run())
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 0


if __name__ == "__main__":
    raise SystemExit(main())
