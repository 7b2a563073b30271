"""The `acp-sidecar` command line."""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import os
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from sidecar import __version__

if TYPE_CHECKING:
    from sidecar.lsp.server import AcpLanguageServer

APP = "acp-sidecar"


def state_dir(cli_value: str | None) -> Path:
    if cli_value:
        return Path(cli_value).expanduser().resolve()
    env = os.environ.get("ACP_SIDECAR_STATE_DIR")
    if env:
        return Path(env).expanduser().resolve()
    import platformdirs  # only for this default: not on every start's path

    return Path(platformdirs.user_state_dir(APP))


# LSP's other transports, as LSP clients pass them: refused, we speak stdio.
OTHER_TRANSPORTS = ("--pipe", "--socket", "--port")
YOUNG_COLLECTION_EVERY = 20_000  # container allocations between two young GC collections (see main)
TTY_NOTE = (
    f"{APP}: this is a language server: your editor starts it and speaks LSP on stdin/stdout, "
    f"so there is nothing to type here. Editor setup (Neovim, Helix, VS Code): {APP} editor-config "
    f"nvim|helix|vscode prints it from this install; options: {APP} --help. Ctrl-D quits.\n"
)


def _columns() -> int:
    """The terminal's width as shutil would say it, without importing shutil (and its
    compression modules) on every start: argparse builds a formatter per argument."""
    try:
        return int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        pass
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        return 80


class _HelpFormatter(argparse.HelpFormatter):
    def __init__(self, prog: str) -> None:
        super().__init__(prog, width=_columns() - 2)


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog=APP,
        formatter_class=_HelpFormatter,
        description="A language server that lets LSP editors drive ACP coding agents. "
        "Speaks LSP on stdin/stdout; starts the agent as a subprocess. Your editor starts it.",
        epilog="Subcommands: `acp-sidecar demo-agent [--state-dir DIR]` runs the embedded demo agent; "
        "`acp-sidecar editor-config nvim|helix|vscode` prints an editor's setup from this install "
        "(the Neovim plugin's directory and a lazy.nvim spec, Helix's languages.toml and config.toml "
        "parts, the VS Code extension; `acp-sidecar editor-config --help`). "
        "Exit codes: 0 after the editor's shutdown and exit; 1 when the editor goes away without "
        "shutdown; 2 for a bad command line; 143 on SIGTERM/SIGINT/SIGHUP.",
    )
    ap.add_argument("--version", action="version", version=f"{APP} {__version__}")
    ap.add_argument(
        "--agent",
        metavar="CMD",
        help='the agent\'s command line, split like a shell would, e.g. "codex-acp" '
        "(default: initializationOptions.agent.command, else $ACP_SIDECAR_AGENT, else the demo agent)",
    )
    ap.add_argument(
        "--state-dir",
        metavar="DIR",
        help="where state is written (default: $ACP_SIDECAR_STATE_DIR, else the platform state dir, "
        "e.g. ~/.local/state/acp-sidecar): titles.sqlite3 (the title cache), agents.json (agent "
        "names), features/conversation/ (one document per session) and the demo agent's sessions "
        "(demo-agent/); private to you. No logs are written there (see --log-file)",
    )
    ap.add_argument(
        "--log-file",
        metavar="PATH",
        help="append the sidecar's own log to PATH (default: no log file; warnings go to stderr and "
        "to the editor's log)",
    )
    ap.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"],
                    help="what --log-file receives (default INFO)")  # fmt: skip
    ap.add_argument("--stdio", action="store_true", help="speak LSP on stdin/stdout (the default)")
    ap.add_argument(
        "--clientProcessId",
        metavar="PID",
        type=int,
        dest="client_process_id",
        help="the editor's process: exit (agent included) when it dies",
    )
    ap.add_argument("--tcp", metavar="HOST:PORT", help="listen on TCP instead of stdio (debugging only)")
    for flag in OTHER_TRANSPORTS:
        ap.add_argument(flag, nargs="?", const="", default=None, help=argparse.SUPPRESS)
    return ap


