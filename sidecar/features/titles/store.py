"""The title cache: SQLite in WAL mode, shared by every sidecar of a user.

Several editors run several sidecars against one file at once, so every
read-modify-write is one ``BEGIN IMMEDIATE`` transaction: the write lock is
taken before the read, so no two processes can interleave between reading a
record and writing it back (a deferred ``BEGIN`` fails with "database is
locked" under contention, see FIELD-NOTES.md). A busy timeout covers normal
waits; a bounded retry loop covers the cases where SQLite answers busy
without waiting.

A broken cache must never stop the sidecar: a corrupt file is moved aside
and replaced, an unusable location falls back to memory
(:meth:`TitleStore.open_or_memory`), and a failed write raises
:class:`StoreUnavailable` for the caller to report while reads keep working.
"""

from __future__ import annotations

import builtins
import contextlib
import heapq
import os
import random
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from sidecar.features.titles.model import ListedSession, TitleRecord, newest_first, search_text
from sidecar.features.titles.rules import apply_listed, mark_missing
from sidecar.features.titles.sanitize import DEFAULT_MAX_LENGTH
from sidecar.features.titles.schema import (
    MAX_ATTEMPTS,
    MIGRATIONS,
    SCHEMA_VERSION,
    SELECT,
    SQLITE_CANTOPEN,
    UPSERT,
    Corrupt,
    error_code,
    from_row,
    is_busy,
    is_corrupt,
    to_row,
)
from sidecar.state_dir import ForeignOwner, create_private_file, ensure_private_dir, open_private, tighten

if sys.platform != "win32":
    import fcntl

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "StoreUnavailable", "TitleStore"]

T = TypeVar("T")


class StoreUnavailable(RuntimeError):
    """The cache cannot be read or written; the message is for the user."""


def _utc_stamp() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")


@contextlib.contextmanager
def _recovery_lock(path: Path) -> Iterator[None]:
    """Serialise corruption recovery between processes, so that one sidecar
    never moves aside the fresh database another has just created."""
    if sys.platform == "win32":
        yield
        return
    fd = open_private(Path(f"{path}.lock"))
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


