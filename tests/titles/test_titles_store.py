"""The SQLite title cache: WAL, migrations, recovery, disk full, reconcile, threads."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sqlite3
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sidecar.features.titles.api import (
    MIGRATIONS,
    SCHEMA_VERSION,
    ListedSession,
    RenameState,
    StoreUnavailable,
    TitleRecord,
    TitleSource,
    TitleStore,
    apply_agent_info,
    apply_user_title,
    clear_pending,
    set_pending,
)

A = "demo"


def put_title(store: TitleStore, sid: str, title: str | None) -> TitleRecord | None:
    _, new = store.update(
        A, sid, lambda rec: apply_agent_info(rec, agent=A, session_id=sid, now=time.time(), title=title)
    )
    return new


@pytest.fixture
def store(tmp_path: Path) -> Iterator[TitleStore]:
    s = TitleStore(tmp_path / "state" / "titles.db")
    yield s
    s.close()


def test_creates_dirs_and_uses_wal(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "titles.db"
    with TitleStore(path) as s:
        assert s.warnings == []
        put_title(s, "s1", "T")
        other = sqlite3.connect(path)
        assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert other.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        other.close()


def test_update_get_and_no_write_when_unchanged(store: TitleStore) -> None:
    old, new = store.update(
        A,
        "s1",
        lambda r: apply_agent_info(r, agent=A, session_id="s1", now=5.0, title="One", meta={"k": [1]}),
    )
    assert old is None and new is not None
    assert store.get(A, "s1") == new
    assert new.meta == {"k": [1]}
    before, after = store.update(
        A, "s1", lambda r: apply_agent_info(r, agent=A, session_id="s1", now=9.0, title="One")
    )
    assert after is before and before == new
    assert store.update(A, "s1", lambda r: None) == (new, new)
    stored = store.get(A, "s1")
    assert stored is not None and stored.changed_at == 5.0
    assert store.get(A, "nope") is None
    assert store.get("other-agent", "s1") is None


def test_update_refuses_record_for_another_key(store: TitleStore) -> None:
    with pytest.raises(ValueError, match="returned a record"):
        store.update(A, "s1", lambda r: TitleRecord(agent=A, session_id="s2"))
    assert store.get(A, "s1") is None and store.get(A, "s2") is None


def test_exception_in_fn_rolls_back(store: TitleStore) -> None:
    put_title(store, "s1", "Kept")

    def boom(rec: TitleRecord | None) -> TitleRecord:
        raise RuntimeError("bug in a rules function")

    with pytest.raises(RuntimeError):
        store.update(A, "s1", boom)
    rec = store.get(A, "s1")
    assert rec is not None and rec.title == "Kept"
    put_title(store, "s2", "Still writable")


def test_round_trip_of_every_field(store: TitleStore) -> None:
    rec = TitleRecord(
        agent=A,
        session_id="s1",
        cwd="/work/ü",
        title="Tïtle 😀",
        title_source=TitleSource.USER,
        updated_at="2026-01-01T00:00:00Z",
        meta={"a": {"b": [1, 2.5, None, True, "\ud800"]}},
        pending_title="Next",
        rename_state=RenameState.PENDING,
        missing=True,
        created_at=1.5,
        changed_at=2.5,
    )
    store.put(rec)
    assert store.get(A, "s1") == rec


def test_list_order_cwd_and_missing(store: TitleStore) -> None:
    for sid, at, cwd in [
        ("old", "2026-01-01T00:00:00Z", "/a"),
        ("new", "2026-03-01T00:00:00Z", "/a"),
        # Same instant as "mid" would be in UTC; ordering compares instants.
        ("mid", "2026-02-01T05:00:00+05:00", "/b"),
    ]:
        store.put(
            TitleRecord(
                agent=A, session_id=sid, cwd=cwd, title=sid, title_source=TitleSource.LIST, updated_at=at
            )
        )
    store.put(TitleRecord(agent=A, session_id="gone", cwd="/a", missing=True, changed_at=0.0))
    store.put(TitleRecord(agent="other", session_id="x", cwd="/a"))
    assert [r.session_id for r in store.list(A)] == ["new", "mid", "old", "gone"]
    assert [r.session_id for r in store.list(A, cwd="/a")] == ["new", "old", "gone"]
    assert [r.session_id for r in store.list(A, cwd="/a", include_missing=False)] == ["new", "old"]
    assert store.delete(A, "old") and not store.delete(A, "old")


def test_survives_reopen(tmp_path: Path) -> None:
    path = tmp_path / "titles.db"
    with TitleStore(path) as s:
        put_title(s, "s1", "Persisted")
        s.update(A, "s1", lambda r: set_pending(r, "Wanted", agent=A, session_id="s1", now=2.0))
    with TitleStore(path) as s:
        rec = s.get(A, "s1")
        assert rec is not None
        assert (rec.title, rec.pending_title, rec.rename_state) == (
            "Persisted",
            "Wanted",
            RenameState.PENDING,
        )
        s.update(A, "s1", lambda r: clear_pending(r, RenameState.UNCONFIRMED, now=3.0) if r else None)
    with TitleStore(path) as s:
        rec = s.get(A, "s1")
        assert rec is not None and rec.rename_state is RenameState.UNCONFIRMED and rec.pending_title is None


def test_closed_store_raises(tmp_path: Path) -> None:
    s = TitleStore(tmp_path / "t.db")
    s.close()
    s.close()
    with pytest.raises(StoreUnavailable, match="closed"):
        s.get(A, "s1")


# -- migrations -------------------------------------------------------------


def test_migrates_v1_database_to_latest(tmp_path: Path) -> None:
    path = tmp_path / "titles.db"
    conn = sqlite3.connect(path)
    for statement in MIGRATIONS[0]:
        conn.execute(statement)
    conn.execute(
        "INSERT INTO titles (agent, session_id, cwd, title, title_source, updated_at, sort_at, meta,"
        " pending_title, missing, created_at, changed_at)"
        " VALUES (?, 's1', '/w', 'Old', 'user', '2026-01-01T00:00:00Z', 0, '{\"k\":1}', NULL, 0, 1, 2)",
        (A,),
    )
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()

    with TitleStore(path) as s:
        rec = s.get(A, "s1")
        assert rec is not None
        assert (rec.title, rec.title_source, rec.meta, rec.rename_state) == (
            "Old",
            TitleSource.USER,
            {"k": 1},
            None,
        )
        s.update(A, "s1", lambda r: clear_pending(r, RenameState.CONFIRMED, now=3.0) if r else None)
        rec = s.get(A, "s1")
        assert rec is not None and rec.rename_state is RenameState.CONFIRMED
    check = sqlite3.connect(path)
    assert check.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 2
    columns = {row[1] for row in check.execute("PRAGMA table_info(titles)")}
    assert "rename_state" in columns
    check.close()


def test_newer_schema_is_used_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "titles.db"
    with TitleStore(path) as s:
        put_title(s, "s1", "T")
    conn = sqlite3.connect(path)
    conn.execute("ALTER TABLE titles ADD COLUMN future TEXT DEFAULT 'x'")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.commit()
    conn.close()
    with TitleStore(path) as s:
        assert any("newer acp-sidecar" in w for w in s.warnings)
        assert s.get(A, "s1") is not None
        put_title(s, "s2", "Still works")
        assert len(s.list(A)) == 2


# -- recovery ---------------------------------------------------------------


def _aside(path: Path) -> list[Path]:
    return sorted(path.parent.glob(path.name + ".corrupt-*"))


def test_not_a_database_is_moved_aside(tmp_path: Path) -> None:
    path = tmp_path / "titles.db"
    junk = b"this is not a database" * 200
    path.write_bytes(junk)
    Path(f"{path}-wal").write_bytes(b"stale wal")
    with TitleStore(path) as s:
        assert len(s.warnings) == 1
        assert "moved to" in s.warnings[0] and "titles.db.corrupt-" in s.warnings[0]
        put_title(s, "s1", "Fresh")
        assert s.get(A, "s1") is not None
    moved = _aside(path)
    assert moved[0].read_bytes() == junk
    # SQLite itself discards a WAL it cannot use; if it survived, it moved along.
    wal = Path(f"{path}-wal")
    assert not wal.exists() or b"stale wal" not in wal.read_bytes()


def test_truncated_database_is_moved_aside(tmp_path: Path) -> None:
    path = tmp_path / "titles.db"
    with TitleStore(path) as s:
        for i in range(600):
            put_title(s, f"s{i}", f"title {i} " + "x" * 100)
    data = path.read_bytes()
    assert len(data) > 40_000 and not Path(f"{path}-wal").exists()
    path.write_bytes(data[: len(data) // 3])
    with TitleStore(path) as s:
        assert len(s.warnings) == 1 and "unreadable" in s.warnings[0]
        assert s.list(A) == []
        put_title(s, "s1", "Fresh")
    assert len(_aside(path)) == 1
    with TitleStore(path) as s:
        assert s.warnings == []
        assert [r.title for r in s.list(A)] == ["Fresh"]


def test_unusable_location_falls_back_to_memory(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("a file where a directory should be")
    path = blocker / "state" / "titles.db"
    with pytest.raises(StoreUnavailable, match="cannot be created"):
        TitleStore(path)
    s = TitleStore.open_or_memory(path)
    assert s.in_memory and s.path is None
    assert len(s.warnings) == 1 and "in memory only" in s.warnings[0]
    put_title(s, "s1", "In memory")
    rec = s.get(A, "s1")
    assert rec is not None and rec.title == "In memory"
    s.close()


@contextlib.contextmanager
def unwritable_directory(tmp_path: Path) -> Iterator[Path]:
    """A directory nobody can create files in, root included.

    Permissions do not stop root, so as root the directory is made immutable
    (chattr +i); where that is not possible either, a path below a regular file.
    """
    locked = tmp_path / "locked"
    locked.mkdir()
    if os.geteuid() != 0:
        locked.chmod(0o500)
        try:
            yield locked
        finally:
            locked.chmod(0o700)
        return
    immutable = subprocess.run(["chattr", "+i", str(locked)], capture_output=True).returncode == 0
    if not immutable:
        blocker = tmp_path / "a-file"
        blocker.write_text("not a directory")
        yield blocker / "locked"
        return
    try:
        yield locked
    finally:
        subprocess.run(["chattr", "-i", str(locked)], check=True)


def test_read_only_directory_falls_back_to_memory(tmp_path: Path) -> None:
    with unwritable_directory(tmp_path) as locked:
        with pytest.raises(OSError):
            (locked / "probe").write_text("x")
        s = TitleStore.open_or_memory(locked / "titles.db")
        assert s.in_memory and s.warnings
        put_title(s, "s1", "ok")
        assert s.get(A, "s1") is not None
        s.close()


def test_disk_full_raises_and_keeps_earlier_rows(store: TitleStore) -> None:
    put_title(store, "first", "Written before the disk filled")
    conn = store._conn
    assert conn is not None
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    # Simulate a full disk: SQLite answers SQLITE_FULL past this many pages.
    conn.execute(f"PRAGMA max_page_count = {pages + 2}")
    written = 0
    with pytest.raises(StoreUnavailable, match="disk is full") as info:
        for i in range(5000):
            put_title(store, f"s{i}", f"title {i} " + "x" * 300)
            written += 1
    assert "cannot be saved" in str(info.value)
    rows = store.list(A)
    assert len(rows) == written + 1
    assert store.get(A, "first") is not None
    # Space comes back: the same store writes again.
    conn.execute("PRAGMA max_page_count = 1000000")
    put_title(store, "after", "Space again")
    assert len(store.list(A)) == written + 2


# -- reconcile --------------------------------------------------------------


def test_reconcile_provenance_and_missing(store: TitleStore) -> None:
    now = time.time()
    store.update(A, "user", lambda r: apply_user_title(r, "Mine", agent=A, session_id="user", now=now))
    store.update(
        A,
        "agent-new",
        lambda r: apply_agent_info(
            r, agent=A, session_id="agent-new", now=now, title="Agent", updated_at="2026-05-01T00:00:00Z"
        ),
    )
    store.update(
        A,
        "agent-old",
        lambda r: apply_agent_info(
            r, agent=A, session_id="agent-old", now=now, title="Agent", updated_at="2026-01-01T00:00:00Z"
        ),
    )
    for sid in ("user", "agent-new", "agent-old"):
        store.update(A, sid, lambda r: dataclasses.replace(r, cwd="/w") if r else None)
    store.put(
        TitleRecord(agent=A, session_id="unlisted", cwd="/w", title="U", title_source=TitleSource.AGENT)
    )
    store.put(TitleRecord(agent=A, session_id="elsewhere", cwd="/other"))

    at = "2026-03-01T00:00:00Z"
    listed = [
        ListedSession("user", "/w", "Listed", at),
        ListedSession("agent-new", "/w", "Listed", at),
        ListedSession("agent-old", "/w", "Listed", at),
        ListedSession("fresh", "/w", "Listed", at),
    ]
    changed = store.reconcile(A, "/w", listed, complete=True)
    by_id = {r.session_id: r for r in store.list(A)}
    assert (by_id["user"].title, by_id["user"].title_source) == ("Mine", TitleSource.USER)
    assert (by_id["agent-new"].title, by_id["agent-new"].title_source) == ("Agent", TitleSource.AGENT)
    assert (by_id["agent-old"].title, by_id["agent-old"].title_source) == ("Listed", TitleSource.LIST)
    assert (by_id["fresh"].title, by_id["fresh"].title_source) == ("Listed", TitleSource.LIST)
    assert by_id["unlisted"].missing
    assert not by_id["elsewhere"].missing  # another cwd is not judged
    assert {new.session_id for _old, new in changed} >= {"agent-old", "fresh", "unlisted"}
    assert "agent-new" not in {new.session_id for _old, new in changed}
    assert {new.session_id: old is None for old, new in changed}["fresh"]  # new: nothing before
    # Nothing new: nothing changes.
    assert store.reconcile(A, "/w", listed, complete=True) == []
    # An incomplete list (a page failed) marks nothing missing.
    store.reconcile(A, "/w", listed[:1], complete=False)
    assert not any(r.missing for r in store.list(A, cwd="/w") if r.session_id != "unlisted")
    # Listed again: no longer missing.
    store.reconcile(A, "/w", [ListedSession("unlisted", "/w", None, None)], complete=False)
    rec = store.get(A, "unlisted")
    assert rec is not None and not rec.missing


def test_reconcile_without_cwd_covers_all_of_the_agent(store: TitleStore) -> None:
    store.put(TitleRecord(agent=A, session_id="a", cwd="/a"))
    store.put(TitleRecord(agent=A, session_id="b", cwd="/b"))
    store.put(TitleRecord(agent="other", session_id="c", cwd="/a"))
    store.reconcile(A, None, [ListedSession("a", "/a", "A", None)], complete=True)
    assert {r.session_id: r.missing for r in store.list(A)} == {"a": False, "b": True}
    rec = store.get("other", "c")
    assert rec is not None and not rec.missing


def test_reconcile_ten_thousand_sessions(store: TitleStore) -> None:
    n = 10_000
    listed = [
        ListedSession(f"s{i:05d}", "/w", f"Session {i}", f"2026-01-01T00:00:{i % 60:02d}Z", {"i": i})
        for i in range(n)
    ]
    changed = store.reconcile(A, "/w", listed, complete=True)
    assert len(changed) == n
    assert len(store.list(A, cwd="/w")) == n
    # Half of them disappear from the agent's list.
    changed = store.reconcile(A, "/w", listed[::2], complete=True)
    assert len(changed) == n // 2
    rows = store.list(A, cwd="/w")
    assert sum(r.missing for r in rows) == n // 2
    assert len(rows) == n


def test_threads_share_one_store(store: TitleStore) -> None:
    def bump(rec: TitleRecord | None) -> TitleRecord:
        n = (rec.meta or {}).get("n", 0) if rec else 0
        return apply_agent_info(rec, agent=A, session_id="c", now=time.time(), meta={"n": n + 1})

    def work() -> None:
        for _ in range(100):
            store.update(A, "c", bump)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rec = store.get(A, "c")
    assert rec is not None and rec.meta == {"n": 400}
