"""The conversation feature's command: `acp.session.transcript` (docs/protocol.md), the session's
conversation document, written out and shown."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sidecar.lsp.commands import command
from sidecar.lsp.server import AcpLanguageServer

if TYPE_CHECKING:
    from sidecar.lsp import arguments as a


@command("acp.session.transcript", "SessionDocument", "sessionId")
async def session_document(ls: AcpLanguageServer, args: a.SessionDocument) -> Any:
    from sidecar.features.conversation.feature import Documents  # with the engine, not at start-up

    kernel = await ls.ready_kernel()
    result = await kernel.feature(Documents).of_session(args.session_id)
    if args.show:
        ls.features.show(result["sessionId"])
    return result
