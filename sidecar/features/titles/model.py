"""The title record and its provenance."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from sidecar.features.titles.meta import sanitize_meta_for_display

__all__ = [
    "ListedSession",
    "RenameFallback",
    "RenameState",
    "TitleRecord",
    "TitleSource",
    "iso_now",
    "parse_timestamp",
]


class TitleSource(StrEnum):
    """Where a title came from; a higher rank is harder to override."""

    USER = "user"
    AGENT = "agent"
    LIST = "list"
    FALLBACK = "fallback"

    @property
    def rank(self) -> int:
        return _RANKS[self]


_RANKS = {
    TitleSource.USER: 4,
    TitleSource.AGENT: 3,
    TitleSource.LIST: 2,
    TitleSource.FALLBACK: 1,
}


class RenameState(StrEnum):
    PENDING = "pending"
    CONFIRMED = "confirmed"
    CHANGED = "changed"  # the agent chose another title
    UNCONFIRMED = "unconfirmed"


class RenameFallback(StrEnum):
    """``rename.fallback``: what an unconfirmed rename leaves behind."""

    KEEP_LOCAL = "keep_local"
    REVERT = "revert"


def iso_now(now: float) -> str:
    """``now`` (epoch seconds) as ISO 8601 UTC, the form agents send."""
    stamp = datetime.fromtimestamp(now, UTC).isoformat(timespec="milliseconds")
    return stamp.replace("+00:00", "Z")


def parse_timestamp(value: str | None) -> float | None:
    """Epoch seconds of an ISO 8601 timestamp; None when absent or unparsable.

    A timestamp without a zone is taken as UTC, so values from different
    agents compare as instants rather than as strings.
    """
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    try:
        return parsed.timestamp()
    except (OverflowError, OSError, ValueError):
        return None


@dataclass(frozen=True, slots=True)
class ListedSession:
    """One entry of an agent's ``session/list`` answer."""

    session_id: str
    cwd: str | None = None
    title: str | None = None
    updated_at: str | None = None
    meta: dict[str, Any] | None = None

    @classmethod
    def from_acp(cls, info: object) -> ListedSession | None:
        """Parse one ``SessionInfo`` of a ``session/list`` answer leniently,
        as ACP asks: a malformed optional field becomes None; an entry
        without a string ``sessionId`` is skipped (None)."""
        if not isinstance(info, Mapping):
            return None
        session_id = info.get("sessionId")
        if not isinstance(session_id, str) or not session_id:
            return None

        def text(key: str) -> str | None:
            value = info.get(key)
            return value if isinstance(value, str) else None

        meta = info.get("_meta")
        return cls(
            session_id=session_id,
            cwd=text("cwd"),
            title=text("title"),
            updated_at=text("updatedAt"),
            meta=dict(meta) if isinstance(meta, Mapping) else None,
        )


@dataclass(frozen=True, slots=True)
class TitleRecord:
    """What the cache knows about one session of one agent.

    ``title`` and ``title_source`` are None together. ``updated_at`` is the
    agent's ISO 8601 activity time (or ours when the agent sent none);
    ``created_at``/``changed_at`` are our epoch clock, for ordering.
    """

    agent: str
    session_id: str
    cwd: str | None = None
    title: str | None = None
    title_source: TitleSource | None = None
    updated_at: str | None = None
    meta: dict[str, Any] | None = None
    pending_title: str | None = None
    rename_state: RenameState | None = None
    missing: bool = False
    created_at: float = 0.0
    changed_at: float = 0.0

    @property
    def sort_key(self) -> float:
        """Newest first: the agent's activity time, else our change time."""
        parsed = parse_timestamp(self.updated_at)
        return parsed if parsed is not None else self.changed_at

    def to_session_entry(self, active: bool) -> dict[str, Any]:
        """CONTRACT.md ``SessionEntry``."""
        return {
            "sessionId": self.session_id,
            "cwd": self.cwd,
            "title": self.title,
            "titleSource": None if self.title_source is None else str(self.title_source),
            "updatedAt": self.updated_at,
            "pendingTitle": self.pending_title,
            "active": active,
        }

    def to_session_info(self) -> dict[str, Any]:
        """CONTRACT.md ``acp/sessionInfo`` params; ``meta`` made safe to show."""
        return {
            "sessionId": self.session_id,
            "title": self.title,
            "titleSource": None if self.title_source is None else str(self.title_source),
            "updatedAt": self.updated_at,
            "meta": None if self.meta is None else sanitize_meta_for_display(self.meta),
            "renameState": None if self.rename_state is None else str(self.rename_state),
        }


def search_text(title: str | None, cwd: str | None, updated_at: str | None, session_id: str) -> str:
    """What a session search looks in: title, folder, date and id, in lower case."""
    return " ".join((title or "", cwd or "", updated_at or "", session_id)).lower()


def contains_words(record: TitleRecord, words: Sequence[str]) -> bool:
    """Whether every word (lower case) is in the record's `search_text` (the store's SQL filter
    is the same rule)."""
    text = search_text(record.title, record.cwd, record.updated_at, record.session_id)
    return all(word in text for word in words)


def newest_first(record: TitleRecord) -> tuple[float, str]:
    """The order of every session list: newest first, then by id (the store's ORDER BY)."""
    return (-record.sort_key, record.session_id)
