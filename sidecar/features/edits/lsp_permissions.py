"""Permission requests in the editor: `acp/permission` notifications and the dialog.

A request that reaches the user is announced as `acp/permission` (pending) and,
when anyone settles it (dialog, code action, `acp.permission.respond`, cancel),
again as resolved with the outcome the agent got. The dialog
(`window/showMessageRequest`) is one way to answer: a dismissed dialog
(`null`: Neovim's `q`, Helix's any key) is not a rejection, the request stays
pending and the message line says how to answer it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from sidecar.tasks import OwnedTasks

if TYPE_CHECKING:
    from sidecar.features.edits.lsp_proposals import Proposals
    from sidecar.kernel.session import PermissionRequest
    from sidecar.lsp.ports import PermissionPort

log = logging.getLogger(__name__)

JsonObj = dict[str, Any]
CANCELLED: JsonObj = {"outcome": "cancelled"}


def option_label(option: JsonObj) -> str:
    return str(option.get("name") or option.get("optionId"))


class PermissionPrompts:
    def __init__(
        self,
        port: PermissionPort,
        tasks: OwnedTasks,
        proposals: Proposals,
        answer: Callable[[str, str], None],
    ) -> None:
        self.port = port
        self._answer = answer  # a pending request answered with one of its options
        self._tasks = tasks
        self._proposals = proposals

    def on_permission(self, request: PermissionRequest) -> None:
        self._announce(request, "pending", None)
        request.future.add_done_callback(lambda future: self._announce(request, "resolved", _outcome(future)))
        if not self.port.options.notify.permission_dialog:
            return  # the plugin shows acp/permission itself
        if self.port.caps.message_request:
            self._tasks.spawn(self._ask(request), f"permission-{request.request_id}")
        else:
            names = ", ".join(option_label(o) for o in request.options)
            self.port.show_message(
                types.MessageType.Warning,
                f"The agent asks permission: {self.port.clean(request.title, 200)} ({names}). "
                f"Answer with a code action, or acp.permission.respond {{requestId: {request.request_id}}}.",
            )

    def _announce(self, request: PermissionRequest, state: str, outcome: JsonObj | None) -> None:
        self.port.notify(
            "acp/permission",
            {
                "requestId": request.request_id,
                "sessionId": request.session_id,
                "turnId": request.turn_id,
                "toolCall": request.tool_call,
                "options": request.options,
                "state": state,
                "outcome": outcome,
                # What each file becomes, while the request waits (docs/protocol.md, Agent diffs).
                "proposals": self._proposals.for_permission(request) if state == "pending" else None,
            },
        )

    async def _ask(self, request: PermissionRequest) -> None:
        actions = [types.MessageActionItem(title=option_label(o)) for o in request.options]
        ask = asyncio.ensure_future(
            self.port.show_message_request(
                types.ShowMessageRequestParams(
                    type=types.MessageType.Warning,
                    message=f"The agent asks permission: {self.port.clean(request.title, 200)}",
                    actions=actions,
                )
            )
        )
        try:
            # The request may be answered elsewhere (code action, cancel): stop waiting then.
            waiters: set[asyncio.Future[Any]] = {ask, request.future}
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not ask.done():
                ask.cancel()
        if request.future.done():
            return
        try:
            chosen = ask.result()
        except Exception as exc:
            log.warning("showMessageRequest failed: %r; code actions remain", exc)
            return
        title = getattr(chosen, "title", None)
        option_id = next((o["optionId"] for o in request.options if option_label(o) == title), None)
        if option_id is None:
            # Dismissed: the request stays pending until the user answers another way.
            self.port.show_message(
                types.MessageType.Warning,
                f"The agent's permission request ({self.port.clean(request.title, 200)}) is still waiting: "
                f"answer with a code action or acp.permission.respond {{requestId: {request.request_id}}}.",
            )
            return
        with contextlib.suppress(Exception):
            self._answer(request.request_id, option_id)


def _outcome(future: asyncio.Future[JsonObj]) -> JsonObj:
    """The ACP outcome the agent was answered ({"outcome": "selected", "optionId": ...})."""
    if future.cancelled() or future.exception() is not None:
        return CANCELLED
    outcome = future.result().get("outcome")
    return outcome if isinstance(outcome, dict) else CANCELLED
