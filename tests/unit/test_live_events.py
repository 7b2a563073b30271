"""Notices, compaction progress and tool names in progress reports, against a stand-in LSP port."""

from __future__ import annotations

from typing import Any

import pytest
from lsprotocol import types

from sidecar.features.stream.lsp_live_events import MAX_OPEN_COMPACTIONS, LiveEvents, notice_message
from sidecar.features.stream.lsp_progress import describe
from sidecar.features.titles.api import sanitize_text
from sidecar.kernel.tool_calls import ToolCalls
from sidecar.kernel.updates import Update, read_update
from sidecar.lsp.ports import ClientCaps
from sidecar.tasks import OwnedTasks
from tests.unit.fake_agent import settle


class FakeProgress:
    def __init__(self, log: list[tuple[str, str, Any]]) -> None:
        self.log = log

    async def create_async(self, token: str) -> None:
        self.log.append(("create", token, None))

    def begin(self, token: str, value: types.WorkDoneProgressBegin) -> None:
        self.log.append(("begin", token, value))

    def report(self, token: str, value: types.WorkDoneProgressReport) -> None:
        self.log.append(("report", token, value))

    def end(self, token: str, value: types.WorkDoneProgressEnd) -> None:
        self.log.append(("end", token, value))


class FakePort:
    """What LiveEvents uses of the server: messages, capabilities, cleaning, progress."""

    def __init__(self, progress: bool = True) -> None:
        self.caps = ClientCaps(progress=progress)
        self.messages: list[tuple[types.MessageType, str]] = []
        self.progress_log: list[tuple[str, str, Any]] = []
        self.work_done_progress = FakeProgress(self.progress_log)
        self.stopping = False

    def show_message(self, kind: types.MessageType, message: str) -> None:
        self.messages.append((kind, message))

    def clean(self, text: str, max_length: int) -> str:
        return sanitize_text(text, max_length)

    def ends(self) -> list[str]:
        return [value.message for kind, _token, value in self.progress_log if kind == "end"]


def view(session_id: str, update: dict[str, Any]) -> Update:
    return read_update(session_id, update)


def compaction(cid: str, status: str, **extra: Any) -> dict[str, Any]:
    return {"sessionUpdate": "compaction_update", "compactionId": cid, "status": status, **extra}


@pytest.mark.parametrize(
    ("update", "shown"),
    [
        ({"severity": "info", "title": "Hi"}, (types.MessageType.Info, "Hi")),
        (
            {"severity": "warning", "title": "Low", "description": "Disk"},
            (types.MessageType.Warning, "Low: Disk"),
        ),
        ({"severity": "error", "title": "Bad", "description": None}, (types.MessageType.Error, "Bad")),
        ({"severity": "_vendor", "title": "Ext"}, (types.MessageType.Info, "Ext")),
        ({"severity": 3, "title": "Odd"}, (types.MessageType.Info, "Odd")),
        ({"severity": "error", "title": "  "}, None),
        ({"severity": "error"}, None),
    ],
)
def test_notice_message(update: dict[str, Any], shown: tuple[types.MessageType, str] | None) -> None:
    assert notice_message({"sessionUpdate": "notice", **update}) == shown


async def test_notices_are_shown_clean() -> None:
    port = FakePort()
    events = LiveEvents(port, OwnedTasks("test"))
    events.on_update(
        view("s1", {"sessionUpdate": "notice", "severity": "error", "title": "\x1b[31mRed\nalert"})
    )
    assert port.messages == [(types.MessageType.Error, "Red alert")]


async def test_compactions_begin_and_end_once() -> None:
    port = FakePort()
    tasks = OwnedTasks("test")
    events = LiveEvents(port, tasks)
    events.on_update(view("s1", compaction("c1", "in_progress")))
    events.on_update(view("s1", compaction("c1", "in_progress")))  # repeated: still one progress
    events.on_update(view("s1", {"sessionUpdate": "compaction_summary_chunk", "compactionId": "c1"}))
    events.on_update(view("s1", compaction("c1", "completed")))
    events.on_update(view("s1", compaction("c1", "completed")))  # ended already: nothing
    events.on_update(view("s2", compaction("c2", "in_progress")))
    events.on_update(view("s2", compaction("c2", "failed", error="out of tokens")))
    events.on_update(view("s3", compaction("c3", "in_progress")))
    events.on_update(view("s1", compaction("c9", "completed")))  # never began: nothing
    events.on_update(view("s3", compaction(7, "in_progress")))  # malformed: ignored
    await settle()
    assert [kind for kind, _, _ in port.progress_log].count("begin") == 3
    assert port.ends() == ["completed", "failed: out of tokens"]
    # The turn it ran in ends (the agent died, say): so does the compaction.
    events.turn_ended("s3", "cancelled")
    events.turn_ended("s1", "end_turn")
    await settle()
    assert port.ends() == ["completed", "failed: out of tokens", "cancelled"]
    begins = [value for kind, _, value in port.progress_log if kind == "begin"]
    assert {(b.title, b.message) for b in begins} == {("Compacting context", "summarizing")}
    await tasks.aclose()


async def test_compactions_are_bounded_and_need_progress_support() -> None:
    port = FakePort()
    tasks = OwnedTasks("test")
    events = LiveEvents(port, tasks)
    for n in range(MAX_OPEN_COMPACTIONS + 5):
        events.on_update(view("s1", compaction(f"c{n}", "in_progress")))
    await settle()
    assert [kind for kind, _, _ in port.progress_log].count("begin") == MAX_OPEN_COMPACTIONS
    await tasks.aclose()
    plain = FakePort(progress=False)
    LiveEvents(plain, tasks).on_update(view("s1", compaction("c1", "in_progress")))
    await settle()
    assert plain.progress_log == []


def test_describe_names_the_tool_from_the_sessions_tool_call_table() -> None:
    calls = ToolCalls()

    def described(update: dict[str, Any], table: ToolCalls | None = calls) -> str | None:
        read = view("s1", update)
        merged = None
        if table is not None and read.tool_call_id is not None:
            merged = table.apply(read.tool_call_id, update, replace=read.kind == "tool_call")
        return describe(read, merged)

    call = {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Read a.py", "name": "read_file"}
    assert described({**call, "status": "pending"}) == "Read a.py (read_file) · pending"
    done = {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"}
    assert described(done) == "Read a.py (read_file) · completed"
    assert described(done, None) is None, "without the table an update with no title says nothing"
    nameless = {"sessionUpdate": "tool_call", "toolCallId": "t2", "title": "Think", "name": None}
    assert described(nameless) == "Think"
    assert described(
        {"sessionUpdate": "plan", "entries": [{"status": "in_progress", "content": "Step"}]}
    ) == ("Plan: Step")
