"""The questions feature's commands: `acp.elicitation.respond` and `acp.elicitation.answer`
(docs/protocol.md, "Questions from the agent")."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sidecar.lsp.commands import buffer_at_arrival, command, invalid
from sidecar.lsp.server import AcpLanguageServer

if TYPE_CHECKING:
    from sidecar.features.questions.elicitations import Elicitations
    from sidecar.lsp import arguments as a


async def questions(ls: AcpLanguageServer) -> Elicitations:
    from sidecar.features.questions.feature import Questions  # with the engine, not at start-up

    return (await ls.ready_kernel()).feature(Questions).elicitations


@command("acp.elicitation.respond", "ElicitationRespond", "elicitationId", in_order=False)
async def elicitation_respond(ls: AcpLanguageServer, args: a.ElicitationRespond) -> Any:
    await (await questions(ls)).respond(args.elicitation_id, args.action or "accept", args.content)
    return {}


@command("acp.elicitation.answer", "ElicitationAnswer", in_order=False, reads_buffer=True)
async def elicitation_answer(ls: AcpLanguageServer, args: a.ElicitationAnswer) -> Any:
    buffer = buffer_at_arrival.get()
    await ls.ready_kernel()
    if args.uri is None:
        raise invalid("uri is required: the conversation document that holds the question")
    if buffer is None:
        # Not open in the editor: the file (the block as the sidecar wrote it, or saved answers).
        documents = ls.features.documents
        identity = await documents.identify(args.uri) if documents is not None else None
        if documents is None or identity is None:
            raise invalid(f"{args.uri[:200]} is not a conversation document")
        buffer = await documents.saved_text(identity)
    await (await questions(ls)).respond_from_document(args.elicitation_id, buffer or "")
    return {}
