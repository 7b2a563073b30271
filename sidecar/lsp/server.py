"""The language server: its state, the ports its helpers use, and the engine's lifecycle.

The engine stack (engine, ACP client, titles with SQLite) is imported when
`initialized` starts it, not at start-up: the editor's `initialize` is
answered as fast as a bare pygls server answers it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol
from urllib.parse import unquote

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from sidecar import __version__
from sidecar.lsp.diagnostic_sets import DiagnosticSets
from sidecar.lsp.documents import SYNC_KIND
from sidecar.lsp.editor_files import EditorFiles
from sidecar.lsp.features import LspFeatures
from sidecar.lsp.ports import ClientCaps
from sidecar.lsp.protocol import AcpProtocol
from sidecar.lsp.status_diagnostic import StatusDiagnostic
from sidecar.tasks import OwnedTasks

if TYPE_CHECKING:
    from sidecar.kernel.kernel import Kernel
    from sidecar.kernel.options import AgentSpec, EngineOptions
    from sidecar.lsp.options import Options

log = logging.getLogger(__name__)

ENGINE_START_WAIT = 60.0  # seconds a command waits for the agent's first start
ENGINE_STOP_WAIT = 8.0


class LaunchConfig(NamedTuple):
    """What the command line and the environment decided."""

    agent_command: list[str] | None
    state_dir: Path
    env_agent: str | None
    request_timeout: float = 60.0
    cancel_timeout: float = 10.0
    conversation_interval: float = 0.25  # seconds between two edits of a streaming conversation
    client_process_id: int | None = None
    log_file: str | None = None


def demo_agent_command() -> list[str]:
    return [sys.executable, "-m", "sidecar.demo_agent"]


class EditorEvents(Protocol):
    """What the shell holds of the engine's listener (the stream feature's notifier, which
    host.py builds): the editor's log, what it tells at a stop, and a failed start."""

    @property
    def log_handler(self) -> logging.Handler: ...
    def flush(self) -> None: ...
    def close(self) -> None: ...
    def on_error(self, message: str) -> None: ...


# The kernel with its features on it (`sidecar/composition.py`, which the composition root hands
# the shell as `compose`): the shell holds the kernel, and its start and stop.
ComposeEngine = Callable[["EngineOptions", EditorEvents, EditorFiles], "Kernel"]
MakeEditorEvents = Callable[["AcpLanguageServer"], EditorEvents]


class NotInitialized(Exception):
    """A command arrived before `initialized` started the engine."""


def read_client_caps(caps: types.ClientCapabilities) -> ClientCaps:
    workspace = caps.workspace
    window = caps.window
    edit = workspace.workspace_edit if workspace else None
    resource_ops = edit.resource_operations if edit and edit.resource_operations else []
    literal = caps.text_document.code_action if caps.text_document else None
    return ClientCaps(
        apply_edit=bool(workspace and workspace.apply_edit),
        document_changes=bool(edit and edit.document_changes),
        create_files=types.ResourceOperationKind.Create in resource_ops,
        progress=bool(window and window.work_done_progress),
        message_request=bool(window and window.show_message is not None),
        code_action_literals=bool(literal and literal.code_action_literal_support),
        show_document=bool(window and window.show_document and window.show_document.support),
    )


