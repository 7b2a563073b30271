"""The title cache watch: another connection's commits are noticed by `data_version`, and only
the records whose shown fields changed are handed over; the engine shows them (and the status)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sidecar.core import title_watch
from sidecar.core.engine import Engine
from sidecar.core.title_watch import StoreWatch
from sidecar.titles import StoreUnavailable, TitleRecord, TitleSource, TitleStore, apply_user_title
from tests.unit.fake_agent import FakeAgents, Recorder, until

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
        watch = StoreWatch(mine, run_now, lambda: A, seen.append)
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
    engine: Engine, agents: FakeAgents, recorder: Recorder, workspace: Path, tmp_path: Path
) -> None:
    sid = await engine.new_session(str(workspace))
    await until(lambda: engine.titles.record(sid) is not None and not engine.titles.writes.busy(sid))
    with TitleStore(tmp_path / "state" / "titles.sqlite3") as other:
        other.update(
            engine.agent_key,
            sid,
            lambda r: apply_user_title(r, "From elsewhere", agent=A, session_id=sid, now=9.0),
        )
    await until(
        lambda: engine.status()["title"] == "From elsewhere", timeout=10, what="the other sidecar's title"
    )
    info = [i for i in recorder.of("info") if i["sessionId"] == sid][-1]
    assert (info["title"], info["titleSource"]) == ("From elsewhere", "user")
    assert recorder.of("status")[-1]["title"] == "From elsewhere"
    # Rules build on it from now on.
    record_now = engine.titles.record(sid)
    assert record_now is not None and record_now.title == "From elsewhere"


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
        watch = StoreWatch(mine, run_now, lambda: A, seen.append)
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
