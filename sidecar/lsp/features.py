"""LSP handlers: lifecycle, workspace/executeCommand, textDocument/codeAction."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.uris import to_fs_path

from ..acp.errors import AcpError
from ..core import errors
from ..core.engine import Engine, PromptContext
from .code_actions import code_actions
from .edits import whole_file_edit
from .options import parse_options
from .server import AcpLanguageServer

log = logging.getLogger(__name__)

JsonObj = dict[str, Any]
Handler = Callable[[AcpLanguageServer, JsonObj], Awaitable[Any]]

# command -> (handler, key that a single positional string argument fills)
COMMANDS: dict[str, tuple[Handler, str | None]] = {}


def command(name: str, shortcut: str | None = None) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        COMMANDS[name] = (fn, shortcut)
        return fn

    return register


def _args(name: str, shortcut: str | None, raw: tuple[Any, ...]) -> JsonObj:
    """One JSON object argument, or the positional shortcut for editors that pass plain values."""
    if not raw:
        return {}
    if len(raw) == 1 and isinstance(raw[0], dict):
        return dict(raw[0])
    if len(raw) == 1 and (raw[0] is None or raw[0] == []):
        return {}  # Lua clients encode an empty table as [].
    if shortcut is not None and len(raw) == 1 and isinstance(raw[0], str):
        return {shortcut: raw[0]}
    if shortcut is not None and len(raw) > 1 and all(isinstance(a, str) for a in raw):
        # Helix splits unquoted words: join them back into one value.
        return {shortcut: " ".join(raw)}
    form = f'{{...}} or "{shortcut.upper()}"' if shortcut else "{...}"
    raise errors.invalid(f"{name} takes one argument: {form}")


def _str_or_none(args: JsonObj, key: str) -> str | None:
    value = args.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise errors.invalid(f"{key} must be a non-empty string")
    return value


def _bool(args: JsonObj, key: str) -> bool:
    value = args.get(key, False)
    if not isinstance(value, bool):
        raise errors.invalid(f"{key} must be true or false")
    return value


def _cwd(ls: AcpLanguageServer, args: JsonObj) -> str | None:
    cwd = _str_or_none(args, "cwd")
    if cwd is not None:
        return cwd
    return ls.default_cwd(_str_or_none(args, "uri"))


# ====================================================================== commands
@command("acp.session.new")
async def session_new(ls: AcpLanguageServer, args: JsonObj) -> Any:
    engine = await ls.ready_engine()
    cwd = _cwd(ls, args)
    if cwd is None:
        raise errors.invalid("no cwd given and no workspace folder to default to")
    return {"sessionId": await engine.new_session(cwd)}


@command("acp.session.list")
async def session_list(ls: AcpLanguageServer, args: JsonObj) -> Any:
    engine = await ls.ready_engine()
    cwd = _str_or_none(args, "cwd")
    refresh = _bool(args, "refresh")
    return {"sessions": await engine.list_sessions(cwd, refresh, ls.folder_paths())}


@command("acp.session.load", "sessionId")
async def session_load(ls: AcpLanguageServer, args: JsonObj) -> Any:
    engine = await ls.ready_engine()
    session_id = _str_or_none(args, "sessionId")
    if session_id is None:
        raise errors.invalid("sessionId is required")
    cwd = _str_or_none(args, "cwd")
    return {
        "sessionId": await engine.load_session(session_id, cwd, ls.default_cwd(_str_or_none(args, "uri")))
    }


@command("acp.prompt", "text")
async def prompt(ls: AcpLanguageServer, args: JsonObj) -> Any:
    engine = await ls.ready_engine()
    text = args.get("text")
    uri = _str_or_none(args, "uri")
    context = _context(ls, uri, args.get("range")) if uri else None
    return await engine.prompt(text, _str_or_none(args, "sessionId"), _cwd(ls, args), context)


def _context(ls: AcpLanguageServer, uri: str, raw_range: Any) -> PromptContext:
    doc = ls.workspace.text_documents.get(uri)
    if doc is not None:
        source = doc.source
    else:
        path = to_fs_path(uri)
        if not path:
            raise errors.invalid(f"uri {uri!r:.200} is not a file the sidecar can read")
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                source = fh.read()
        except OSError as exc:
            raise errors.invalid(f"cannot read {path}: {exc.strerror}") from None
    if raw_range is None:
        return PromptContext(uri=uri, text=source)
    try:
        rng = ls.protocol._converter.structure(raw_range, types.Range)
    except Exception:
        raise errors.invalid("range must be an LSP Range {start: {line, character}, end: {...}}") from None
    lines = source.splitlines(keepends=True)
    codec = ls.workspace.position_codec
    start = codec.position_from_client_units(lines, rng.start)
    end = codec.position_from_client_units(lines, rng.end)
    if (end.line, end.character) < (start.line, start.character):
        start, end = end, start
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))

    def offset(pos: Any) -> int:
        line, character = int(pos.line), int(pos.character)
        if line >= len(lines):
            return offsets[-1]
        return offsets[line] + min(character, len(lines[line]))

    selected = source[offset(start) : offset(end)]
    label = f"lines {start.line + 1}-{end.line + 1}"
    return PromptContext(uri=uri, text=selected, label=label)


@command("acp.cancel")
async def cancel(ls: AcpLanguageServer, args: JsonObj) -> Any:
    engine = await ls.ready_engine()
    return {"cancelled": await engine.cancel(_str_or_none(args, "sessionId"))}


@command("acp.session.rename", "title")
async def rename(ls: AcpLanguageServer, args: JsonObj) -> Any:
    engine = await ls.ready_engine()
    return await engine.rename(args.get("title"), _str_or_none(args, "sessionId"))


@command("acp.session.setMode", "modeId")
async def set_mode(ls: AcpLanguageServer, args: JsonObj) -> Any:
    engine = await ls.ready_engine()
    return await engine.set_mode(args.get("modeId"), _str_or_none(args, "sessionId"))


@command("acp.session.setModel", "modelId")
async def set_model(ls: AcpLanguageServer, args: JsonObj) -> Any:
    engine = await ls.ready_engine()
    return await engine.set_model(args.get("modelId"), _str_or_none(args, "sessionId"))


@command("acp.session.setConfigOption")
async def set_config_option(ls: AcpLanguageServer, args: JsonObj) -> Any:
    engine = await ls.ready_engine()
    if "value" not in args:
        raise errors.invalid("value is required")
    return await engine.set_config_option(
        args.get("configId"), args.get("value"), _str_or_none(args, "sessionId")
    )


@command("acp.edit.apply")
async def edit_apply(ls: AcpLanguageServer, args: JsonObj) -> Any:
    engine = await ls.ready_engine()
    diffs = engine.tool_call_diffs(args.get("sessionId"), args.get("toolCallId"))
    return {"applied": await apply_diffs(ls, engine, diffs)}


async def apply_diffs(ls: AcpLanguageServer, engine: Engine, diffs: list[JsonObj]) -> bool:
    caps = ls.client_caps()
    if not caps.apply_edit:
        raise errors.SidecarError(errors.CAPABILITY, "the editor does not support workspace/applyEdit")
    for diff in diffs:
        if _current(ls, diff)[1] == diff.get("newText"):
            continue  # already applied (e.g. by the code action's own edit preview)
        edit = diff_edit(ls, diff)
        if edit is None:
            return False
        try:
            await ls.bridge.apply_edit(edit, "Apply agent edit")
        except errors.SidecarError:
            return False
    return True


def _current(ls: AcpLanguageServer, diff: JsonObj) -> tuple[str, str | None]:
    """The diff's file as (uri, current text): the open buffer first, else disk (None: no file)."""
    from pathlib import Path

    path = Path(str(diff.get("path")))
    doc = ls.bridge._document_for(path)
    if doc is not None:
        return doc.uri, doc.source
    text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None
    return path.as_uri(), text


