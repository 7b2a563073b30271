"""Updates for a session the sidecar does not know yet, kept until it does.

An agent may send a session's first updates before its answer to session/new
(or session/resume) tells us the session exists.
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger(__name__)

JsonObj = dict[str, Any]


class EarlyUpdates:
    def __init__(self, bound: int) -> None:
        self.bound = bound
        self._updates: dict[str, list[JsonObj]] = {}
        self._count = 0

    def keep(self, session_id: str, update: JsonObj) -> bool:
        """Park an update; False when it had to be dropped."""
        if self._count >= self.bound:
            log.warning("dropped an update for unknown session %s (buffer full)", session_id)
            return False
        self._updates.setdefault(session_id, []).append(update)
        self._count += 1
        return True

    def take(self, session_id: str) -> list[JsonObj]:
        """The updates parked for this session, oldest first; they are forgotten here."""
        early = self._updates.pop(session_id, [])
        self._count -= len(early)
        return early