def _refuse_other_transports(ap: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    for flag in OTHER_TRANSPORTS:
        if getattr(args, flag.lstrip("-")) is not None:
            ap.error(
                f"{flag} is not supported: {APP} speaks LSP over stdio only "
                "(configure your editor's client for stdio; --stdio is accepted)"
            )


def _setup_logging(log_file: str | None, level: str) -> None:
    # pygls logs every message body at INFO (prompts included): keep it quiet.
    logging.getLogger("pygls").setLevel(logging.WARNING)
    # It logs every error answer with a traceback; a user's bad argument is not a crash.
    from sidecar.lsp.pygls_internals import JSON_RPC_LOGGER

    logging.getLogger(JSON_RPC_LOGGER).setLevel(logging.CRITICAL)
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


def _build(args: argparse.Namespace) -> AcpLanguageServer:
    _setup_logging(args.log_file, args.log_level)
    from sidecar.host import build_server
    from sidecar.lsp.server import LaunchConfig

    launch = LaunchConfig(
        agent_command=shlex.split(args.agent) if args.agent else None,
        state_dir=state_dir(args.state_dir),
        env_agent=os.environ.get("ACP_SIDECAR_AGENT") or None,
        request_timeout=_seconds("ACP_SIDECAR_REQUEST_TIMEOUT_MS", 60.0),
        cancel_timeout=_seconds("ACP_SIDECAR_CANCEL_TIMEOUT_MS", 10.0),
        conversation_interval=_seconds("ACP_SIDECAR_TRANSCRIPT_INTERVAL_MS", 0.25),
        client_process_id=args.client_process_id,
        log_file=str(Path(args.log_file).expanduser()) if args.log_file else None,
    )
    return build_server(launch)


def main(argv: list[str] | None = None) -> int:
    args_list = sys.argv[1:] if argv is None else argv
    if args_list[:1] == ["demo-agent"]:
        from sidecar.demo_agent import main as demo_main

        return demo_main(args_list[1:])
    if args_list[:1] == ["editor-config"]:
        from sidecar.editor_config import main as editor_config_main

        return editor_config_main(args_list[1:])
    ap = parser()
    args = ap.parse_args(args_list)
    _refuse_other_transports(ap, args)
    if sys.stdin.isatty() and not args.tcp:
        sys.stderr.write(TTY_NOTE)
        sys.stderr.flush()
    # Importing the LSP layer (lsprotocol's hundreds of classes) and building the server only
    # create objects that live as long as the process: collecting during that is time lost before
    # `initialize` can be answered, and frozen they are never walked by a later collection.
    gc.disable()
    try:
        server = _build(args)
    finally:
        gc.freeze()
        # A long replay or stream allocates hundreds of thousands of short-lived containers (each
        # frame's dicts) while a backlog of them waits for the conversation worker: at the default
        # 700 allocations per young collection, collecting was an eighth of a 100 000-update
        # load's CPU. 20 000 keeps a young collection short (a millisecond) and makes them rare.
        gc.set_threshold(YOUNG_COLLECTION_EVERY, 10, 10)
        gc.enable()
    # The event loop answers the editor and reads the agent; worker threads render documents
    # and write titles. A thread waiting for the GIL gets it after the holder's switch interval:
    # 1 ms instead of 5 keeps the loop from stalling behind a long render (a 100 000-update
    # replay is answered in 1.1 s instead of 1.6 s, its document as soon).
    sys.setswitchinterval(0.001)
    if args.tcp:
        host, _, port = args.tcp.rpartition(":")
        server.start_tcp(host or "127.0.0.1", int(port))
        return 0

    from sidecar.lsp.app import serve_stdio

    async def run() -> int:
        return await serve_stdio(server)

    try:
        return asyncio.run(run())
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 0


if __name__ == "__main__":
    raise SystemExit(main())
