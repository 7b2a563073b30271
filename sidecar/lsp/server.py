"""The pygls language server: lifecycle, capabilities, and wiring to the engine."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams, JsonRpcInvalidRequest
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.uris import to_fs_path

from .. import __version__
from ..core.engine import Engine, EngineOptions
from ..core.errors import SidecarError
from ..titles import sanitize_text
from .bridge import Bridge
from .options import Options
from .status_diagnostic import StatusDiagnostic

log = logging.getLogger(__name__)


@dataclass
class ClientCaps:
    apply_edit: bool = False
    document_changes: bool = False
    create_files: bool = False
    progress: bool = False
    message_request: bool = False
    code_action_literals: bool = False


@dataclass
class LaunchConfig:
    agent_command: list[str] | None
    state_dir: Path
    env_agent: str | None
    request_timeout: float = 60.0
    cancel_timeout: float = 10.0


class _Malformed:
    """A request whose params pygls could not structure: it still deserves an answer."""

    def __init__(self, msg_id: Any, method: str, reason: str) -> None:
        self.id = msg_id
        self.method = method
        self.reason = reason


class AcpProtocol(LanguageServerProtocol):
    """Every request gets exactly one answer, also where pygls would stay silent:
    requests after `shutdown` (LSP wants InvalidRequest) and requests whose params
    do not fit the method's type (pygls logs them and answers nothing)."""

    def structure_message(self, data: dict[str, Any]) -> Any:
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if "jsonrpc" in data and "id" in data and isinstance(data.get("method"), str):
                return _Malformed(data["id"], data["method"], exc.message or type(exc).__name__)
            raise

    def handle_message(self, message: Any) -> None:
        if isinstance(message, _Malformed):
            error = JsonRpcInvalidParams(f"{message.method}: invalid params ({message.reason})")
            self._send_response(message.id, error=error.to_response_error())
            return
        method = getattr(message, "method", None)
        if self._shutdown and method not in (None, types.EXIT) and getattr(message, "id", None) is not None:
            self._send_response(
                message.id,
                error=JsonRpcInvalidRequest(f"{method}: the server is shutting down").to_response_error(),
            )
            return
        super().handle_message(message)


class AcpLanguageServer(LanguageServer):
    def __init__(self, launch: LaunchConfig) -> None:
        super().__init__("acp-sidecar", __version__, protocol_cls=AcpProtocol)
        self.launch = launch
        self.options = Options()
        self.option_problems: list[str] = []
        self.engine: Engine | None = None
        self.bridge = Bridge(self)
        self.status_diagnostic = StatusDiagnostic(self)
        self.stopping = False
        # Helix drops command results and shows errors only in its log: echo them as messages.
        self.echo_results = False
        self._caps = ClientCaps()
        self._engine_task: asyncio.Task[Any] | None = None
        self._engine_ready = asyncio.Event()

    # ------------------------------------------------------------------ capabilities
    def read_client_caps(self, caps: types.ClientCapabilities) -> None:
        workspace = caps.workspace
        window = caps.window
        edit = workspace.workspace_edit if workspace else None
        resource_ops = edit.resource_operations if edit and edit.resource_operations else []
        literal = caps.text_document.code_action if caps.text_document else None
        self._caps = ClientCaps(
            apply_edit=bool(workspace and workspace.apply_edit),
            document_changes=bool(edit and edit.document_changes),
            create_files=types.ResourceOperationKind.Create in resource_ops,
            progress=bool(window and window.work_done_progress),
            message_request=bool(window and window.show_message is not None),
            code_action_literals=bool(literal and literal.code_action_literal_support),
        )

    def client_caps(self) -> ClientCaps:
        return self._caps

    def supports_progress(self) -> bool:
        return self._caps.progress

    def supports_message_request(self) -> bool:
        return self._caps.message_request

    def clean(self, text: str, max_length: int) -> str:
        return sanitize_text(text, max_length)

    # ------------------------------------------------------------------ engine
    def agent_command(self) -> list[str]:
        if self.launch.agent_command:
            return self.launch.agent_command
        if self.options.agent_command:
            return self.options.agent_command
        if self.launch.env_agent:
            import shlex

            return shlex.split(self.launch.env_agent)
        return [sys.executable, "-m", "sidecar.demo_agent"]

    def start_engine(self) -> None:
        opts = self.options
        engine_options = EngineOptions(
            agent_command=self.agent_command(),
            agent_env=opts.agent_env,
            state_dir=self.launch.state_dir,
            permissions=opts.permissions,
            rename_timeout_ms=opts.rename_timeout_ms,
            rename_fallback=opts.rename_fallback,
            titles_max_length=opts.titles_max_length,
            request_timeout=self.launch.request_timeout,
            cancel_timeout=self.launch.cancel_timeout,
        )
        self.engine = Engine(engine_options, self.bridge, self.bridge)
        self._engine_task = asyncio.ensure_future(self._run_engine(self.engine))

    async def _run_engine(self, engine: Engine) -> None:
        try:
            await engine.start()
        finally:
            self._engine_ready.set()

    def engine_or_raise(self) -> Engine:
        if self.engine is None:
            raise SidecarError(-32002, "the sidecar is not initialized yet")
        return self.engine

    async def ready_engine(self) -> Engine:
        """The engine, once its first agent start has finished (successfully or not)."""
        engine = self.engine_or_raise()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._engine_ready.wait(), 60)
        return engine

    def engine_title(self, session_id: str) -> str:
        engine = self.engine
        title = engine.titles.title_of(session_id) if engine else None
        return title or "ACP agent"

    async def stop(self) -> None:
        """Stop everything we own; safe to call more than once."""
        if self.stopping:
            return
        self.bridge.coalescer.flush()
        if self.engine is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.engine.shutdown(), 8)
        self.stopping = True
        await self.bridge.aclose()
        if self._engine_task is not None:
            self._engine_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._engine_task

    # ------------------------------------------------------------------ workspace
    def folder_paths(self) -> list[str]:
        try:
            folders = self.workspace.folders
        except RuntimeError:
            return []
        paths: list[str] = []
        for folder in folders.values():
            path = to_fs_path(folder.uri)
            if path:
                paths.append(os.path.normpath(path))
        if not paths and self.workspace.root_path:
            paths.append(os.path.normpath(self.workspace.root_path))
        return paths

    def default_cwd(self, uri: str | None) -> str | None:
        folders = self.folder_paths()
        if uri:
            path = to_fs_path(uri)
            if path:
                best = None
                for folder in folders:
                    if (path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)) and (
                        best is None or len(folder) > len(best)
                    ):
                        best = folder
                if best:
                    return best
        return folders[0] if folders else None


def build_server(launch: LaunchConfig) -> AcpLanguageServer:
    from . import features

    server = AcpLanguageServer(launch)
    features.register(server)
    return server


async def serve_stdio(server: AcpLanguageServer) -> int:
    """Run the server on stdin/stdout in our own loop: one owner for every task."""
    from pygls.io_ import StdoutWriter, run_async

    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=2**26)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin.buffer)
    server.protocol.set_writer(StdoutWriter(sys.stdout.buffer))
    main = asyncio.current_task()
    stop_event = __import__("threading").Event()

    def on_signal() -> None:
        if server.engine is not None:
            server.engine.kill_agent_now()
        if main is not None:
            main.cancel()

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, on_signal)
    try:
        await run_async(stop_event, reader, server.protocol, log, server.report_server_error)  # type: ignore[arg-type]
        return 0 if server.protocol._shutdown else 1  # editor went away (stdin EOF)
    except asyncio.CancelledError:
        return 143
    finally:
        await server.stop()
