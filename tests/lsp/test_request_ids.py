"""Requests each way keep their own ids (docs/protocol.md, "Requests and ids").

pygls keeps the editor's requests and the sidecar's own requests in one table keyed by id alone:
an editor's `$/cancelRequest` naming the id of the sidecar's `workspace/applyEdit` cancelled that
edit's wait (the agent heard "cancelled" although its write landed), and a response carrying the
id of a request the editor itself sent settled that request with the response's result.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from lsprotocol import types

from tests.lsp.buffers import Buffers
from tests.lsp.editor import open_editor
from tests.lsp.raw import RawSidecar
from tests.lsp.test_permissions_files import SCRIPTED_ARGS, scripted

# An agent that never answers: the sidecar's first start waits, and so does acp.session.new.
SILENT_AGENT = ["--agent", f"{sys.executable} -c 'import time; time.sleep(120)'"]
REQUEST_CANCELLED = -32800


async def test_an_editor_cancelling_the_sidecars_apply_edit_does_not_fail_the_agents_write(
    workspace: Path, state_dir: Path
) -> None:
    async with open_editor("neovim", workspace, state_dir, extra_args=SCRIPTED_ARGS) as ed:
        buffers = Buffers.attach(ed)
        await ed.command("acp.session.new")
        path = workspace / "src" / "app.py"
        uri = ed.open(path)
        cancelled: list[Any] = []

        async def cancel_then_apply(params: Any) -> types.ApplyWorkspaceEditResult:
            # An editor that sends $/cancelRequest for the id of the request it is answering,
            # then answers it (the edit is applied): the id is the sidecar's, not the editor's.
            msg_id = ed.client.protocol.msg_id
            cancelled.append(msg_id)
            ed.client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
            return await buffers.apply(params)

        ed.edit_applier = cancel_then_apply
        results = await scripted(ed, [{"write": str(path), "content": "print('written')\n"}])
        assert cancelled and cancelled[0] is not None
        assert results[0] == {"result": {}}, results[0]
        assert buffers.text(uri) == "print('written')\n"
        # The sidecar still answers the editor and runs the next turn.
        assert (await ed.command("acp.status"))["state"] == "idle"


async def test_a_response_with_the_id_of_the_editors_own_request_settles_nothing(
    workspace: Path, state_dir: Path
) -> None:
    sidecar = await RawSidecar.start(workspace, state_dir, SILENT_AGENT)
    try:
        await sidecar.initialize(workspace)
        pending = sidecar.new_id()
        sidecar.send(
            {
                "jsonrpc": "2.0",
                "id": pending,
                "method": "workspace/executeCommand",
                "params": {"command": "acp.session.new", "arguments": [{}]},
            }
        )
        # A stray response carrying that id (a confused client, or one replaying its log).
        sidecar.send({"jsonrpc": "2.0", "id": pending, "result": {"sessionId": "forged"}})
        # Messages are handled in order: once this later request is answered, a forged answer
        # to the pending one would have been sent already.
        await sidecar.command("acp.status")
        assert sidecar.answers_to(pending) == [], "a response must not settle the editor's request"
        # The editor can still cancel its own request by its id.
        sidecar.send({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": pending}})
        answer = await sidecar.answer(pending, timeout=15)
        assert answer.get("error", {}).get("code") == REQUEST_CANCELLED, answer
        assert b"Traceback" not in sidecar.stderr
    finally:
        await sidecar.close()
