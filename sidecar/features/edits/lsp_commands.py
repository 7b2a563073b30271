"""The edits feature's commands (docs/protocol.md): apply an agent's edit, the proposals of a tool
call, answer a permission, and the agent's landed changes (list, keep, revert, show)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException

from sidecar.features.edits.lsp_diff_edits import apply_agent_diffs
from sidecar.features.edits.lsp_feature import EditsLsp
from sidecar.lsp.commands import command, invalid
from sidecar.lsp.server import AcpLanguageServer

if TYPE_CHECKING:
    from sidecar.lsp import arguments as a


def _lsp(ls: AcpLanguageServer) -> EditsLsp:
    return ls.features.get(EditsLsp)


@command("acp.edit.apply", "EditApply")
async def edit_apply(ls: AcpLanguageServer, args: a.EditApply) -> Any:
    await ls.ready_kernel()
    fs = _lsp(ls).edits().fs
    diffs = fs.tool_call_diffs(args.session_id, args.tool_call_id)
    if not ls.caps.apply_edit:
        raise JsonRpcException(message="the editor does not support workspace/applyEdit", code=-32006)
    session_id = args.session_id

    async def write_closed(path: str, expected: str | None, text: str) -> bool:
        return await fs.write_closed_file(session_id, path, expected, text)

    return {"applied": await apply_agent_diffs(ls.files, diffs, write_closed)}


@command("acp.edit.proposals", "EditApply")
async def edit_proposals(ls: AcpLanguageServer, args: a.EditApply) -> Any:
    await ls.ready_kernel()
    return {"proposals": _lsp(ls).proposals.for_tool_call(args.session_id, args.tool_call_id)}


@command("acp.permission.respond", "PermissionRespond", in_order=False)
async def permission_respond(ls: AcpLanguageServer, args: a.PermissionRespond) -> Any:
    await ls.ready_kernel()
    permissions = _lsp(ls).edits().permissions
    if args.edits is None:
        permissions.respond(args.request_id, args.option_id or "")
    else:
        await permissions.respond_with_edits(args.request_id, args.option_id or "", args.edits)
    return {}


@command("acp.changes.list", "Changes", "uri")
async def changes_list(ls: AcpLanguageServer, args: a.Changes) -> Any:
    ls.kernel_or_raise()
    return _lsp(ls).changes.listing(_lsp(ls).changes.selected(args.hunk_id, args.uri, args.session_id))


@command("acp.changes.keep", "Changes", "hunkId")
async def changes_keep(ls: AcpLanguageServer, args: a.Changes) -> Any:
    ls.kernel_or_raise()
    return _lsp(ls).changes.keep(_changes_named(ls, args))


@command("acp.changes.revert", "Changes", "hunkId")
async def changes_revert(ls: AcpLanguageServer, args: a.Changes) -> Any:
    ls.kernel_or_raise()
    fs = _lsp(ls).edits().fs
    from sidecar.kernel.errors import SidecarError

    async def write_closed(session_id: str, path: str, expected: str, text: str) -> bool:
        try:
            return await fs.revert_closed_file(session_id, path, expected, text)
        except SidecarError:
            return False

    result = await _lsp(ls).changes.revert(_changes_named(ls, args), write_closed)
    if result["refused"]:
        reasons = sorted({r["reason"] for r in result["refused"]})
        count = len(result["refused"])
        ls.show_message(
            types.MessageType.Warning,
            f"acp-sidecar: {count} agent change{'s' if count > 1 else ''} not reverted: {'; '.join(reasons)}",
        )
    return result


@command("acp.changes.show", "Changes", "hunkId")
async def changes_show(ls: AcpLanguageServer, args: a.Changes) -> Any:
    ls.kernel_or_raise()
    if args.hunk_id is None:
        raise invalid("acp.changes.show takes a hunkId")
    [hunk] = _changes_named(ls, args)
    text, selection = await _lsp(ls).changes.before_text(hunk)
    store = _lsp(ls).edits().saved_changes.store
    path = await asyncio.to_thread(store.write_shown, hunk.path, hunk.id, text)
    uri = path.as_uri()
    shown = False
    if ls.caps.show_document:
        params = types.ShowDocumentParams(uri=uri, take_focus=True, selection=selection)
        answer = await ls.window_show_document_async(params)
        shown = bool(answer is not None and answer.success)
    return {"uri": uri, "range": ls.protocol.converter.unstructure(selection), "shown": shown}


def _changes_named(ls: AcpLanguageServer, args: a.Changes) -> list[Any]:
    if args.hunk_id is None and args.uri is None and args.session_id is None:
        raise invalid("name the changes: hunkId, uri or sessionId")
    found = _lsp(ls).changes.selected(args.hunk_id, args.uri, args.session_id)
    if args.hunk_id is not None and not found:
        raise invalid(f"no agent change {args.hunk_id!r:.80} (kept, reverted or edited since)")
    return found
