"""The edits feature's LSP side, added to the server by `host.py`: the agent's landed changes as
diagnostics (`lsp_change_diagnostics.py`), the proposals the editors show (`lsp_proposals.py`),
permission requests in the editor (`lsp_permissions.py`), the editor following the agent
(`lsp_follow_agent.py`), and the code actions: revert or keep a change, apply an agent's edit,
answer a permission. Its commands are `lsp_commands.py`."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.uris import to_fs_path

from sidecar.features.edits.diff_apply import by_path
from sidecar.features.edits.lsp_change_diagnostics import AgentChangeDiagnostics
from sidecar.features.edits.lsp_diff_edits import diff_edit
from sidecar.features.edits.lsp_follow_agent import FollowAgent
from sidecar.features.edits.lsp_permissions import PermissionPrompts
from sidecar.features.edits.lsp_proposals import Proposals
from sidecar.kernel.tool_calls import tool_label
from sidecar.lsp.features import ActionContext, Actions, LspFeature, Place

if TYPE_CHECKING:
    from sidecar.features.edits.feature import Edits
    from sidecar.features.edits.fs_service import FileService
    from sidecar.kernel.kernel import Kernel
    from sidecar.kernel.session import PermissionRequest
    from sidecar.kernel.updates import Routed
    from sidecar.lsp.server import AcpLanguageServer

JsonObj = dict[str, Any]


class EditsLsp(LspFeature):
    def __init__(self, server: AcpLanguageServer) -> None:
        self._server = server
        self._edits: Edits | None = None
        self._kernel: Kernel | None = None
        self.changes = AgentChangeDiagnostics(
            server,
            server.files,
            server.diagnostics,
            lambda: self._edits.changes if self._edits else None,
            lambda: self._kernel,
        )
        self.proposals = Proposals(server.files, self._fs)
        self.permissions = PermissionPrompts(server, server.tasks, self.proposals, self._answer)
        self.follow = FollowAgent(server, server.tasks)

    def started(self, kernel: Kernel) -> None:
        from sidecar.features.edits.feature import Edits

        self._edits = kernel.feature(Edits)
        self._kernel = kernel
        self.changes.attach(self._edits.changes)

    def edits(self) -> Edits:
        """The engine side (a command waits for the engine first)."""
        assert self._edits is not None
        return self._edits

    def _fs(self) -> FileService | None:
        return self._edits.fs if self._edits is not None else None

    def _answer(self, request_id: str, option_id: str) -> None:
        self.edits().permissions.respond(request_id, option_id)

    # ------------------------------------------------------------------ the editor's documents
    def opened(self, uri: str) -> None:
        self.changes.opened(uri)

    def changed(self, params: types.DidChangeTextDocumentParams, conversation: bool) -> None:
        self.changes.changed(params)
        if not conversation:
            self.follow.typed()  # a conversation document's edits are mostly the sidecar's own

    def closed(self, uri: str) -> None:
        self.changes.closed(uri)

    async def code_actions(self, context: ActionContext) -> Actions:
        found: Actions = []
        uri, rng = context.params.text_document.uri, context.params.range
        found += [(Place.AT_CURSOR, action) for action in self.changes.actions(uri, rng)]
        if context.conversation is None:
            found += [(Place.DOCUMENT, action) for action in await self._edit_actions(uri)]
        found += [(Place.REQUESTS, action) for action in self._permission_actions()]
        return found

    # ------------------------------------------------------------------ the engine's events
    def update_fields(self, session_id: str, replay: bool, update: JsonObj) -> JsonObj | None:
        if not isinstance(update.get("content"), list):  # only a tool call's content has diffs
            return None
        proposals = self.proposals.for_update(session_id, replay, update)
        return {"proposals": proposals} if proposals is not None else None

    def update_sent(self, routed: Routed) -> None:
        self.follow.on_update(routed)

    def permission(self, request: PermissionRequest) -> None:
        self.permissions.on_permission(request)

    # ------------------------------------------------------------------ code actions
    async def _edit_actions(self, uri: str) -> list[types.CodeAction]:
        """Apply the agent's pending edit of this file (its preview, where the editor shows one)."""
        if self._edits is None:
            return []
        ls = self._server
        actions: list[types.CodeAction] = []
        for session_id, call_id, call, diffs in self._edits_touching(uri):
            name = call.get("name")
            label = tool_label(str(call.get("title") or call_id), name if isinstance(name, str) else None)
            title = ls.clean(label, 80)
            preview = None
            files_changed = by_path(diffs)
            if ls.caps.code_action_literals and len(files_changed) == 1:
                [(path, group)] = files_changed.items()
                preview = (await diff_edit(ls.files, path, group))[1]
            command = types.Command(
                title=f"Apply agent edit: {title}",
                command="acp.edit.apply",
                arguments=[{"sessionId": session_id, "toolCallId": call_id}],
            )
            actions.append(
                types.CodeAction(
                    title=command.title, kind=types.CodeActionKind.QuickFix, edit=preview, command=command
                )
            )
        return actions

    def _edits_touching(self, uri: str) -> list[tuple[str, str, JsonObj, list[JsonObj]]]:
        """Pending tool-call diffs that touch `uri`'s file: (sessionId, toolCallId, call, diffs)."""
        path = to_fs_path(uri)
        if not path or self._edits is None:
            return []
        real = os.path.realpath(path)
        found = []
        for session, call_id, call, diffs in self._edits.fs.pending_edits():
            if any(os.path.realpath(str(d.get("path"))) == real for d in diffs):
                found.append((session.session_id, call_id, call, diffs))
        return found

    def _permission_actions(self) -> list[types.CodeAction]:
        if self._edits is None:
            return []
        clean = self._server.clean
        actions: list[types.CodeAction] = []
        for request in self._edits.permissions.pending():
            what = clean(request.title, 60)
            for option in request.options:
                name = clean(str(option.get("name") or option.get("optionId")), 40)
                actions.append(
                    types.CodeAction(
                        title=f"Agent permission: {name} — {what}",
                        kind=types.CodeActionKind.QuickFix,
                        command=types.Command(
                            title=f"{name}: {what}",
                            command="acp.permission.respond",
                            arguments=[{"requestId": request.request_id, "optionId": option.get("optionId")}],
                        ),
                    )
                )
        return actions
