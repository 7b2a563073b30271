"""changes.follow (features/edits/lsp_follow_agent.py): the editor follows the agent's tool calls to
their file and line without taking the focus, and never within QUIET seconds of the user's last
keystroke (a clock of the test's own: nothing here is timed)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import attrs
from lsprotocol import types

from sidecar.features.edits.lsp_follow_agent import QUIET, FollowAgent, location_of
from sidecar.lsp.options import ChangesOptions, Options
from sidecar.lsp.ports import ClientCaps
from sidecar.tasks import OwnedTasks


class Editor:
    def __init__(self, follow: bool = True, show_document: bool = True) -> None:
        self.options = attrs.evolve(Options(), changes=ChangesOptions(follow=follow))
        self.caps = ClientCaps(show_document=show_document)
        self.shown: list[types.ShowDocumentParams] = []

    async def show_document_params(self, params: types.ShowDocumentParams) -> None:
        self.shown.append(params)


def tool_call(path: str, line: int | None = None, replay: bool = False) -> Any:
    location: dict[str, Any] = {"path": path} | ({"line": line} if line is not None else {})
    raw = {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "locations": [location]}
    return SimpleNamespace(replay=replay, update=SimpleNamespace(raw=raw))


async def test_follows_the_agent_but_never_while_the_user_types() -> None:
    clock = [100.0]
    editor, tasks = Editor(), OwnedTasks("test")
    follow = FollowAgent(editor, tasks, now=lambda: clock[0])  # type: ignore[arg-type]
    follow.on_update(tool_call("/ws/a.py", 12))
    follow.on_update(tool_call("/ws/a.py", 12))  # the same place: shown once
    follow.typed()
    clock[0] += QUIET / 2
    follow.on_update(tool_call("/ws/b.py"))  # the user typed just now: the editor stays
    clock[0] += QUIET
    follow.on_update(tool_call("/ws/c.py", 3))
    follow.on_update(tool_call("/ws/d.py", replay=True))  # a replayed history is not followed
    await asyncio.sleep(0)
    await tasks.aclose()
    assert [(p.uri, p.take_focus, p.selection.start.line if p.selection else None) for p in editor.shown] == [
        ("file:///ws/a.py", False, 11),
        ("file:///ws/c.py", False, 2),
    ]


async def test_off_by_default_and_without_show_document() -> None:
    for editor in (Editor(follow=False), Editor(show_document=False)):
        tasks = OwnedTasks("test")
        FollowAgent(editor, tasks).on_update(tool_call("/ws/a.py"))  # type: ignore[arg-type]
        await asyncio.sleep(0)  # a spawned show would have run by now
        await tasks.aclose()
        assert editor.shown == []
    assert Options().changes.follow is False


def test_location_of() -> None:
    assert location_of({"locations": [{"path": "rel.py"}, {"path": "/abs.py", "line": 0}]}) == ("/abs.py", 0)
    assert location_of({"locations": "nope"}) is None
    assert location_of({}) is None
