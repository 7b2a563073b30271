"""Blocking work stays off the event loop: the agent-name file, and real paths of open documents."""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from sidecar.kernel.agent_names import AgentNames
from sidecar.lsp.editor_files import EditorFiles
from tests.unit.fake_agent import FakeAgents, Recorder, make_engine


async def test_the_agent_name_is_written_off_the_event_loop(
    tmp_path: Path, agents: FakeAgents, recorder: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    writers: list[threading.Thread] = []
    original = AgentNames.remember

    def remember(self: AgentNames, command: list[str], name: str) -> None:
        writers.append(threading.current_thread())
        original(self, command, name)

    monkeypatch.setattr(AgentNames, "remember", remember)
    engine = make_engine(tmp_path, agents, recorder)
    await engine.start()
    await engine.supervisor.ensure()  # its first use starts it
    try:
        for _ in range(500):  # written in the background: wait until it has landed
            if (tmp_path / "agents.json").is_file():
                break
            await asyncio.sleep(0.01)
        assert (tmp_path / "agents.json").is_file()
        assert writers and writers[0] is not threading.main_thread()
    finally:
        await engine.shutdown()


def test_open_documents_are_resolved_once_not_per_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs: dict[str, Any] = {}
    for index in range(20):
        path = tmp_path / f"f{index}.txt"
        path.write_text("x")
        docs[path.as_uri()] = SimpleNamespace(uri=path.as_uri(), source="x")
    files = EditorFiles(SimpleNamespace(workspace=SimpleNamespace(text_documents=docs)))  # type: ignore[arg-type]
    calls = 0
    real = os.path.realpath

    def counting(path: Any) -> str:
        nonlocal calls
        calls += 1
        return real(path)

    monkeypatch.setattr(os.path, "realpath", counting)
    missing = tmp_path / "not-open.txt"
    for _ in range(50):  # fifty agent file requests for a file that is not open
        assert files.open_document_text(missing) is None
    assert calls == len(docs)
    # A document opened again is resolved again (its path may now lead elsewhere).
    files.forget(next(iter(docs)))
    assert files.open_document_text(missing) is None
    assert calls == len(docs) + 1
