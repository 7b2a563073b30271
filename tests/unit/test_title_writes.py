"""Titles are shown once saved: bursts coalesced, a locked store bounded, a failing one reported."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import AsyncIterator, Coroutine
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from sidecar.features.titles.api import TitleRecord, TitleStore, apply_agent_info
from sidecar.features.titles.writes import SHOW_UNSAVED_AFTER, TitleWrites
from sidecar.tasks import OwnedTasks

AGENT = "demo"


class Harness:
    def __init__(self, db: Path) -> None:
        self.db = db
        self.store = TitleStore(db)
        self.executor = ThreadPoolExecutor(max_workers=1)
        self.cache: dict[str, TitleRecord] = {}
        self.shown: list[tuple[str | None, str | None]] = []  # (title shown, title in the database then)
        self.reports: list[Exception] = []
        self.tasks = OwnedTasks("test")
        self.writes = TitleWrites(
            self.executor, self.cache, show=self._show, report=self.reports.append, spawn=self._spawn
        )
        self.writes.store = self.store
        self.writes.key_of = lambda _session_id: AGENT

    def _spawn(self, coro: Coroutine[Any, Any, None], name: str) -> asyncio.Task[Any]:
        return self.tasks.spawn(coro, name)

    def stored_title(self, sid: str) -> str | None:
        conn = sqlite3.connect(self.db, timeout=0.1)
        try:
            row = conn.execute("SELECT title FROM titles WHERE session_id = ?", (sid,)).fetchone()
        except sqlite3.OperationalError:
            return "<locked>"
        finally:
            conn.close()
        return None if row is None else str(row[0])

    def _show(self, record: TitleRecord) -> None:
        self.shown.append((record.title, self.stored_title(record.session_id)))

    def change(self, sid: str, title: str) -> None:
        """What Titling does for a live session_info_update."""
        now = time.time()

        def rules(r: TitleRecord | None) -> TitleRecord | None:
            return apply_agent_info(r, agent=AGENT, session_id=sid, now=now, title=title)

        new = rules(self.cache.get(sid))
        assert new is not None
        self.cache[sid] = new
        self.writes.write(sid, rules)
        self.writes.show_when_saved(sid)


@pytest.fixture
async def harness(tmp_path: Path) -> AsyncIterator[Harness]:
    h = Harness(tmp_path / "titles.sqlite3")
    yield h
    await h.tasks.aclose()
    h.executor.shutdown()
    h.store.close()


async def test_a_burst_is_coalesced_and_only_saved_titles_are_shown(harness: Harness) -> None:
    for i in range(800):
        harness.change("s1", f"T{i}")
        if i % 100 == 0:
            await asyncio.sleep(0)  # let some writes land mid-burst
    await harness.writes.flush(10)
    assert harness.shown[-1] == ("T799", "T799")
    # At each show the database already held that title or a newer one (the next write may be landing).
    assert all(int(str(stored)[1:]) >= int(str(shown)[1:]) for shown, stored in harness.shown), harness.shown
    assert harness.writes.transactions <= 40, harness.writes.transactions
    assert harness.writes.shown_unsaved == 0 and not harness.reports


async def test_a_locked_store_shows_the_title_after_a_bounded_wait(harness: Harness, tmp_path: Path) -> None:
    harness.change("s1", "Before the lock")
    await harness.writes.flush(10)
    locker = sqlite3.connect(harness.db, isolation_level=None)
    locker.execute("BEGIN EXCLUSIVE")
    started = time.monotonic()
    try:
        harness.change("s1", "During the lock")
        while harness.shown[-1][0] != "During the lock":
            await asyncio.sleep(0.02)
        waited = time.monotonic() - started
    finally:
        locker.execute("COMMIT")
        locker.close()
    assert SHOW_UNSAVED_AFTER * 0.9 <= waited < SHOW_UNSAVED_AFTER + 2, waited
    assert harness.writes.shown_unsaved == 1
    await harness.writes.flush(15)
    assert harness.stored_title("s1") == "During the lock", "saved once the lock is gone"


async def test_a_failing_store_shows_from_memory_reports_and_retries(harness: Harness) -> None:
    harness.change("s1", "First")
    await harness.writes.flush(10)
    with sqlite3.connect(harness.db) as conn:
        conn.execute("CREATE TRIGGER no BEFORE UPDATE ON titles BEGIN SELECT RAISE(ABORT, 'disk full'); END")
    harness.change("s1", "While failing")
    async with asyncio.timeout(10):
        while harness.shown[-1][0] != "While failing":
            await asyncio.sleep(0.02)
    assert harness.reports and "disk full" in str(harness.reports[0])
    assert harness.writes.dirty == {"s1"}
    with sqlite3.connect(harness.db) as conn:
        conn.execute("DROP TRIGGER no")
    await harness.writes.flush(10)
    assert harness.stored_title("s1") == "While failing"
