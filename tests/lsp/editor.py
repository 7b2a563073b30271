"""A test editor: pytest-lsp's client driving the real sidecar over a real pipe.

Profiles mirror the capabilities of real editors, so every fallback path runs:
Neovim 0.11 and VS Code from pytest-lsp's captured snapshots, Helix as the
real Helix of tests/editors/helix sends them (recorded in helix_capabilities.json).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import os
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest_lsp
from lsprotocol import types
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    default_converter,
)
from pytest_lsp import ClientServerConfig, LanguageClient
from pytest_lsp.client import register_lsp_features
from pytest_lsp.protocol import LanguageClientProtocol

from tests.procs import descendants

SIDECAR = str(Path(sys.executable).with_name("acp-sidecar"))
PROFILES = ("neovim", "vscode", "helix")  # "helix-release" too, by name, for its own paths
ACP_METHODS = (
    "acp/status",
    "acp/sessionInfo",
    "acp/sessionUpdate",
    "acp/turn",
    "acp/permission",
    "acp/terminal",
    "acp/elicitation",
)


HELIX_CAPABILITIES = Path(__file__).with_name("helix_capabilities.json")


def helix_capabilities() -> types.ClientCapabilities:
    """What the Helix that runs here (Debian sid's hx, 25.07.1+20260723) sends in `initialize`.

    Recorded from its `hx -v` log; tests/editors/helix checks the recording against the real
    Helix. Unlike the 25.07.1 release it offers `window.showMessage.messageActionItem` (a
    popup for showMessageRequest) and `window.showDocument`; positionEncodings utf-8 first.
    Helix also sends `workspace.diagnostic` (the spec's key is `diagnostics`): lsprotocol
    drops it here as it does in the sidecar, so the sidecar sees the same capabilities.
    """
    recorded = json.loads(HELIX_CAPABILITIES.read_text())
    capabilities: types.ClientCapabilities = default_converter().structure(recorded, types.ClientCapabilities)
    return capabilities


def helix_release_capabilities() -> types.ClientCapabilities:
    """The Helix 25.07.1 release (not runnable here) as FIELD-NOTES.md records it: no
    showMessageRequest, no showDocument. Its users still get permissions as code actions."""
    return types.ClientCapabilities(
        window=types.WindowClientCapabilities(work_done_progress=True),
        workspace=types.WorkspaceClientCapabilities(
            apply_edit=True,
            workspace_edit=types.WorkspaceEditClientCapabilities(
                document_changes=True,
                resource_operations=[
                    types.ResourceOperationKind.Create,
                    types.ResourceOperationKind.Rename,
                    types.ResourceOperationKind.Delete,
                ],
            ),
            execute_command=types.ExecuteCommandClientCapabilities(dynamic_registration=False),
            configuration=True,
            workspace_folders=True,
        ),
        text_document=types.TextDocumentClientCapabilities(
            code_action=types.CodeActionClientCapabilities(
                code_action_literal_support=types.ClientCodeActionLiteralOptions(
                    code_action_kind=types.ClientCodeActionKindOptions(value_set=["", "quickfix", "refactor"])
                )
            )
        ),
        general=types.GeneralClientCapabilities(
            position_encodings=[
                types.PositionEncodingKind.Utf8,
                types.PositionEncodingKind.Utf32,
                types.PositionEncodingKind.Utf16,
            ]
        ),
    )


def capabilities(profile: str) -> types.ClientCapabilities:
    if profile == "neovim":
        return pytest_lsp.client_capabilities("neovim@v0.11.0")
    if profile == "vscode":
        return pytest_lsp.client_capabilities("visual-studio-code")
    if profile == "helix":
        return helix_capabilities()
    if profile == "helix-release":
        return helix_release_capabilities()
    raise ValueError(profile)


CLIENT_INFO = {
    "neovim": types.ClientInfo(name="Neovim", version="0.11.0"),
    "vscode": types.ClientInfo(name="Visual Studio Code", version="1.99.0"),
    "helix": types.ClientInfo(name="helix", version="25.07.1"),
    "helix-release": types.ClientInfo(name="helix", version="25.07.1"),
}


def _plain(obj: Any, cls: Any) -> Any:
    # pygls turns unknown params into namedtuples, renaming keys like `_meta`: keep JSON as JSON.
    return cls(**obj)


def plain_converter() -> Any:
    converter = default_converter()
    for cls in (JsonRPCNotification, JsonRPCRequestMessage, JsonRPCResponseMessage):
        converter.register_structure_hook(cls, _plain)

    # lsprotocol takes any item with a `command` key for a Command, so a CodeAction that
    # carries both `edit` and `command` would lose its edit: tell them apart by the type.
    def command_or_action(obj: Any, _cls: Any) -> Any:
        if isinstance(obj.get("command"), str):
            return converter.structure(obj, types.Command)
        return converter.structure(obj, types.CodeAction)

    converter.register_structure_hook(types.Command | types.CodeAction, command_or_action)
    return converter


class FastClientProtocol(LanguageClientProtocol):
    """pytest-lsp's protocol, with the sidecar's own notifications (acp/*, of no LSP type) handed
    on at once. pygls tells a message's kind by `isinstance` against runtime Protocols, which on
    Python 3.11 costs more than the rest of its handling: a burst of thousands of notifications
    made the test client, not the sidecar, the slow part of a timed round trip
    (tests/lsp/test_loop_free.py). Everything else goes through pygls as before."""

    def handle_message(self, message: Any) -> None:
        if type(message) is JsonRPCNotification and message.jsonrpc == self.VERSION and not self._shutdown:
            contextvars.copy_context().run(self._handle_notification, message.method, message.params)
            return
        super().handle_message(message)


class Editor:
    """What a test sees of an editor: notifications, requests answered, commands sent."""

    def __init__(self, client: LanguageClient, profile: str, workspace: Path) -> None:
        self.client = client
        self.profile = profile
        self.workspace = workspace
        self.notes: list[tuple[float, str, Any]] = []
        self._waiters: list[asyncio.Future[None]] = []  # wait_for calls waiting for a new note
        self.message_requests: list[types.ShowMessageRequestParams] = []
        self.applied_edits: list[types.ApplyWorkspaceEditParams] = []
        self.permission_choice: str | None = "Allow"  # action title to click; None = dismiss
        # Answers to the next showMessageRequests, in order (None = dismiss); then permission_choice.
        self.message_answers: list[str | None] = []
        self.apply_edits = True
        self.apply_edit_never_answers = False
        # Set to apply edits to `docs` like an editor does (see tests/lsp/buffers.py).
        self.edit_applier: Callable[[Any], Awaitable[types.ApplyWorkspaceEditResult]] | None = None
        self.hold_message_requests = False
        self.docs: dict[str, tuple[int, str]] = {}
        self.init_result: types.InitializeResult | None = None

    # ------------------------------------------------------------------ notifications
    def _record(self, method: str, params: Any) -> None:
        """A notification, recorded as it arrives (no task of its own: a burst of thousands must
        not make the test client the slow part of what a test times)."""
        self.notes.append((time.monotonic(), method, params))
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    def of(self, method: str) -> list[Any]:
        return [p for _, m, p in self.notes if m == method]

    def mark(self) -> int:
        return len(self.notes)

    async def wait_for(
        self, method: str, pred: Callable[[Any], bool] = lambda _p: True, timeout: float = 30, start: int = 0
    ) -> Any:
        idx = start
        async with asyncio.timeout(timeout):
            while True:
                while idx < len(self.notes):
                    _, m, p = self.notes[idx]
                    idx += 1
                    if m == method and pred(p):
                        return p
                waiter = asyncio.get_running_loop().create_future()
                self._waiters.append(waiter)
                await waiter

    async def wait_turn_end(self, turn_id: str, timeout: float = 30) -> dict[str, Any]:
        end: dict[str, Any] = await self.wait_for(
            "acp/turn", lambda t: t["turnId"] == turn_id and t["state"] == "ended", timeout
        )
        return end

    def turn_events(self, turn_id: str) -> list[dict[str, Any]]:
        return [t for t in self.of("acp/turn") if t["turnId"] == turn_id]

    def text_of(self, turn_id: str, kind: str = "agent_message_chunk") -> str:
        return "".join(
            u["update"]["content"]["text"]
            for u in self.of("acp/sessionUpdate")
            if u["turnId"] == turn_id
            and u["update"].get("sessionUpdate") == kind
            and isinstance(u["update"].get("content"), dict)
            and isinstance(u["update"]["content"].get("text"), str)
        )

    async def wait_message(self, pred: Callable[[str], bool], timeout: float = 10) -> str:
        """A window/showMessage whose text matches (pytest-lsp collects them)."""
        async with asyncio.timeout(timeout):
            while True:
                for message in self.client.messages:
                    if pred(message.message):
                        return str(message.message)
                await asyncio.sleep(0.02)

    # ------------------------------------------------------------------ commands
    async def command(self, name: str, *args: Any, timeout: float = 30) -> Any:
        async with asyncio.timeout(timeout):
            return await self.client.workspace_execute_command_async(
                types.ExecuteCommandParams(command=name, arguments=list(args))
            )

    async def prompt_and_wait(
        self, text: str, timeout: float = 60, **extra: Any
    ) -> tuple[dict[str, Any], Any]:
        admitted = await self.command("acp.prompt", {"text": text, **extra})
        end = await self.wait_turn_end(admitted["turnId"], timeout)
        return admitted, end

    # ------------------------------------------------------------------ documents
    async def code_actions(self, uri: str, line: int = 0, end_character: int = 0) -> list[types.CodeAction]:
        """The code actions on `uri` at line `line` (a selection up to `end_character`)."""
        found = await self.client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                range=types.Range(
                    start=types.Position(line=line, character=0),
                    end=types.Position(line=line, character=end_character),
                ),
                context=types.CodeActionContext(diagnostics=[]),
            )
        )
        return [a for a in found or [] if isinstance(a, types.CodeAction)]

    def open(self, path: Path, text: str | None = None, language: str = "plaintext") -> str:
        uri = path.as_uri()
        content = path.read_text() if text is None else text
        self.docs[uri] = (1, content)
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(uri=uri, language_id=language, version=1, text=content)
            )
        )
        return uri

    def change(self, uri: str, text: str) -> None:
        version = self.docs[uri][0] + 1
        self.docs[uri] = (version, text)
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )


def _install_handlers(client: LanguageClient, editor_ref: list[Editor]) -> None:
    for method in ACP_METHODS:

        def make(m: str) -> Callable[..., Any]:
            def handler(_client: LanguageClient, params: Any) -> None:
                editor_ref[0]._record(m, params)

            return handler

        client.feature(method)(make(method))

    @client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    async def show_message_request(_client: LanguageClient, params: Any) -> Any:
        editor = editor_ref[0]
        editor.message_requests.append(params)
        while editor.hold_message_requests:
            await asyncio.sleep(0.05)
        if editor.message_answers:
            wanted = editor.message_answers.pop(0)
            return next((a for a in params.actions or [] if a.title == wanted), None)
        for action in params.actions or []:
            if editor.permission_choice is not None and action.title == editor.permission_choice:
                return action
        return None

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    async def apply_edit(_client: LanguageClient, params: Any) -> types.ApplyWorkspaceEditResult:
        editor = editor_ref[0]
        editor.applied_edits.append(params)
        if editor.apply_edit_never_answers:
            await asyncio.Event().wait()
        if not editor.apply_edits:
            return types.ApplyWorkspaceEditResult(applied=False, failure_reason="the user said no")
        if editor.edit_applier is not None:
            return await editor.edit_applier(params)
        return types.ApplyWorkspaceEditResult(applied=True)


def applied_text(edit: types.WorkspaceEdit) -> str:
    """The text an edit inserts (the sidecar's edits replace whole files: the new file)."""
    if edit.document_changes:
        return "".join(
            e.new_text
            for change in edit.document_changes
            if isinstance(change, types.TextDocumentEdit)
            for e in change.edits
        )
    return "".join(e.new_text for edits in (edit.changes or {}).values() for e in edits)


@contextlib.asynccontextmanager
async def open_editor(
    profile: str,
    workspace: Path,
    state_dir: Path,
    *,
    init_options: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
    extra_args: list[str] | None = None,
    wait_idle: bool = True,
) -> AsyncIterator[Editor]:
    """Start the sidecar, initialize it as `profile` would, and always tear it down."""
    server_env = dict(os.environ)
    server_env.pop("ACP_SIDECAR_AGENT", None)
    server_env["ACP_SIDECAR_STATE_DIR"] = str(state_dir)
    server_env.update(env or {})
    editor_ref: list[Editor] = []

    def factory() -> LanguageClient:
        client = LanguageClient(converter_factory=plain_converter, protocol_cls=FastClientProtocol)
        register_lsp_features(client)
        _install_handlers(client, editor_ref)
        return client

    config = ClientServerConfig(
        server_command=[SIDECAR, "--state-dir", str(state_dir), *(extra_args or [])],
        server_env=server_env,
        client_factory=factory,
    )
    client = await config.start()
    editor = Editor(client, profile, workspace)
    editor_ref.append(editor)
    server = client._server
    try:
        async with asyncio.timeout(30):
            editor.init_result = await client.initialize_session(
                types.InitializeParams(
                    capabilities=capabilities(profile),
                    client_info=CLIENT_INFO[profile],
                    root_uri=workspace.as_uri(),
                    workspace_folders=[types.WorkspaceFolder(uri=workspace.as_uri(), name=workspace.name)],
                    initialization_options=init_options or {},
                )
            )
        if wait_idle:
            await editor.wait_for("acp/status", lambda s: s["state"] == "idle", timeout=30)
        yield editor
    finally:
        kids = descendants(server.pid) if server is not None else set()
        with contextlib.suppress(Exception):
            async with asyncio.timeout(15):
                await client.shutdown_session()
        if server is not None and server.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                server.kill()
        with contextlib.suppress(Exception):
            async with asyncio.timeout(10):
                await client.stop()
        for pid in kids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, 9)
