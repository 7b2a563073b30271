"""Build the language server (its LSP handlers) and serve it on stdin/stdout.

Exit codes of `serve_stdio` (docs/protocol.md, Launch): 0 after `shutdown`
and `exit`; 1 when the editor goes away without `shutdown` (its stream ends,
or its process, watched through `--clientProcessId` or `initialize.processId`,
dies), or sends `exit` without `shutdown`; 143 on SIGTERM, SIGINT or SIGHUP.
The agent is stopped in every case.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
from typing import Any, TypeVar

from lsprotocol import types

from sidecar.lsp.code_actions import code_actions
from sidecar.lsp.commands import CommandRunner
from sidecar.lsp.documents import settle_document
from sidecar.lsp.framing import HEADER_LINE_LIMIT, LspReader
from sidecar.lsp.server import (
    AcpLanguageServer,
    ComposeEngine,
    LaunchConfig,
    MakeEditorEvents,
    read_client_caps,
)

log = logging.getLogger(__name__)

T = TypeVar("T")

EXIT_SHUTDOWN = 0
EXIT_EDITOR_GONE = 1
EXIT_SIGNAL = 143


def build_server(launch: LaunchConfig, compose: ComposeEngine, events: MakeEditorEvents) -> AcpLanguageServer:
    """The shell with its LSP handlers; `events` makes the engine's listener, `compose` the
    engine side at `initialized`."""
    server = AcpLanguageServer(launch, compose, events)
    CommandRunner(server).register()
    _register_lifecycle(server)
    _register_documents(server)
    return server


def _register_lifecycle(server: AcpLanguageServer) -> None:
    @server.feature(types.INITIALIZE)
    def initialize(ls: AcpLanguageServer, params: types.InitializeParams) -> None:
        client = params.client_info.name.lower() if params.client_info else ""
        ls.caps = read_client_caps(params.capabilities)._replace(anchored_view=client == "helix")
        ls.client_name = client
        ls.echo_results = client == "helix"
        ls.initialization_options = params.initialization_options
        if params.process_id is not None and ls.watch_client_process is not None:
            ls.watch_client_process(params.process_id, "initialize.processId")

    @server.feature(types.INITIALIZED)
    def initialized(ls: AcpLanguageServer, params: types.InitializedParams) -> None:
        logging.getLogger("sidecar").addHandler(ls.notifier.log_handler)
        problem = ls.read_options(_client_defaults(ls.client_name, ls.initialization_options))
        if problem is not None:
            ls.show_message(types.MessageType.Error, f"acp-sidecar: {problem}")
        ls.start_engine()

    @server.feature(types.SHUTDOWN)
    async def shutdown(ls: AcpLanguageServer, *args: Any) -> None:
        await ls.stop()


def _register_documents(server: AcpLanguageServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: AcpLanguageServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.files.forget(params.text_document.uri)
        ls.status_diagnostic.focus(params.text_document.uri)
        for feature in ls.features.all:
            feature.opened(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: AcpLanguageServer, params: types.DidChangeTextDocumentParams) -> None:
        settle_document(ls.workspace, params.text_document.uri)  # its changes, applied together
        ls.status_diagnostic.focus(params.text_document.uri)
        conversation = ls.features.identity(params.text_document.uri) is not None
        for feature in ls.features.all:
            feature.changed(params, conversation)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: AcpLanguageServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.files.forget(params.text_document.uri)
        ls.status_diagnostic.closed(params.text_document.uri)
        for feature in ls.features.all:
            feature.closed(params.text_document.uri)

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(
            code_action_kinds=[types.CodeActionKind.QuickFix, types.CodeActionKind.Empty]
        ),
    )
    async def code_action(
        ls: AcpLanguageServer, params: types.CodeActionParams
    ) -> list[types.CodeAction] | None:
        if ls.kernel is None:
            return None
        try:
            return await code_actions(ls, ls.features, params, ls.buffer(params.text_document.uri))
        except Exception:
            log.exception("code actions failed")
            return None


def _client_defaults(client: str, raw: Any) -> Any:
    """The options with the defaults a known client needs: Helix shows no custom notification,
    so a replayed history is not sent to it one update at a time (`notify.replayUpdates`)."""
    if client != "helix" or not isinstance(raw, dict | None):
        return raw
    options = dict(raw or {})
    notify = options.get("notify", {})
    if isinstance(notify, dict) and "replayUpdates" not in notify:
        options["notify"] = {**notify, "replayUpdates": False}
    return options


async def serve_stdio(server: AcpLanguageServer) -> int:
    """Serve on stdin/stdout in our own loop, one owner for every task; the exit code."""
    from sidecar.lsp.client_watch import ClientWatch
    from sidecar.lsp.output import BatchedWriter

    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=HEADER_LINE_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin.buffer)
    writer = BatchedWriter(sys.stdout.buffer, loop, server.editor_gone)
    server.protocol.set_writer(writer)
    main = asyncio.current_task()
    why: list[int] = []

    def stop_with(code: int) -> None:
        if code == EXIT_SIGNAL:
            server.kill_agent_now()  # a signal wants us gone now; a vanished editor can wait for a clean stop
        if why:
            return  # already stopping: a cancel now would cut the clean stop short
        why.append(code)
        if main is not None:
            main.cancel()

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop_with, EXIT_SIGNAL)
    watch = ClientWatch(lambda _pid: stop_with(EXIT_EDITOR_GONE))
    server.watch_client_process = watch.watch
    if server.launch.client_process_id is not None:
        watch.watch(server.launch.client_process_id, "--clientProcessId")
    try:
        await LspReader(reader, server.protocol).run()
        return EXIT_SHUTDOWN if server.protocol.shutting_down else EXIT_EDITOR_GONE  # the stream ended
    except asyncio.CancelledError:
        if main is not None:
            main.uncancel()  # handled: the clean stop below may still wait
        return why[0] if why else EXIT_SIGNAL
    finally:
        why.append(EXIT_SIGNAL)  # stopping now: a signal from here on only kills the agent
        await watch.aclose()
        await server.stop()
        writer.flush()
