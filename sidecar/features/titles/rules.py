"""Provenance rules: pure functions from (record, event) to the new record.

Each function returns the *same object* when nothing changes, so the store
can skip the write and callers can skip the notification. ``changed_at`` is
bumped only by a real change.

The order of authority is ``user`` > ``agent`` > ``list`` > ``fallback``.
A ``session_info_update`` from the agent (live or replayed by
``session/load``) replaces any title but a ``user`` one: only the user
changes a user's title, through a rename (:mod:`.rename`, which stores a
confirmed or kept title with source ``user``, and decides what the agent's
answer to a rename means).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from enum import Enum
from typing import TYPE_CHECKING, Any, Final

from sidecar.features.titles.meta import MetaError, patch_meta
from sidecar.features.titles.model import (
    ListedSession,
    RenameState,
    TitleRecord,
    TitleSource,
    iso_now,
    parse_timestamp,
)
from sidecar.features.titles.sanitize import DEFAULT_MAX_LENGTH, sanitize_text

if TYPE_CHECKING:
    from sidecar.features.titles.rename import RenameOutcome

__all__ = [
    "UNSET",
    "Unset",
    "apply_agent_info",
    "apply_fallback",
    "apply_listed",
    "apply_rename_outcome",
    "apply_user_title",
    "clear_pending",
    "mark_missing",
    "new_record",
    "session_info_fields",
    "set_pending",
]

# updatedAt is shown to the editor too; an ISO 8601 stamp is ~30 characters.
_MAX_TIMESTAMP_LENGTH = 64


class Unset(Enum):
    """Marks a field the update omitted (as opposed to null = cleared)."""

    UNSET = "UNSET"

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Final = Unset.UNSET


def new_record(agent: str, session_id: str, now: float, cwd: str | None = None) -> TitleRecord:
    return TitleRecord(agent=agent, session_id=session_id, cwd=cwd, created_at=now, changed_at=now)


def _apply(rec: TitleRecord | None, base: TitleRecord, now: float, changes: dict[str, Any]) -> TitleRecord:
    """``base`` with ``changes`` stamped ``now``; ``rec`` itself if nothing
    differs. One ``replace`` per event: reconciling 10 000 sessions is hot."""
    diff = {k: v for k, v in changes.items() if getattr(base, k) != v}
    if not diff:
        return rec if rec is not None else base
    return dataclasses.replace(base, changed_at=now, **diff)


def _forget_finished_rename(base: TitleRecord, changes: dict[str, Any]) -> None:
    # Once the title moves on for another reason, "confirmed" (or changed,
    # unconfirmed) no longer describes it; a pending rename stays pending.
    if (
        "title" in changes
        and changes["title"] != base.title
        and base.rename_state not in (None, RenameState.PENDING)
    ):
        changes["rename_state"] = None


def _clean_title(title: object, max_length: int) -> str | None:
    # A non-string is malformed; ACP deserializes such fields to their default.
    if not isinstance(title, str):
        return None
    return sanitize_text(title, max_length) or None


def _clean_timestamp(value: object) -> str | None:
    if not isinstance(value, str):
        return None
    return sanitize_text(value, _MAX_TIMESTAMP_LENGTH) or None


def apply_agent_info(
    rec: TitleRecord | None,
    *,
    agent: str,
    session_id: str,
    now: float,
    title: str | Unset | None = UNSET,
    updated_at: str | Unset | None = UNSET,
    meta: object = UNSET,
    max_length: int = DEFAULT_MAX_LENGTH,
) -> TitleRecord:
    """A ``session_info_update``: omitted = unchanged, None = cleared.

    A ``user`` title is never changed or cleared here (its ``updatedAt`` and
    ``_meta`` still are). A title that sanitizes to nothing counts as
    cleared; a field of the wrong type counts as omitted. A new title without
    ``updated_at`` is stamped with our clock, so a stale ``session/list``
    cannot replace it. A ``_meta`` patch that is malformed or would push the
    stored object past the limits of :func:`check_meta` is ignored (callers
    that want to report it run ``check_meta`` themselves).
    """
    base = rec if rec is not None else new_record(agent, session_id, now)
    changes: dict[str, Any] = {}
    # A malformed field (not a string, not null) counts as omitted: one bad
    # field must not clear what the agent told us before.
    if title is not None and not isinstance(title, str):
        title = UNSET
    if updated_at is not None and not isinstance(updated_at, str):
        updated_at = UNSET
    if not isinstance(title, Unset) and base.title_source is not TitleSource.USER:
        cleaned = _clean_title(title, max_length)
        if cleaned is None:
            changes.update(title=None, title_source=None)
        else:
            changes.update(title=cleaned, title_source=TitleSource.AGENT)
            if cleaned != base.title and isinstance(updated_at, Unset):
                changes["updated_at"] = iso_now(now)
    if not isinstance(updated_at, Unset):
        changes["updated_at"] = _clean_timestamp(updated_at)
    if not isinstance(meta, Unset):
        changes["meta"] = _merged_meta(base.meta, meta)
    _forget_finished_rename(base, changes)
    return _apply(rec, base, now, changes)


def session_info_fields(update: Mapping[str, Any]) -> dict[str, Any]:
    """Keyword arguments for :func:`apply_agent_info` from an ACP
    ``session_info_update`` object: only the fields it carries, so that an
    omitted field stays unchanged and a ``null`` one clears."""
    fields: dict[str, Any] = {}
    for wire, name in (("title", "title"), ("updatedAt", "updated_at"), ("_meta", "meta")):
        if wire in update:
            fields[name] = update[wire]
    return fields


def _merged_meta(current: dict[str, Any] | None, patch: object) -> dict[str, Any] | None:
    try:
        return patch_meta(current, patch)
    except MetaError:
        return current


def _listed_is_newer(listed_at: str | None, current_at: str | None) -> bool:
    """Strictly newer; an unparsable or absent listed time is older."""
    listed = parse_timestamp(listed_at)
    if listed is None:
        return False
    current = parse_timestamp(current_at)
    return current is None or listed > current


def apply_listed(
    rec: TitleRecord | None,
    listed: ListedSession,
    now: float,
    *,
    agent: str | None = None,
    max_length: int = DEFAULT_MAX_LENGTH,
) -> TitleRecord:
    """Reconcile with one ``session/list`` entry.

    A listed title fills a missing title and replaces ``list`` and
    ``fallback`` titles; it never replaces a ``user`` title, nor an ``agent``
    title unless the listed ``updatedAt`` is strictly newer. A listed entry
    without a title clears nothing. The record stops being ``missing`` and
    takes the listed ``cwd``. ``agent`` is needed only when ``rec`` is None.
    """
    if rec is None:
        if agent is None:
            raise ValueError("apply_listed needs the agent to create a record")
        base = new_record(agent, listed.session_id, now)
    else:
        if rec.session_id != listed.session_id:
            raise ValueError(f"listed session {listed.session_id!r} is not {rec.session_id!r}")
        base = rec
    changes: dict[str, Any] = {"missing": False}
    if listed.cwd is not None:
        changes["cwd"] = listed.cwd

    listed_at = _clean_timestamp(listed.updated_at)
    newer = _listed_is_newer(listed_at, base.updated_at)
    title = _clean_title(listed.title, max_length)
    source = base.title_source
    if title is not None and (
        base.title is None
        or source in (TitleSource.LIST, TitleSource.FALLBACK)
        or (source is TitleSource.AGENT and newer)
    ):
        changes.update(title=title, title_source=TitleSource.LIST)
    if newer or (base.updated_at is None and listed_at is not None):
        changes["updated_at"] = listed_at
    # The list's _meta is the agent's own snapshot: merge it unless ours is newer.
    if isinstance(listed.meta, dict) and listed.meta and (newer or base.updated_at is None):
        changes["meta"] = _merged_meta(base.meta, listed.meta)
    _forget_finished_rename(base, changes)
    return _apply(rec, base, now, changes)


def mark_missing(rec: TitleRecord) -> TitleRecord:
    """The agent's complete list no longer has this session: keep it, flagged.

    ``changed_at`` is kept: going missing is not activity.
    """
    return rec if rec.missing else dataclasses.replace(rec, missing=True)


def apply_fallback(
    rec: TitleRecord | None,
    title: str | None,
    *,
    agent: str,
    session_id: str,
    now: float,
    cwd: str | None = None,
    max_length: int = DEFAULT_MAX_LENGTH,
) -> TitleRecord | None:
    """A title from the first prompt, only when the session has none."""
    cleaned = _clean_title(title, max_length)
    if cleaned is None or (rec is not None and rec.title is not None):
        return rec
    base = rec if rec is not None else new_record(agent, session_id, now, cwd)
    changes: dict[str, Any] = {"title": cleaned, "title_source": TitleSource.FALLBACK}
    if base.cwd is None and cwd is not None:
        changes["cwd"] = cwd
    _forget_finished_rename(base, changes)
    return _apply(rec, base, now, changes)


def apply_user_title(
    rec: TitleRecord | None,
    title: str,
    *,
    agent: str,
    session_id: str,
    now: float,
    max_length: int = DEFAULT_MAX_LENGTH,
) -> TitleRecord:
    """A title the user owns (a confirmed rename, or ``keep_local``)."""
    base = rec if rec is not None else new_record(agent, session_id, now)
    cleaned = _clean_title(title, max_length)
    source = None if cleaned is None else TitleSource.USER
    return _apply(rec, base, now, {"title": cleaned, "title_source": source})


def set_pending(
    rec: TitleRecord | None,
    title: str,
    *,
    agent: str,
    session_id: str,
    now: float,
) -> TitleRecord:
    """A rename was requested: remember the title until the agent answers."""
    base = rec if rec is not None else new_record(agent, session_id, now)
    return _apply(rec, base, now, {"pending_title": title, "rename_state": RenameState.PENDING})


def clear_pending(
    rec: TitleRecord,
    state: RenameState | None,
    *,
    now: float,
) -> TitleRecord:
    """The rename is over: drop ``pendingTitle`` and record how it ended."""
    if state is RenameState.PENDING:
        raise ValueError("clear_pending needs a final state, not pending")
    return _apply(rec, rec, now, {"pending_title": None, "rename_state": state})


def apply_rename_outcome(
    rec: TitleRecord | None,
    outcome: RenameOutcome,
    *,
    agent: str,
    now: float,
) -> TitleRecord:
    """Store what a finished rename decided: its title, source and state."""
    base = rec if rec is not None else new_record(agent, outcome.session_id, now)
    changes = {
        "title": outcome.title,
        "title_source": outcome.title_source if outcome.title is not None else None,
        "pending_title": None,
        "rename_state": outcome.state,
    }
    return _apply(rec, base, now, changes)