def diff_edit(ls: AcpLanguageServer, diff: JsonObj) -> types.WorkspaceEdit | None:
    """The WorkspaceEdit that writes a diff's newText over the current file (open buffer first)."""
    new_text = diff.get("newText")
    if not isinstance(new_text, str):
        return None
    caps = ls.client_caps()
    uri, current = _current(ls, diff)
    return whole_file_edit(
        uri,
        current,
        new_text,
        ls.workspace,
        document_changes=caps.document_changes,
        create_ok=caps.create_files,
    )


@command("acp.permission.respond")
async def permission_respond(ls: AcpLanguageServer, args: JsonObj) -> Any:
    engine = await ls.ready_engine()
    engine.respond_permission(args.get("requestId"), _str_or_none(args, "optionId") or "")
    return {}


@command("acp.authenticate", "methodId")
async def authenticate(ls: AcpLanguageServer, args: JsonObj) -> Any:
    engine = await ls.ready_engine()
    return await engine.authenticate(args.get("methodId"))


@command("acp.status")
async def status(ls: AcpLanguageServer, args: JsonObj) -> Any:
    engine = ls.engine_or_raise()
    return engine.status()


# ====================================================================== registration
def _make_command(name: str, fn: Handler, shortcut: str | None) -> Callable[..., Awaitable[Any]]:
    async def run(ls: AcpLanguageServer, *raw: Any) -> Any:
        try:
            args = _args(name, shortcut, raw)
            result = await fn(ls, args)
        except AcpError as exc:
            if ls.echo_results:
                ls.bridge.show_message(types.MessageType.Error, f"{name}: {exc.message}")
            raise JsonRpcException(message=exc.message, code=exc.code, data=exc.data) from None
        except JsonRpcException:
            raise
        except Exception as exc:
            log.exception("command %s failed", name)
            raise JsonRpcException(message=f"{name} failed: {exc!r}", code=-32603) from None
        if ls.echo_results:
            echo_result(ls, name, result)
        return result

    run.__name__ = name.replace(".", "_")
    return run


