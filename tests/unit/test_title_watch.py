"""The title cache watch: another connection's commits are noticed by `data_version`, and only
the records whose shown fields changed are handed over; the engine shows them (and the status)."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sidecar.features.titles import watch as title_watch
from sidecar.features.titles.api import (
    StoreUnavailable,
    TitleRecord,
    TitleSource,
    TitleStore,
    apply_user_title,
)
from sidecar.features.titles.watch import StoreWatch
from tests.unit.fake_agent import Composed, FakeAgents, Recorder, until

A = "agent-a"


def record(sid: str, title: str, source: TitleSource = TitleSource.AGENT, cwd: str = "/w") -> TitleRecord:
    return TitleRecord(agent=A, session_id=sid, cwd=cwd, title=title, title_source=source, changed_at=1.0)


async def run_now(fn: Callable[[], Any]) -> Any:
    return fn()


async def test_only_records_changed_by_others_are_reported(tmp_path: Path) -> None:
    path = tmp_path / "titles.sqlite3"
    with TitleStore(path) as mine, TitleStore(path) as other:
        other.put(record("s1", "One"))
        seen: list[list[TitleRecord]] = []
        watch = StoreWatch(mine, run_now, lambda: [A], lambda records, _before: seen.append(records))
        await watch.poll()  # the baseline: nothing reported
        await watch.poll()
        assert seen == []
        # Our own commits do not change data_version: nothing to read.
        mine.put(record("s2", "Mine"))
        await watch.poll()
        assert seen == []
        other.put(record("s1", "One, renamed"))
        other.put(record("s3", "New", cwd="/elsewhere"))
        other.put(TitleRecord(agent="agent-b", session_id="s4", title="B", title_source=TitleSource.AGENT))
        await watch.poll()
        assert len(seen) == 1
        # Ours (s2) shows up once something else changed; the other agent's never.
        assert sorted((r.session_id, r.title) for r in seen[0]) == [
            ("s1", "One, renamed"),
            ("s2", "Mine"),
            ("s3", "New"),
        ]
        # A change nobody shows (the cwd) is not reported; a rename state is.
        other.put(record("s1", "One, renamed", cwd="/moved"))
        await watch.poll()
        assert len(seen) == 1
        other.update(A, "s1", lambda r: apply_user_title(r, "Users", agent=A, session_id="s1", now=2.0))
        await watch.poll()
        assert [(r.title, r.title_source) for r in seen[1]] == [("Users", TitleSource.USER)]


async def test_another_sidecars_change_reaches_the_editor_and_the_status(
    engine: Composed, agents: FakeAgents, recorder: Recorder, workspace: Path, tmp_path: Path
) -> None:
    sid = await engine.registry.new(str(workspace))
    await until(lambda: engine.titles.record(sid) is not None and not engine.titles.writes.busy(sid))
    with TitleStore(tmp_path / "state" / "titles.sqlite3") as other:
        other.update(
            engine.supervisor.key,
            sid,
            lambda r: apply_user_title(r, "From elsewhere", agent=A, session_id=sid, now=9.0),
        )
    await until(
        lambda: engine.kernel.status()["title"] == "From elsewhere",
        timeout=10,
        what="the other sidecar's title",
    )
    info = [i for i in recorder.of("info") if i["sessionId"] == sid][-1]
    assert (info["title"], info["titleSource"]) == ("From elsewhere", "user")
    assert recorder.of("status")[-1]["title"] == "From elsewhere"
    # Rules build on it from now on.
    record_now = engine.titles.record(sid)
    assert record_now is not None and record_now.title == "From elsewhere"


async def test_documents_follow_another_sidecars_title_only_where_this_one_holds_them(
    engine: Composed, agents: FakeAgents, recorder: Recorder, workspace: Path, tmp_path: Path
) -> None:
    """The sidecar that saved a title retitles the documents; the others follow only in the
    documents of sessions they hold (all of them rewriting every document made each title change
    cost one rewrite and lock wait per sidecar on the state dir)."""
    held = await engine.registry.new(str(workspace))
    await until(lambda: engine.titles.record(held) is not None and not engine.titles.writes.busy(held))
    store = engine.conversations.store
    # A session another sidecar runs: its document and its title record exist.
    store.ensure(engine.supervisor.key, "elsewhere", "Old title")
    with TitleStore(tmp_path / "state" / "titles.sqlite3") as other:
        other.put(
            TitleRecord(
                agent=engine.supervisor.key,
                session_id="elsewhere",
                cwd=str(workspace),
                title="Old title",
                title_source=TitleSource.AGENT,
                changed_at=1.0,
            )
        )
    await until(lambda: any(i["sessionId"] == "elsewhere" for i in recorder.of("info")), timeout=10)
    before = store.path(engine.supervisor.key, "elsewhere").stat()
    with TitleStore(tmp_path / "state" / "titles.sqlite3") as other:
        for sid in (held, "elsewhere"):
            other.update(
                engine.supervisor.key,
                sid,
                lambda r, sid=sid: apply_user_title(r, "New title", agent=A, session_id=sid, now=9.0),
            )
    await until(
        lambda: (
            {i["sessionId"] for i in recorder.of("info") if i["title"] == "New title"} == {held, "elsewhere"}
        ),
        timeout=10,
        what="both changes shown to the editor",
    )
    await until(lambda: "# New title\n" in (store.read(engine.supervisor.key, held) or ""), timeout=10)
    await engine.shutdown()  # whatever was queued is written by now
    after = store.path(engine.supervisor.key, "elsewhere").stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert "# Old title\n" in (store.read(engine.supervisor.key, "elsewhere") or "")


async def test_a_failing_store_is_retried_and_reported_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(title_watch, "RETRY_SECONDS", 0.01)
    monkeypatch.setattr(title_watch, "POLL_SECONDS", 0.01)
    path = tmp_path / "titles.sqlite3"
    with TitleStore(path) as mine, TitleStore(path) as other:
        real = mine.data_version
        failures = [StoreUnavailable("disk on fire")] * 5

        def flaky() -> int:
            if failures:
                raise failures.pop()
            return real()

        monkeypatch.setattr(mine, "data_version", flaky)
        seen: list[list[TitleRecord]] = []
        watch = StoreWatch(mine, run_now, lambda: [A], lambda records, _before: seen.append(records))
        task = asyncio.ensure_future(watch.run())
        try:
            await until(lambda: not failures, what="the failures to pass")
            await asyncio.sleep(0.05)  # the baseline after the outage
            other.put(record("s1", "After the outage"))
            await until(lambda: bool(seen), what="the change after the outage")
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    assert [r.title for r in seen[0]] == ["After the outage"]
    warnings = [r for r in caplog.records if "disk on fire" in r.getMessage()]
    assert len(warnings) == 1, warnings


async def test_shutdown_saves_the_titles_before_it_stops_the_agent(
    engine: Composed, agents: FakeAgents, tmp_path: Path
) -> None:
    """Stopping the agent may use up the time the editor gives the sidecar to exit; a title the
    editor was shown (here: while the disk refused it) must be on disk before that begins."""
    sid = await engine.registry.new(str(tmp_path))
    db = tmp_path / "state" / "titles.sqlite3"
    await until(lambda: engine.titles.record(sid) is not None and not engine.titles.writes.busy(sid))
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TRIGGER no BEFORE UPDATE ON titles BEGIN SELECT RAISE(ABORT, 'disk full'); END")
    await agents.current.send_update(sid, {"sessionUpdate": "session_info_update", "title": "Kept at exit"})
    await until(lambda: sid in engine.titles.writes.dirty, timeout=10, what="the refused write")
    with sqlite3.connect(db) as conn:
        conn.execute("DROP TRIGGER no")
    stored_when_stopping: list[str | None] = []
    stop = engine.supervisor.stop

    async def stop_and_look(grace: float) -> None:
        with TitleStore(db) as look:
            record = look.get(engine.supervisor.key, sid)
        stored_when_stopping.append(record.title if record else None)
        await stop(grace=grace)

    engine.supervisor.stop = stop_and_look  # type: ignore[method-assign]
    await engine.shutdown()
    assert stored_when_stopping == ["Kept at exit"]


async def test_the_mark_handed_over_is_the_one_from_before_the_read(tmp_path: Path) -> None:
    """A local change made while the watch reads must count as newer than what it read."""
    path = tmp_path / "titles.sqlite3"
    with TitleStore(path) as mine, TitleStore(path) as other:
        counter = [0]
        seen: list[tuple[list[str], int]] = []

        async def reads_while_changing(fn: Callable[[], Any]) -> Any:
            result = fn()
            counter[0] += 1  # a local change lands during every store call of the watch
            return result

        watch = StoreWatch(
            mine,
            reads_while_changing,
            lambda: [A],
            lambda records, before: seen.append(([r.title or "" for r in records], before)),
            mark=lambda: counter[0],
        )
        await watch.poll()  # the baseline
        other.put(record("s1", "Theirs"))
        at_poll = counter[0]
        await watch.poll()
    assert seen == [(["Theirs"], at_poll)]


async def test_a_record_read_before_a_local_title_does_not_replace_it(
    engine: Composed, agents: FakeAgents, recorder: Recorder, workspace: Path
) -> None:
    """Seen in CI: the watch read the fallback title while the agent's title was being saved, then
    handed that older record over; the editor showed the fallback for good."""
    sid = await engine.registry.new(str(workspace))
    await until(lambda: engine.titles.record(sid) is not None and not engine.titles.writes.busy(sid))
    titles = engine.titles
    stale = titles.record(sid)
    assert stale is not None
    before = titles._changes  # the watch's read begins here
    await agents.current.send_update(sid, {"sessionUpdate": "session_info_update", "title": "The agent's"})
    await until(
        lambda: engine.kernel.status()["title"] == "The agent's", timeout=10, what="the agent's title"
    )
    await until(lambda: not titles.writes.busy(sid))
    titles._changed_elsewhere([stale], before)  # the read's result arrives after the write landed
    assert engine.kernel.status()["title"] == "The agent's"
    rec = titles.record(sid)
    assert rec is not None and rec.title == "The agent's"


async def test_a_record_left_for_later_is_handed_over_again_without_another_commit(tmp_path: Path) -> None:
    """Seen once in the full suite: two sidecars renamed at once, one read the other's rename
    while its own change was under way and left it; that change ended without a write of its own,
    nothing else was committed, and that editor kept its title for good."""
    path = tmp_path / "titles.sqlite3"
    with TitleStore(path) as mine, TitleStore(path) as other:
        other.put(record("s1", "One"))
        busy = [True]
        seen: list[str] = []

        def changed(records: list[TitleRecord], _before: int) -> list[str]:
            seen.extend(r.title or "" for r in records)
            return [r.session_id for r in records] if busy[0] else []

        watch = StoreWatch(mine, run_now, lambda: [A], changed)
        await watch.poll()  # the baseline
        other.put(record("s1", "Theirs"))
        await watch.poll()
        assert seen == ["Theirs"]  # left for later
        await watch.poll()
        assert seen == ["Theirs", "Theirs"]  # handed over again, though nothing was committed
        busy[0] = False
        await watch.poll()
        assert seen == ["Theirs", "Theirs", "Theirs"]  # taken this time
        await watch.poll()
        assert seen == ["Theirs", "Theirs", "Theirs"]  # and not again
