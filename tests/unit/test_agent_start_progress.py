"""The "Starting agent" progress (features/stream/lsp_progress.py),
against a stand-in LSP port."""

from __future__ import annotations

import pytest
from lsprotocol import types

from sidecar.features.stream import lsp_progress as progress_module
from sidecar.features.stream.lsp_progress import AgentStartProgress
from sidecar.tasks import OwnedTasks
from tests.unit.fake_agent import settle
from tests.unit.test_live_events import FakePort


def status(state: str, name: str = "opencode", title: str | None = None) -> dict[str, object]:
    return {"state": state, "agent": {"name": name, "title": title, "version": None}}


async def test_a_quick_start_shows_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress_module, "START_PROGRESS_AFTER", 0.0)
    port, tasks = FakePort(), OwnedTasks("test")
    starting = AgentStartProgress(port, tasks, lambda: True)
    starting.on_status(status("starting"))
    starting.on_status(status("idle"))  # before the wait is over
    await settle()
    assert port.progress_log == []
    sent: list[str] = []
    starting.after_end(lambda: sent.append("now"))  # no progress: at once
    assert sent == ["now"]
    await tasks.aclose()


async def test_a_slow_start_begins_and_ends_and_a_failure_message_comes_after_the_end(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(progress_module, "START_PROGRESS_AFTER", 0.0)
    port, tasks = FakePort(), OwnedTasks("test")
    starting = AgentStartProgress(port, tasks, lambda: True)
    starting.on_status(status("starting", title="OpenCode"))
    starting.on_status(status("starting", title="OpenCode"))  # any other change meanwhile: one progress
    await settle()
    begins = [v for kind, _t, v in port.progress_log if kind == "begin"]
    assert [(b.title, b.message) for b in begins] == [("Starting agent", "OpenCode…")]
    starting.on_status(status("ready", title="OpenCode"))
    await settle()
    assert port.ends() == ["OpenCode ready"]
    # A restart that fails: the error is said after the progress's end (Helix shows both in one line).
    starting.on_status(status("starting"))
    await settle()
    starting.on_status(status("error"))
    starting.after_end(lambda: port.show_message(types.MessageType.Error, "initialize failed"))
    await settle()
    assert port.ends() == ["OpenCode ready", "failed"]
    assert [kind for kind, _t, _v in port.progress_log][-1] == "end"
    assert port.messages == [(types.MessageType.Error, "initialize failed")]
    await tasks.aclose()


async def test_no_progress_without_the_clients_support(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress_module, "START_PROGRESS_AFTER", 0.0)
    port, tasks = FakePort(progress=False), OwnedTasks("test")
    starting = AgentStartProgress(port, tasks, lambda: port.caps.progress)
    starting.on_status(status("starting"))
    await settle()
    starting.on_status(status("ready"))
    await settle()
    assert port.progress_log == []
    await tasks.aclose()
