"""The rename flow as a pure state machine (DESIGN.md, "Rename").

ACP has no rename method: the sidecar asks the agent, in a prompt turn, to
rename the session and waits for a ``session_info_update``. The tracker only
decides; the caller does the I/O (store, notify, timers) and applies an
outcome with :func:`.rules.apply_rename_outcome`.

- the agent sends the requested title: ``confirmed``, stored as a ``user``
  title (the user chose it and the agent agreed), so no later list undoes it;
- the agent sends another title: ``changed``, the agent's title stands;
- the rename turn ends, or the timeout passes, without either:
  ``unconfirmed``, then the fallback: ``keep_local`` stores the requested
  title as a ``user`` title, ``revert`` restores the previous title.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from sidecar.features.titles.model import RenameFallback, RenameState, TitleRecord, TitleSource
from sidecar.features.titles.sanitize import sanitize_text

__all__ = ["PendingRename", "RenameOutcome", "RenameTracker"]


@dataclass(frozen=True, slots=True)
class PendingRename:
    session_id: str
    requested: str
    turn_id: str
    fallback: RenameFallback
    previous_title: str | None
    previous_source: TitleSource | None


@dataclass(frozen=True, slots=True)
class RenameOutcome:
    """How a rename ended and what to store: ``title`` with ``title_source``."""

    session_id: str
    state: RenameState
    requested: str
    title: str | None
    title_source: TitleSource | None
    fallback: RenameFallback | None = None

    @property
    def message(self) -> str:
        """One line for the user."""
        if self.state is RenameState.CONFIRMED:
            return f"Session renamed to “{self.requested}”."
        if self.state is RenameState.CHANGED:
            return f"The agent renamed the session to “{self.title}” instead of “{self.requested}”."
        if self.fallback is RenameFallback.KEEP_LOCAL:
            return f"The agent did not confirm the rename; “{self.requested}” is kept as a local title."
        if self.title is None:
            return "The agent did not confirm the rename; the session has no title again."
        return f"The agent did not confirm the rename; the title is back to “{self.title}”."


def _normalise(title: str) -> str:
    # Sanitizing strips surrounding whitespace and normalises to NFC, so a
    # trailing space or a decomposed accent still counts as the same title.
    return sanitize_text(title, sys.maxsize)


class RenameTracker:
    """At most one pending rename per session; a newer request replaces it."""

    def __init__(self, fallback: RenameFallback = RenameFallback.KEEP_LOCAL) -> None:
        self.fallback = fallback
        self._pending: dict[str, PendingRename] = {}

    def start(
        self,
        session_id: str,
        requested: str,
        previous: TitleRecord | None,
        turn_id: str,
        fallback: RenameFallback | None = None,
    ) -> PendingRename | None:
        """Track a rename whose prompt runs as ``turn_id``.

        ``previous`` is the record before the rename (for ``revert``).
        Returns the rename this one supersedes, if any.
        """
        requested = _normalise(requested)
        if not requested:
            raise ValueError("a rename needs a non-empty title")
        replaced = self._pending.get(session_id)
        if replaced is not None:
            # Revert to what preceded the first request, not to a title that
            # was only ever pending.
            previous_title, previous_source = replaced.previous_title, replaced.previous_source
        elif previous is not None:
            previous_title, previous_source = previous.title, previous.title_source
        else:
            previous_title, previous_source = None, None
        self._pending[session_id] = PendingRename(
            session_id=session_id,
            requested=requested,
            turn_id=turn_id,
            fallback=fallback if fallback is not None else self.fallback,
            previous_title=previous_title,
            previous_source=previous_source,
        )
        return replaced

    def pending(self, session_id: str) -> PendingRename | None:
        return self._pending.get(session_id)

    def cancel(self, session_id: str) -> PendingRename | None:
        """Forget a pending rename (session closed); nothing is decided."""
        return self._pending.pop(session_id, None)

    def on_agent_title(self, session_id: str, title: str | None) -> RenameOutcome | None:
        """A live title from the agent; None while it decides nothing.

        A cleared title (None, or nothing left after sanitizing) is neither a
        confirmation nor another title, so the rename stays pending.
        """
        pending = self._pending.get(session_id)
        if pending is None or title is None:
            return None
        got = _normalise(title)
        if not got:
            return None
        del self._pending[session_id]
        if got == pending.requested:
            return RenameOutcome(
                session_id=session_id,
                state=RenameState.CONFIRMED,
                requested=pending.requested,
                title=pending.requested,
                title_source=TitleSource.USER,
            )
        return RenameOutcome(
            session_id=session_id,
            state=RenameState.CHANGED,
            requested=pending.requested,
            title=got,
            title_source=TitleSource.AGENT,
        )

    def on_turn_ended(self, session_id: str, turn_id: str) -> RenameOutcome | None:
        """A turn ended; only the rename's own turn makes it unconfirmed."""
        pending = self._pending.get(session_id)
        if pending is None or pending.turn_id != turn_id:
            return None
        return self._unconfirmed(pending)

    def on_timeout(self, session_id: str, turn_id: str | None = None) -> RenameOutcome | None:
        """``rename.timeoutMs`` passed. Pass the ``turn_id`` the timer was
        armed for so a stale timer cannot end a newer rename."""
        pending = self._pending.get(session_id)
        if pending is None or (turn_id is not None and pending.turn_id != turn_id):
            return None
        return self._unconfirmed(pending)

    def _unconfirmed(self, pending: PendingRename) -> RenameOutcome:
        del self._pending[pending.session_id]
        title: str | None
        source: TitleSource | None
        if pending.fallback is RenameFallback.KEEP_LOCAL:
            title, source = pending.requested, TitleSource.USER
        else:
            title, source = pending.previous_title, pending.previous_source
        return RenameOutcome(
            session_id=pending.session_id,
            state=RenameState.UNCONFIRMED,
            requested=pending.requested,
            title=title,
            title_source=source if title is not None else None,
            fallback=pending.fallback,
        )
