"""5. Titles at scale: `sidecar.features.titles.TitleStore` on a real SQLite file (WAL).

For N sessions: reconcile a `session/list` answer of 100 pages (parsed with
`ListedSession.from_acp`, as the engine does, then one reconcile), reconcile
it again unchanged, list the cache, and apply N live `session_info_update`s
(`store.update` + `apply_agent_info`, one transaction each, as the engine
does). Cost per operation at 1 000 and 10 000; growth = per-op(10 000) /
per-op(1 000), 1.0 is perfectly linear. Baseline in the same run: plain
sqlite3 on the same schema (executemany, select all, one transaction per row).

Live bursts (what a kill -9 could lose): S sessions each get U title updates
as fast as the agent can send them. "one transaction each" writes every
update in its own transaction and shows it at once (the store lags behind
what the editor saw by the queue's length); "shown once saved" is
`TitleWrites`: coalesced per session, each title shown once it is committed.
Also the delay from one isolated update to its show (the cost of waiting for
the commit).
"""

from __future__ import annotations

import asyncio
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from sidecar.features.titles.api import ListedSession, TitleRecord, TitleStore, apply_agent_info, iso_now
from sidecar.features.titles.store import MIGRATIONS
from sidecar.features.titles.writes import TitleWrites
from sidecar.tasks import OwnedTasks

from .common import BenchResult, table

AGENT = "bench-agent"
CWD = "/work/bench"
PAGES = 100
TARGET_GROWTH = 1.5  # "near linear": per-op cost may grow at most this much over 10x the sessions