class AcpLanguageServer(LanguageServer):
    protocol: AcpProtocol

    def __init__(self, launch: LaunchConfig, compose: ComposeEngine, events: MakeEditorEvents) -> None:
        super().__init__(
            "acp-sidecar", __version__, text_document_sync_kind=SYNC_KIND, protocol_cls=AcpProtocol
        )
        self.launch = launch
        self._options: Options | None = None  # parsed at `initialized`, after the editor has its answer
        self.initialization_options: Any = None
        self.caps = ClientCaps()
        self._compose = compose
        self.kernel: Kernel | None = None  # composed at `initialized`
        self.stopping = False
        # Helix drops command results and shows errors only in its log: echo them as messages.
        self.echo_results = False
        self.client_name = ""  # clientInfo.name, lower case
        # Set while serving: watch a process of the editor and stop when it exits.
        self.watch_client_process: Callable[[int, str], None] | None = None
        self.tasks = OwnedTasks("lsp")
        self.files = EditorFiles(self)
        self.diagnostics = DiagnosticSets(self)
        self.status_diagnostic = StatusDiagnostic(self, self.diagnostics)
        # The features' LSP sides, added by the composition root (host.py) in order.
        self.features = LspFeatures()
        self.notifier = events(self)
        self._engine_task: asyncio.Task[Any] | None = None
        self._engine_ready = asyncio.Event()
        self._stop_lock = asyncio.Lock()

    # ================================================================== options
    @property
    def options(self) -> Options:
        if self._options is None:
            from sidecar.lsp.options import Options

            self._options = Options()
        return self._options

    def read_options(self, raw: Any) -> str | None:
        """Parse initializationOptions; the message naming every bad key, or None."""
        from sidecar.lsp.options import parse_options

        self._options, problem = parse_options(raw)
        return problem

    def editor_gone(self) -> None:
        """Our output to the editor broke: say nothing more; shutdown follows from stdin EOF."""
        self.stopping = True

    # ================================================================== ports
    def notify(self, method: str, params: Any) -> None:
        if self.stopping:
            return
        try:
            # Our params are plain JSON dicts: give pygls the message as one, so
            # it skips building an attrs message and unstructuring it with
            # cattrs (3-4x the cost of the encoding itself). Same writer, same
            # framing and the same bytes as `protocol.notify`, written in order
            # with pygls' own messages.
            self.protocol.send_raw({"method": method, "jsonrpc": "2.0", "params": params})
        except (BrokenPipeError, ValueError, OSError):
            # The editor is gone; shutdown follows from stdin EOF.
            self.stopping = True

    def show_message(self, kind: types.MessageType, message: str) -> None:
        if not self.stopping:
            self.window_show_message(types.ShowMessageParams(type=kind, message=message))

    def log_message(self, kind: types.MessageType, message: str) -> None:
        if not self.stopping:
            self.window_log_message(types.LogMessageParams(type=kind, message=message))

    def publish_diagnostics(self, uri: str, diagnostics: list[types.Diagnostic]) -> None:
        if not self.stopping:
            self.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics)
            )

    def show_message_request(
        self, params: types.ShowMessageRequestParams
    ) -> Awaitable[types.MessageActionItem | None]:
        result: Awaitable[types.MessageActionItem | None] = self.window_show_message_request_async(params)
        return result

    def apply_workspace_edit(
        self, params: types.ApplyWorkspaceEditParams
    ) -> Awaitable[types.ApplyWorkspaceEditResult | None]:
        result: Awaitable[types.ApplyWorkspaceEditResult | None] = self.workspace_apply_edit_async(params)
        return result

    def show_document(self, uri: str) -> Awaitable[types.ShowDocumentResult | None]:
        result: Awaitable[types.ShowDocumentResult | None] = self.window_show_document_async(
            types.ShowDocumentParams(uri=uri, take_focus=True)
        )
        return result

    def show_document_params(
        self, params: types.ShowDocumentParams
    ) -> Awaitable[types.ShowDocumentResult | None]:
        result: Awaitable[types.ShowDocumentResult | None] = self.window_show_document_async(params)
        return result

    def open_external(self, url: str) -> Awaitable[types.ShowDocumentResult | None]:
        result: Awaitable[types.ShowDocumentResult | None] = self.window_show_document_async(
            types.ShowDocumentParams(uri=url, external=True)
        )
        return result

    def clean(self, text: str, max_length: int) -> str:
        from sidecar.text_safety import sanitize_text

        return sanitize_text(text, max_length)

    def session_title(self, session_id: str) -> str:
        title = self.kernel.catalog.title_of(session_id) if self.kernel is not None else None
        return title or "ACP agent"

    def buffer(self, uri: str) -> str | None:
        """The editor's text of `uri` right now, when it is open (no I/O): the workspace has it from
        the didOpen on, before a feature has identified the document (a conversation's)."""
        found = self.workspace.text_documents.get(unquote(uri))
        return found.source if found is not None else None

    @property
    def active_session_id(self) -> str | None:
        return self.kernel.registry.active_id if self.kernel is not None else None

    @property
    def request_timeout(self) -> float:
        return self.launch.request_timeout

    def report_server_error(self, error: Exception, source: Any) -> None:
        # pygls would show "Error in server: <exception>" to the user; the log says it with its cause.
        log.error("%s: %r", getattr(source, "__name__", source), error)

    # ================================================================== engine
    def agent_command(self) -> list[str]:
        """The one agent of `--agent`, `agent.command`, `$ACP_SIDECAR_AGENT`, else the demo agent."""
        return self.legacy_agent_command() or demo_agent_command()

    def legacy_agent_command(self) -> list[str] | None:
        if self.launch.agent_command:
            return self.launch.agent_command
        if self.options.agent.command:
            return list(self.options.agent.command)
        if self.launch.env_agent:
            import shlex

            return shlex.split(self.launch.env_agent)
        return None

    def agent_specs(self) -> tuple[dict[str, AgentSpec], str]:
        """Every configured agent by name, and the default one's name (docs/protocol.md): the
        named `agents`, the one agent of `--agent` / `agent` / `$ACP_SIDECAR_AGENT` named after
        its command, and `demo`. The default: `defaultAgent`, else that one agent, else the
        first named one, else `demo`."""
        from sidecar.kernel.options import DEMO_AGENT, AgentSpec

        opts = self.options
        specs = {name: AgentSpec(name, list(a.command or []), dict(a.env)) for name, a in opts.agents.items()}
        legacy_name: str | None = None
        legacy = self.legacy_agent_command()
        if legacy:
            env = dict(opts.agent.env)
            name = Path(legacy[0]).name or "agent"
            taken = specs.get(name)
            if name == DEMO_AGENT or (taken is not None and (taken.command, taken.env) != (legacy, env)):
                name = f"{name}-agent"
            specs.setdefault(name, AgentSpec(name, legacy, env))
            legacy_name = name
        specs[DEMO_AGENT] = AgentSpec(
            DEMO_AGENT, demo_agent_command(), {} if legacy else dict(opts.agent.env)
        )
        default = opts.default_agent or legacy_name or next(iter(opts.agents), DEMO_AGENT)
        return specs, default

    def start_engine(self) -> None:
        from sidecar.kernel.options import EngineOptions

        opts = self.options
        specs, default = self.agent_specs()
        engine_options = EngineOptions(
            agent_command=specs[default].command,
            agent_env=dict(specs[default].env),
            agents=specs,
            default_agent=default,
            agent_idle_stop=float(opts.agent_idle_stop),
            state_dir=self.launch.state_dir,
            permissions=opts.permissions,
            rename_timeout_ms=opts.rename.timeout_ms,
            rename_fallback=opts.rename.fallback,
            titles_max_length=opts.titles.max_length,
            conversation_max_bytes=opts.transcript.max_bytes,
            elicitation_timeout=opts.elicitation.timeout_ms / 1000,
            request_timeout=self.launch.request_timeout,
            cancel_timeout=self.launch.cancel_timeout,
            conversation_interval=self.launch.conversation_interval,
            agent_cwd=next(iter(self.folder_paths()), None),
            log_hint=self.log_hint(),
        )
        self.kernel = self._compose(engine_options, self.notifier, self.files)
        for feature in self.features.all:
            feature.started(self.kernel)
        self._engine_task = asyncio.ensure_future(self._run_engine(self.kernel))

    async def _run_engine(self, kernel: Kernel) -> None:
        try:
            await kernel.start()
        except Exception as exc:  # a bug, not an agent problem (those are reported by the engine)
            log.exception("starting the engine failed")
            self.notifier.on_error(f"acp-sidecar could not start its engine: {exc!r}")
        finally:
            self._engine_ready.set()

    def log_hint(self) -> str:
        """Where this user finds the agent's stderr (window/logMessage) and our log file."""
        where = {
            "neovim": "Neovim's LSP log (:LspLog)",
            "helix": "Helix's log (:log-open)",
            "visual studio code": "the Output panel (ACP Sidecar)",
            "code - oss": "the Output panel (ACP Sidecar)",
            "code-server": "the Output panel (ACP Sidecar)",
        }.get(self.client_name, "the editor's LSP log (window/logMessage)")
        if self.launch.log_file:
            where += f" and {self.launch.log_file}"
        return where

    def kernel_or_raise(self) -> Kernel:
        if self.kernel is None:
            raise NotInitialized("the sidecar is not initialized yet")
        return self.kernel

    async def ready_kernel(self) -> Kernel:
        """The kernel, once its first agent start has finished (successfully or not)."""
        kernel = self.kernel_or_raise()
        try:
            await asyncio.wait_for(self._engine_ready.wait(), ENGINE_START_WAIT)
        except TimeoutError:
            log.warning(
                "the agent's first start takes over %g s; going on without waiting", ENGINE_START_WAIT
            )
        return kernel

    def kill_agent_now(self) -> None:
        if self.kernel is not None:
            self.kernel.kill_now()

    async def stop(self) -> None:
        """Stop everything we own; safe to call more than once, and concurrently."""
        async with self._stop_lock:
            if self.stopping and self._engine_task is None:
                return
            self.notifier.flush()
            if self.kernel is not None:
                try:
                    await asyncio.wait_for(self.kernel.shutdown(), ENGINE_STOP_WAIT)
                except Exception as exc:
                    log.warning(
                        "stopping the engine: %r while %s; killing the agent", exc, self.kernel.shutdown_step
                    )
                    self.kill_agent_now()
            self.stopping = True
            self.notifier.close()
            await self.tasks.aclose()
            task, self._engine_task = self._engine_task, None
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task

    # ================================================================== workspace
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
