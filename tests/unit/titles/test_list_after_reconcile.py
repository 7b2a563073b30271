"""The session list after a reconcile changed thousands of records: read from the store, not
sorted from what the editor was shown (that made every list cost the whole history)."""

from __future__ import annotations

from pathlib import Path

from sidecar.features.titles.api import TitleRecord, TitleSource, TitleStore
from tests.unit.fake_agent import Composed, FakeAgents, Recorder

HISTORY = 2_000


async def test_a_reconciled_history_is_listed_from_the_store_and_from_memory_when_it_fails(
    engine: Composed, agents: FakeAgents, recorder: Recorder, workspace: Path, tmp_path: Path
) -> None:
    with TitleStore(tmp_path / "state" / "titles.sqlite3") as other:
        for i in range(HISTORY):
            other.put(
                TitleRecord(
                    agent=engine.supervisor.key,
                    session_id=f"old-{i:05d}",
                    cwd=str(workspace),
                    title=f"Old {i}",
                    title_source=TitleSource.AGENT,
                    changed_at=float(i),
                    updated_at=f"2026-11-01T{i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z",
                )
            )
    client = agents.current
    assert client is not None
    await engine.titles.reconcile(client, None, engine.agents.default.name)  # the agent lists none
    writes = engine.titles.writes
    assert len(writes.shown) >= HISTORY  # every record marked missing was shown
    assert writes.ahead_of_store() == []
    # Marked missing, their acp/sessionInfo is what it was: the editor is not told thousands of times.
    assert not [i for i in recorder.of("info") if str(i["sessionId"]).startswith("old-")]

    listed, more = await engine.titles.entries(None, [str(workspace)], None, limit=10)
    assert more and [e["sessionId"] for e in listed] == [
        f"old-{i:05d}" for i in range(HISTORY - 1, HISTORY - 11, -1)
    ]

    # The store fails: the list is what the editor was shown, still the newest first.
    engine.titles.store.close()
    listed, more = await engine.titles.entries(None, [str(workspace)], None, limit=10)
    assert more and [e["sessionId"] for e in listed] == [
        f"old-{i:05d}" for i in range(HISTORY - 1, HISTORY - 11, -1)
    ]