def echo_result(ls: AcpLanguageServer, name: str, result: Any) -> None:
    """For editors that drop command results (Helix): say the useful ones in the message line."""
    if name == "acp.session.list":
        sessions = result.get("sessions") or []
        lines = []
        for entry in sessions[:20]:
            mark = "* " if entry.get("active") else ""
            lines.append(f"{mark}{ls.clean(entry.get('title') or 'untitled', 60)} — {entry.get('sessionId')}")
        more = f" (and {len(sessions) - 20} more)" if len(sessions) > 20 else ""
        text = "; ".join(lines) if lines else "no sessions"
        ls.bridge.show_message(types.MessageType.Info, f"ACP sessions{more}: {text}")
    elif name in ("acp.session.new", "acp.session.load"):
        ls.bridge.show_message(types.MessageType.Info, f"ACP session {result.get('sessionId')} is active")
    elif name == "acp.status":
        ls.bridge.show_message(types.MessageType.Info, str(result.get("text")))


def register(server: AcpLanguageServer) -> None:
    for name, (fn, shortcut) in COMMANDS.items():
        server.command(name)(_make_command(name, fn, shortcut))

    @server.feature(types.INITIALIZE)
    def initialize(ls: AcpLanguageServer, params: types.InitializeParams) -> None:
        ls.read_client_caps(params.capabilities)
        client = params.client_info.name.lower() if params.client_info else ""
        ls.echo_results = client == "helix"
        ls.options, ls.option_problems = parse_options(params.initialization_options)

    @server.feature(types.INITIALIZED)
    def initialized(ls: AcpLanguageServer, params: types.InitializedParams) -> None:
        logging.getLogger("sidecar").addHandler(ls.bridge.log_handler)
        for problem in ls.option_problems:
            ls.bridge.show_message(types.MessageType.Error, f"acp-sidecar: {problem}")
        ls.start_engine()

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: AcpLanguageServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.status_diagnostic.focus(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: AcpLanguageServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.status_diagnostic.focus(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: AcpLanguageServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.status_diagnostic.closed(params.text_document.uri)

    @server.feature(types.SHUTDOWN)
    async def shutdown(ls: AcpLanguageServer, *args: Any) -> None:
        await ls.stop()

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(
            code_action_kinds=[types.CodeActionKind.QuickFix, types.CodeActionKind.Empty]
        ),
    )
    def code_action(ls: AcpLanguageServer, params: types.CodeActionParams) -> list[types.CodeAction] | None:
        if ls.engine is None:
            return None
        try:
            return code_actions(ls, ls.engine, params)
        except Exception:
            log.exception("code actions failed")
            return None