def _pages(count: int) -> list[list[dict[str, Any]]]:
    per_page = max(1, count // PAGES)
    entries = [
        {
            "sessionId": f"sess-{i:06d}",
            "cwd": CWD,
            "title": f"Listed session {i}",
            "updatedAt": f"2025-01-{1 + i % 28:02d}T{i % 24:02d}:{i % 60:02d}:00Z",
            "_meta": {"n": i},
        }
        for i in range(count)
    ]
    return [entries[i : i + per_page] for i in range(0, count, per_page)]


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def _store_ops(count: int, tmp: Path) -> dict[str, float]:
    pages = _pages(count)
    tmp.mkdir(exist_ok=True)
    store = TitleStore(tmp / f"titles-{count}.sqlite3")
    try:

        def reconcile() -> list[Any]:
            listed = [e for page in pages for e in map(ListedSession.from_acp, page) if e is not None]
            return store.reconcile(AGENT, CWD, listed, True)

        t_first, changed = _timed(reconcile)
        assert len(changed) == count, (len(changed), count)
        t_again, unchanged = _timed(reconcile)
        assert not unchanged
        t_list, records = _timed(lambda: [r.to_session_entry(False) for r in store.list(AGENT, CWD)])
        assert len(records) == count
        now = time.time()

        def updates() -> int:
            done = 0
            for i in range(count):
                sid = f"sess-{i:06d}"
                title = f"Agent title {i}"
                stamp = iso_now(now + i)

                def info(
                    r: TitleRecord | None, sid: str = sid, title: str = title, at: str = stamp
                ) -> TitleRecord:
                    return apply_agent_info(
                        r, agent=AGENT, session_id=sid, now=now, title=title, updated_at=at
                    )

                _old, new = store.update(AGENT, sid, info)
                done += new is not None and new.title == title
            return done

        t_updates, applied = _timed(updates)
        assert applied == count
    finally:
        store.close()
    return {"reconcile": t_first, "reconcile again": t_again, "list": t_list, "session_info": t_updates}


def _raw_ops(count: int, tmp: Path) -> dict[str, float]:
    tmp.mkdir(exist_ok=True)
    conn = sqlite3.connect(tmp / f"raw-{count}.sqlite3", isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        for statements in MIGRATIONS:
            for statement in statements:
                conn.execute(statement)
        cols = "agent, session_id, cwd, title, title_source, updated_at, sort_at, created_at, changed_at"
        upsert = (
            f"INSERT INTO titles ({cols}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (agent, session_id) DO UPDATE SET title = excluded.title"
        )
        rows = [
            (AGENT, f"sess-{i:06d}", CWD, f"t{i}", "list", None, float(i), 0.0, 0.0) for i in range(count)
        ]

        def bulk() -> None:
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany(upsert, rows)
            conn.execute("COMMIT")

        t_bulk, _ = _timed(bulk)
        t_select, got = _timed(
            lambda: conn.execute(
                "SELECT * FROM titles WHERE agent = ? AND cwd = ? ORDER BY sort_at DESC, session_id",
                (AGENT, CWD),
            ).fetchall()
        )
        assert len(got) == count

        def each() -> None:
            for row in rows:
                conn.execute("BEGIN IMMEDIATE")
                conn.execute("SELECT * FROM titles WHERE agent = ? AND session_id = ?", row[:2]).fetchone()
                conn.execute(upsert, row)
                conn.execute("COMMIT")

        t_each, _ = _timed(each)
    finally:
        conn.close()
    return {"reconcile": t_bulk, "list": t_select, "session_info": t_each}


def _info(sid: str, title: str, now: float) -> Callable[[TitleRecord | None], TitleRecord | None]:
    def rules(r: TitleRecord | None) -> TitleRecord | None:
        return apply_agent_info(r, agent=AGENT, session_id=sid, now=now, title=title)

    return rules


async def _live(tmp: Path, sessions: int, updates: int) -> dict[str, float]:
    """Bursts through TitleWrites and through one transaction per update; isolated show delay."""
    tmp.mkdir(exist_ok=True)
    loop = asyncio.get_running_loop()
    figures: dict[str, float] = {}
    now = time.time()
    with ThreadPoolExecutor(max_workers=1) as executor:
        store = TitleStore(tmp / "live-each.sqlite3")
        try:
            started = time.perf_counter()
            jobs = [
                loop.run_in_executor(executor, store.update, AGENT, f"s{s}", _info(f"s{s}", f"T{i}", now))
                for i in range(updates)
                for s in range(sessions)
            ]
            figures["each: issued"] = time.perf_counter() - started  # shown to the editor by then
            await asyncio.gather(*jobs)
            figures["each: saved"] = time.perf_counter() - started
            figures["each: transactions"] = len(jobs)
        finally:
            store.close()

        store = TitleStore(tmp / "live-saved.sqlite3")
        tasks = OwnedTasks("bench")
        cache: dict[str, TitleRecord] = {}
        shown: dict[str, tuple[float, str | None]] = {}

        def show(record: TitleRecord) -> None:
            shown[record.session_id] = (time.perf_counter(), record.title)

        def spawn(coro: Coroutine[Any, Any, None], name: str) -> asyncio.Task[Any]:
            return tasks.spawn(coro, name)

        writes = TitleWrites(executor, cache, show=show, report=lambda _e: None, spawn=spawn)
        writes.store, writes.key_of = store, lambda _session_id: AGENT
        try:
            started = time.perf_counter()
            for i in range(updates):
                for s in range(sessions):
                    sid, rules = f"s{s}", _info(f"s{s}", f"T{i}", now)
                    cache[sid] = rules(cache.get(sid)) or cache[sid]
                    writes.write(sid, rules)
                    writes.show_when_saved(sid)
            figures["saved: issued"] = time.perf_counter() - started
            await writes.flush(60)
            last = f"T{updates - 1}"
            assert all(shown[f"s{s}"][1] == last for s in range(sessions)), "the last title of each is shown"
            figures["saved: saved"] = max(at for at, _ in shown.values()) - started
            figures["saved: transactions"] = writes.transactions
            delays = []
            for i in range(50):
                sid, rules = "alone", _info("alone", f"A{i}", now)
                cache[sid] = rules(cache.get(sid)) or cache[sid]
                began = time.perf_counter()
                writes.write(sid, rules)
                writes.show_when_saved(sid)
                await writes.flush(10)
                delays.append(shown[sid][0] - began)
            figures["saved: show delay ms (median)"] = statistics.median(delays) * 1000
        finally:
            await tasks.aclose()
            store.close()
    return figures


async def titles(quick: bool) -> BenchResult:
    sizes = (100, 1_000) if quick else (1_000, 10_000)
    store: dict[int, dict[str, float]] = {}
    raw: dict[int, dict[str, float]] = {}
    repeats = 1 if quick else 3
    with tempfile.TemporaryDirectory(prefix="acp-bench-titles-") as tmp:
        _store_ops(PAGES, Path(tmp) / "warm")  # first use builds the sanitizer's tables: not per-op cost
        for n in sizes:
            # Best of a few fresh databases: the machine's noise is not the store's growth.
            runs = [_store_ops(n, Path(tmp) / f"{n}-{i}") for i in range(repeats)]
            store[n] = {op: min(run[op] for run in runs) for op in runs[0]}
            raws = [_raw_ops(n, Path(tmp) / f"{n}-{i}") for i in range(repeats)]
            raw[n] = {op: min(run[op] for run in raws) for op in raws[0]}
    small, big = sizes
    rows = []
    growth: dict[str, float] = {}
    for op in ("reconcile", "reconcile again", "list", "session_info"):
        per_small = store[small][op] / small * 1e6
        per_big = store[big][op] / big * 1e6
        growth[op] = per_big / per_small
        base = raw[big].get(op)
        rows.append(
            [
                f"TitleStore {op}",
                per_small,
                per_big,
                f"{growth[op]:.2f}",
                f"{store[big][op] * 1000:.1f}",
                "-" if base is None else f"{base / big * 1e6:.2f}",
            ]
        )
    sessions, updates = (4, 200) if quick else (10, 1_000)
    with tempfile.TemporaryDirectory(prefix="acp-bench-titles-live-") as tmp:
        live = await _live(Path(tmp), sessions, updates)
    worst_op = max(growth, key=lambda k: growth[k])
    text = table(
        [
            "operation",
            f"us/op at {small:,}",
            f"us/op at {big:,}",
            "growth",
            f"total ms at {big:,}",
            f"plain sqlite3 us/op at {big:,}",
        ],
        rows,
        f"5. Titles at scale: {PAGES} pages, SQLite file in WAL mode, best of {repeats}",
    )
    total = sessions * updates
    text += "\n\n" + table(
        ["live burst", "transactions", "all issued ms", "all saved ms", "saved behind shown (updates)"],
        [
            [
                "one transaction each (shown at once)",
                live["each: transactions"],
                live["each: issued"] * 1000,
                live["each: saved"] * 1000,
                f"up to {total:,}",
            ],
            [
                "shown once saved (coalesced)",
                live["saved: transactions"],
                live["saved: issued"] * 1000,
                live["saved: saved"] * 1000,
                "0",
            ],
        ],
        f"Titles: {sessions} sessions x {updates:,} updates as fast as they come; "
        f"an isolated update is shown {live['saved: show delay ms (median)']:.2f} ms after it is made",
    )
    summary = (
        f"per-op cost grows at most {growth[worst_op]:.2f}x ({worst_op}) from {small:,} to {big:,} sessions "
        f"(target <= {TARGET_GROWTH}x: near linear); "
        f"session_info {store[big]['session_info'] / big * 1e6:.0f} us/op, "
        f"reconcile {store[big]['reconcile'] / big * 1e6:.0f} us/session; "
        f"a burst of {total:,} updates saved in {live['saved: saved'] * 1000:.0f} ms "
        f"({live['saved: transactions']:.0f} transactions) vs {live['each: saved'] * 1000:.0f} ms one each"
    )
    return BenchResult(
        "titles",
        text,
        summary,
        {"growth": growth, "store": store, "raw": raw, "live": live},
        ok=max(growth.values()) <= TARGET_GROWTH,
    )
