"""Updates for a session the sidecar does not know yet, kept until it does.

An agent may send a session's first updates before its answer to session/new
or session/resume tells us the session exists. They are parked here per
session id and delivered when the session is attached. Bounded three ways, so
updates for sessions that never appear can neither grow without end nor crowd
out a new session: a number per session id, a number of session ids (the one
seen first is forgotten first), and an age.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import Generic, TypeVar

log = logging.getLogger(__name__)

Item = TypeVar("Item")  # an update, as the registry read it


class EarlyUpdates(Generic[Item]):
    def __init__(
        self,
        per_session: int,
        max_sessions: int,
        max_age: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.per_session = per_session
        self.max_sessions = max_sessions
        self.max_age = max_age
        self._clock = clock
        # session id -> (arrival time, update), oldest session id first.
        self._parked: OrderedDict[str, deque[tuple[float, Item]]] = OrderedDict()
        self._warned: set[str] = set()

    def __len__(self) -> int:
        return sum(len(updates) for updates in self._parked.values())

    def keep(self, session_id: str, update: Item) -> bool:
        """Park an update; False when it had to be dropped (that session id's share is full)."""
        now = self._clock()
        self._expire(now)
        updates = self._parked.get(session_id)
        if updates is None:
            while len(self._parked) >= self.max_sessions:
                forgotten, dropped = self._parked.popitem(last=False)
                log.warning(
                    "forgot %d early updates for session %.80s: never attached", len(dropped), forgotten
                )
            updates = self._parked[session_id] = deque()
        if len(updates) >= self.per_session:
            if session_id not in self._warned:
                self._warned.add(session_id)
                log.warning("dropping updates for unknown session %.80s (its buffer is full)", session_id)
            return False
        updates.append((now, update))
        return True

    def take(self, session_id: str) -> list[Item]:
        """The updates parked for this session, oldest first; they are forgotten here."""
        self._expire(self._clock())
        self._warned.discard(session_id)
        return [update for _, update in self._parked.pop(session_id, ())]

    def _expire(self, now: float) -> None:
        for session_id in list(self._parked):
            updates = self._parked[session_id]
            while updates and now - updates[0][0] > self.max_age:
                updates.popleft()
            if not updates:
                del self._parked[session_id]
