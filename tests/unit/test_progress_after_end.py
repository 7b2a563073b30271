"""A message that must follow a progress's end (Helix writes both into its message line)."""

from __future__ import annotations

import asyncio

from sidecar.features.stream.lsp_progress import TurnProgress
from sidecar.kernel.updates import Routed, read_update
from tests.unit.test_live_events import FakePort


async def test_a_message_waits_for_the_end_of_a_running_progress() -> None:
    port = FakePort()
    progress = TurnProgress(port, "turn-1", "Old title")  # type: ignore[arg-type]
    order: list[str] = []
    task = asyncio.create_task(progress.run())
    progress.after_end(lambda: order.append(f"message after {[k for k, _t, _v in port.progress_log]}"))
    call = {"sessionUpdate": "tool_call", "toolCallId": "t", "title": "Read"}
    progress.on_update(Routed(read_update("s1", call), "turn-1", False))
    await asyncio.sleep(0)
    assert order == []
    progress.finish("end_turn", None)
    await asyncio.wait_for(task, 5)
    assert order == ["message after ['create', 'begin', 'report', 'end']"]
    # Once ended, at once.
    progress.after_end(lambda: order.append("later"))
    assert order[-1] == "later"


async def test_a_progress_the_editor_never_began_holds_nothing_back() -> None:
    port = FakePort()

    async def refuse(token: str) -> None:
        raise RuntimeError("MethodNotFound")

    port.work_done_progress.create_async = refuse  # type: ignore[method-assign]
    progress = TurnProgress(port, "turn-1", "Title")  # type: ignore[arg-type]
    sent: list[str] = []
    progress.after_end(lambda: sent.append("queued before"))
    await asyncio.wait_for(progress.run(), 5)
    assert sent == ["queued before"]
    progress.after_end(lambda: sent.append("after"))
    assert sent == ["queued before", "after"]
