"""The title cache's schema, how a record maps to a row, and how SQLite's errors are told apart.

Kept apart from `store` (which owns connections, transactions, recovery) so that a
schema change, a new column or a new error case is read and reviewed in one place.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any, TypeVar

from sidecar.features.titles.model import RenameState, TitleRecord, TitleSource

T = TypeVar("T")

# Migration N (1-based) brings a database from user_version N-1 to N. Append
# only: a released step is never edited, since databases in the field have
# already run it.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    # v1: the table. sort_at is the parsed updatedAt (else our change time),
    # so sessions of agents in different time zones order as instants.
    (
        """
        CREATE TABLE titles (
            agent TEXT NOT NULL,
            session_id TEXT NOT NULL,
            cwd TEXT,
            title TEXT,
            title_source TEXT,
            updated_at TEXT,
            sort_at REAL NOT NULL,
            meta TEXT,
            pending_title TEXT,
            missing INTEGER NOT NULL DEFAULT 0,
            created_at REAL NOT NULL,
            changed_at REAL NOT NULL,
            PRIMARY KEY (agent, session_id)
        ) WITHOUT ROWID
        """,
        "CREATE INDEX titles_by_cwd ON titles (agent, cwd)",
        "CREATE INDEX titles_by_time ON titles (agent, sort_at DESC)",
    ),
    # v2: how the last rename ended, so it survives a restart.
    ("ALTER TABLE titles ADD COLUMN rename_state TEXT",),
)
SCHEMA_VERSION = len(MIGRATIONS)

COLUMNS = (
    "agent",
    "session_id",
    "cwd",
    "title",
    "title_source",
    "updated_at",
    "sort_at",
    "meta",
    "pending_title",
    "rename_state",
    "missing",
    "created_at",
    "changed_at",
)
SELECT = f"SELECT {', '.join(COLUMNS)} FROM titles"
UPSERT = (
    f"INSERT INTO titles ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})"
    " ON CONFLICT (agent, session_id) DO UPDATE SET " + ", ".join(f"{c} = excluded.{c}" for c in COLUMNS[2:])
)

# SQLite primary result codes (the low byte of an extended code).
SQLITE_BUSY = 5
SQLITE_LOCKED = 6
SQLITE_CORRUPT = 11
SQLITE_CANTOPEN = 14
SQLITE_NOTADB = 26

MAX_ATTEMPTS = 8


class Corrupt(Exception):
    pass


def error_code(exc: sqlite3.Error) -> int:
    return int(getattr(exc, "sqlite_errorcode", -1)) & 0xFF


def is_busy(exc: sqlite3.Error) -> bool:
    return error_code(exc) in (SQLITE_BUSY, SQLITE_LOCKED)


def is_corrupt(exc: sqlite3.Error) -> bool:
    if error_code(exc) in (SQLITE_CORRUPT, SQLITE_NOTADB):
        return True
    # Plain DatabaseError (not Operational) is how "not a database" and
    # "malformed" surface when the error code is unavailable.
    return type(exc) is sqlite3.DatabaseError


def _dump_meta(meta: dict[str, Any] | None) -> str | None:
    # ASCII escapes keep lone surrogates from JSON storable as text.
    return None if meta is None else json.dumps(meta, separators=(",", ":"))


def _load_meta(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _enum_or_none(enum: type[T], value: object) -> T | None:
    try:
        return enum(value)  # type: ignore[call-arg]
    except ValueError:
        return None


def to_row(rec: TitleRecord) -> tuple[Any, ...]:
    return (
        rec.agent,
        rec.session_id,
        rec.cwd,
        rec.title,
        None if rec.title_source is None else str(rec.title_source),
        rec.updated_at,
        rec.sort_key,
        _dump_meta(rec.meta),
        rec.pending_title,
        None if rec.rename_state is None else str(rec.rename_state),
        int(rec.missing),
        rec.created_at,
        rec.changed_at,
    )


def from_row(row: Sequence[Any]) -> TitleRecord:
    (
        agent,
        session_id,
        cwd,
        title,
        source,
        updated_at,
        _sort_at,
        meta,
        pending,
        rename_state,
        missing,
        created_at,
        changed_at,
    ) = row
    # Rows written by hand or by a future version may be odd: read them
    # leniently rather than fail the whole list.
    title_source = _enum_or_none(TitleSource, source) if title is not None else None
    return TitleRecord(
        agent=agent,
        session_id=session_id,
        cwd=cwd,
        title=title,
        title_source=title_source,
        updated_at=updated_at,
        meta=_load_meta(meta),
        pending_title=pending,
        rename_state=_enum_or_none(RenameState, rename_state),
        missing=bool(missing),
        created_at=float(created_at),
        changed_at=float(changed_at),
    )