class TitleStore:
    """Title records keyed by ``(agent, session_id)``.

    Thread-safe (one connection behind a lock); every call is short, so
    asyncio callers may call it directly or through ``asyncio.to_thread``.
    ``warnings`` collects human messages about recoveries for the caller to
    show once.
    """

    def __init__(self, path: Path | str, *, busy_timeout: float = 10.0) -> None:
        self.warnings: list[str] = []
        self._lock = threading.Lock()
        self._busy_timeout = busy_timeout
        self.in_memory = str(path) == ":memory:"
        self.path: Path | None = None if self.in_memory else Path(path)
        self._conn: sqlite3.Connection | None = self._open()

    @classmethod
    def memory(cls) -> TitleStore:
        """A private in-memory store (lost when the process exits)."""
        return cls(":memory:")

    @classmethod
    def open_or_memory(cls, path: Path | str, *, busy_timeout: float = 10.0) -> TitleStore:
        """Open ``path``, or fall back to memory with a warning, so the
        sidecar keeps working when its state directory is unusable."""
        try:
            return cls(path, busy_timeout=busy_timeout)
        except StoreUnavailable as exc:
            store = cls.memory()
            store.warnings.append(
                f"{exc} Titles are kept in memory only and are lost when the sidecar exits."
            )
            return store

    # -- opening ---------------------------------------------------------

    def _open(self) -> sqlite3.Connection:
        if self.path is None:
            conn = self._connect(":memory:")
            self._migrate(conn)
            return conn
        try:
            # Private from the first byte: the state dir 0700, the database (and so
            # its -wal and -shm, which SQLite creates with the database's mode) 0600.
            ensure_private_dir(self.path.parent)
        except ForeignOwner as exc:
            raise StoreUnavailable(f"The title cache directory {exc.strerror}.") from exc
        except OSError as exc:
            raise StoreUnavailable(
                f"The title cache directory {self.path.parent} cannot be created: {exc.strerror or exc}."
            ) from exc
        try:
            return self._open_checked()
        except Corrupt as exc:
            with _recovery_lock(self.path):
                # Another sidecar may have recovered it while we waited.
                try:
                    return self._open_checked()
                except Corrupt:
                    pass
                moved = self._move_aside()
                self.warnings.append(
                    f"The title cache {self.path} was unreadable ({exc}); it was moved to "
                    f"{moved} and a new cache was started. Titles will be filled again "
                    "from the agent's session list."
                )
                try:
                    return self._open_checked()
                except Corrupt as again:
                    raise StoreUnavailable(
                        f"The title cache {self.path} cannot be recreated: {again}."
                    ) from again

    def _connect(self, target: str) -> sqlite3.Connection:
        conn = sqlite3.connect(
            target,
            timeout=self._busy_timeout,
            isolation_level=None,  # we issue BEGIN IMMEDIATE / COMMIT ourselves
            check_same_thread=False,  # guarded by self._lock
        )
        conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout * 1000)}")
        # The session search's rule (`model.search_text`), so that the rows are filtered before
        # they are built: SQLite's own lower() folds ASCII only.
        conn.create_function("acp_search_text", 4, search_text, deterministic=True)
        return conn

    def _open_checked(self) -> sqlite3.Connection:
        assert self.path is not None
        for attempt in range(MAX_ATTEMPTS):
            conn: sqlite3.Connection | None = None
            try:
                self._create_private()
                conn = self._connect(str(self.path))
                rows = conn.execute("PRAGMA quick_check").fetchall()
                if rows != [("ok",)]:
                    raise Corrupt("; ".join(str(r[0]) for r in rows[:3]))
                mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                # NORMAL is safe in WAL mode: a crash of the process (or of
                # an editor) loses nothing; only a power cut may drop the
                # last commits, never corrupt the file.
                conn.execute("PRAGMA synchronous = NORMAL")
                self._migrate(conn)
            except sqlite3.Error as exc:
                if conn is not None:
                    conn.close()
                if is_corrupt(exc):
                    raise Corrupt(str(exc)) from exc
                if is_busy(exc) and attempt + 1 < MAX_ATTEMPTS:
                    _backoff(attempt)
                    continue
                hint = f" (is {self.path.parent} writable?)" if error_code(exc) == SQLITE_CANTOPEN else ""
                raise StoreUnavailable(f"The title cache {self.path} cannot be opened: {exc}{hint}.") from exc
            except BaseException:
                if conn is not None:
                    conn.close()
                raise
            if str(mode).lower() != "wal":
                self.warnings.append(
                    f"The title cache {self.path} could not use WAL mode (journal mode "
                    f"{mode!r}; is it on a network filesystem?). Several editors using it "
                    "at once may wait on each other."
                )
            return conn
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _create_private(self) -> None:
        assert self.path is not None
        try:
            create_private_file(self.path)
            for suffix in ("-wal", "-shm"):  # left too open by an older version
                tighten(Path(f"{self.path}{suffix}"))
        except OSError as exc:
            raise StoreUnavailable(
                f"The title cache {self.path} cannot be created: {exc.strerror or exc}."
            ) from exc

    def _move_aside(self) -> Path:
        assert self.path is not None
        target = self.path.with_name(f"{self.path.name}.corrupt-{_utc_stamp()}")
        n = 1
        while target.exists():
            target = self.path.with_name(f"{self.path.name}.corrupt-{_utc_stamp()}-{n}")
            n += 1
        try:
            for suffix in ("", "-wal", "-shm"):
                src = Path(f"{self.path}{suffix}")
                if src.exists():
                    os.replace(src, f"{target}{suffix}")
        except OSError as exc:
            raise StoreUnavailable(
                f"The title cache {self.path} is unreadable and cannot be moved aside: {exc.strerror or exc}."
            ) from exc
        return target

    def _migrate(self, conn: sqlite3.Connection) -> None:
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        if version > SCHEMA_VERSION:
            # A newer sidecar only ever adds columns and tables: use it as is.
            self.warnings.append(
                f"The title cache {self.path} was written by a newer acp-sidecar "
                f"(schema {version}, this one knows {SCHEMA_VERSION}); using it as is."
            )
            return
        if version == SCHEMA_VERSION:
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            # Re-read under the write lock: another process may have migrated.
            version = int(conn.execute("PRAGMA user_version").fetchone()[0])
            for statements in MIGRATIONS[version:]:
                for statement in statements:
                    conn.execute(statement)
            if version < SCHEMA_VERSION:
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            conn.execute("COMMIT")
        except BaseException:
            _rollback(conn)
            raise

    # -- running ---------------------------------------------------------

    def _run(self, fn: Callable[[sqlite3.Connection], T], *, write: bool) -> T:
        with self._lock:
            conn = self._conn
            if conn is None:
                raise StoreUnavailable("The title cache is closed.")
            for attempt in range(MAX_ATTEMPTS):
                try:
                    if not write:
                        return fn(conn)
                    conn.execute("BEGIN IMMEDIATE")
                    try:
                        result = fn(conn)
                        conn.execute("COMMIT")
                    except BaseException:
                        _rollback(conn)
                        raise
                    return result
                except sqlite3.Error as exc:
                    if is_busy(exc) and attempt + 1 < MAX_ATTEMPTS:
                        _backoff(attempt)
                        continue
                    raise self._unavailable(exc, write) from exc
                except OSError as exc:
                    raise self._unavailable(exc, write) from exc
            raise AssertionError("unreachable: the last attempt returns or raises")

    def _unavailable(self, exc: BaseException, write: bool) -> StoreUnavailable:
        where = "memory" if self.path is None else str(self.path)
        action = "saved to" if write else "read from"
        if isinstance(exc, sqlite3.Error) and is_corrupt(exc):
            detail = f"it is damaged ({exc}); it will be replaced when the sidecar restarts"
        elif isinstance(exc, OSError):
            detail = str(exc.strerror or exc)
        else:
            detail = str(exc)
        return StoreUnavailable(f"Titles cannot be {action} the title cache {where}: {detail}.")

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> TitleStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- queries ---------------------------------------------------------

    @staticmethod
    def _select_one(conn: sqlite3.Connection, agent: str, session_id: str) -> TitleRecord | None:
        row = conn.execute(f"{SELECT} WHERE agent = ? AND session_id = ?", (agent, session_id)).fetchone()
        return None if row is None else from_row(row)

    def get(self, agent: str, session_id: str) -> TitleRecord | None:
        return self._run(lambda conn: self._select_one(conn, agent, session_id), write=False)

    def data_version(self) -> int:
        """SQLite's `data_version`: it changes when another connection (another sidecar) commits."""
        return self._run(lambda conn: int(conn.execute("PRAGMA data_version").fetchone()[0]), write=False)

    def fingerprints(self, agent: str) -> dict[str, tuple[Any, ...]]:
        """What an editor is shown of each of the agent's sessions, raw: cheap to read and compare
        (10 000 sessions in about 10 ms), to find the few that changed."""
        columns = "session_id, title, title_source, updated_at, meta, rename_state"
        sql = f"SELECT {columns} FROM titles WHERE agent = ?"
        return self._run(lambda conn: {row[0]: row[1:] for row in conn.execute(sql, (agent,))}, write=False)

    def list(self, agent: str, cwd: str | None = None, include_missing: bool = True) -> list[TitleRecord]:
        """The agent's records (of one ``cwd`` if given), newest first."""
        sql = f"{SELECT} WHERE agent = ?"
        args: list[Any] = [agent]
        if cwd is not None:
            sql += " AND cwd = ?"
            args.append(cwd)
        if not include_missing:
            sql += " AND missing = 0"
        sql += " ORDER BY sort_at DESC, session_id"
        return self._run(lambda conn: [from_row(row) for row in conn.execute(sql, args)], write=False)

    def newest(
        self,
        agents: Iterable[str],
        cwd: str | None,
        take: Callable[[Iterator[TitleRecord]], T],
        words: Sequence[str] = (),
    ) -> T:
        """``take`` applied to the records of ``agents`` (of one ``cwd`` if given, containing
        every one of the lower-case ``words``: see ``model.contains_words``), newest first, read
        lazily: a caller that wants the newest few reads only those rows, whatever the size of the
        history. ``take`` may run more than once (on retry): keep it pure."""
        sql = f"{SELECT} WHERE agent = ?" + (" AND cwd = ?" if cwd is not None else "")
        sql += " AND instr(acp_search_text(title, cwd, updated_at, session_id), ?) > 0" * len(words)
        sql += " ORDER BY sort_at DESC, session_id"

        def scan(conn: sqlite3.Connection) -> T:
            cursors = [
                map(from_row, conn.execute(sql, [agent, *([] if cwd is None else [cwd]), *words]))
                for agent in dict.fromkeys(agents)
            ]
            return take(heapq.merge(*cursors, key=newest_first))

        return self._run(scan, write=False)

    # -- writes ----------------------------------------------------------

    def update(
        self,
        agent: str,
        session_id: str,
        fn: Callable[[TitleRecord | None], TitleRecord | None],
    ) -> tuple[TitleRecord | None, TitleRecord | None]:
        """Read, apply ``fn``, write: one transaction that no other process
        can interleave with. Returns (before, after); ``after is before``
        when ``fn`` changed nothing (or returned None) and nothing was
        written. ``fn`` may run more than once (on retry): keep it pure.
        """

        def txn(conn: sqlite3.Connection) -> tuple[TitleRecord | None, TitleRecord | None]:
            old = self._select_one(conn, agent, session_id)
            new = fn(old)
            if new is None or new is old or new == old:
                return old, old
            if new.agent != agent or new.session_id != session_id:
                raise ValueError(
                    f"update of ({agent!r}, {session_id!r}) returned a record for "
                    f"({new.agent!r}, {new.session_id!r})"
                )
            conn.execute(UPSERT, to_row(new))
            return old, new

        return self._run(txn, write=True)

    def put(self, rec: TitleRecord) -> None:
        """Write ``rec`` as is (imports, tests); prefer :meth:`update`."""
        self._run(lambda conn: conn.execute(UPSERT, to_row(rec)), write=True)

    def delete(self, agent: str, session_id: str) -> bool:
        def txn(conn: sqlite3.Connection) -> bool:
            cur = conn.execute("DELETE FROM titles WHERE agent = ? AND session_id = ?", (agent, session_id))
            return cur.rowcount > 0

        return self._run(txn, write=True)

    def reconcile(
        self,
        agent: str,
        cwd: str | None,
        listed: Iterable[ListedSession],
        complete: bool,
        *,
        now: float | None = None,
        max_length: int = DEFAULT_MAX_LENGTH,
    ) -> builtins.list[tuple[TitleRecord | None, TitleRecord]]:
        """Apply an agent's ``session/list`` answer in one transaction.

        Every listed session goes through :func:`.rules.apply_listed`. When
        ``complete`` (every page was read), the agent's records of ``cwd``
        (all of its records when ``cwd`` is None) that were not listed are
        marked missing. Returns each record that changed with what it was
        before (None: new).
        """
        entries = list(listed)
        stamp = time.time() if now is None else now

        def txn(conn: sqlite3.Connection) -> builtins.list[tuple[TitleRecord | None, TitleRecord]]:
            known: dict[str, TitleRecord] = {}
            if complete:
                sql, args = f"{SELECT} WHERE agent = ?", [agent]
                if cwd is not None:
                    sql += " AND cwd = ?"
                    args.append(cwd)
                known = {row[1]: from_row(row) for row in conn.execute(sql, args)}
            changed: dict[str, TitleRecord] = {}
            before: dict[str, TitleRecord | None] = {}
            seen: set[str] = set()
            for entry in entries:
                sid = entry.session_id
                seen.add(sid)
                if sid in changed:
                    old: TitleRecord | None = changed[sid]
                elif sid in known:
                    old = known[sid]
                else:
                    old = self._select_one(conn, agent, sid)
                new = apply_listed(old, entry, stamp, agent=agent, max_length=max_length)
                if new is not old:
                    before.setdefault(sid, old)
                    changed[sid] = new
            if complete:
                for sid, rec in known.items():
                    if sid not in seen:
                        gone = mark_missing(rec)
                        if gone is not rec:
                            before.setdefault(sid, rec)
                            changed[sid] = gone
            conn.executemany(UPSERT, (to_row(rec) for rec in changed.values()))
            return [(before[sid], rec) for sid, rec in changed.items()]

        return self._run(txn, write=True)


def _rollback(conn: sqlite3.Connection) -> None:
    if conn.in_transaction:
        # The original error is what matters; a failed rollback adds nothing.
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")


def _backoff(attempt: int) -> None:
    # Jitter keeps several sidecars from retrying in lockstep.
    time.sleep(min(0.01 * 2**attempt, 1.0) * (0.5 + random.random()))
