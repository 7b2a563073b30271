"""Between a session's title in memory and the SQLite store: coalesced writes, shown once saved.

What the editor is told of a title is already in the store, so a kill -9 of the
sidecar never loses a title the user saw. Per session at most one write is in
flight; the changes made meanwhile are applied together in the next
transaction, so a burst of updates costs a few transactions, not one each.
When a write commits, the store's record (merged with what other sidecars
wrote) is shown. The one exception is bounded: a write still not committed
after `SHOW_UNSAVED_AFTER` seconds (the store is locked by another sidecar or
the disk is slow), or one that failed (reported to the user), shows the
in-memory record, and is retried until it lands.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field
from typing import Any

from sidecar.features.titles.api import StoreUnavailable, TitleRecord, TitleStore

log = logging.getLogger(__name__)

Rules = Callable[[TitleRecord | None], TitleRecord | None]
Written = Future[tuple[TitleRecord | None, TitleRecord | None]]

SHOW_UNSAVED_AFTER = 1.0
RETRY_SECONDS = 5.0


def chain(changes: list[Rules]) -> Rules:
    """One rules function applying `changes` in order (None from one = it changed nothing)."""

    def apply(record: TitleRecord | None) -> TitleRecord | None:
        for change in changes:
            new = change(record)
            if new is not None:
                record = new
        return record

    return apply


def replace_with(record: TitleRecord) -> Rules:
    def write(_stored: TitleRecord | None) -> TitleRecord | None:
        return record

    return write


@dataclass
class _Session:
    queued: list[Rules] = field(default_factory=list)
    writing: bool = False
    show: bool = False  # the editor is to be told once what is changed so far is saved
    force: bool = False  # tell it even when the record equals what it was shown
    overdue: asyncio.TimerHandle | None = None


class TitleWrites:
    def __init__(
        self,
        executor: Executor,
        cache: dict[str, TitleRecord],
        *,
        show: Callable[[TitleRecord], None],
        report: Callable[[Exception], None],
        spawn: Callable[[Coroutine[Any, Any, None], str], asyncio.Task[Any]],
    ) -> None:
        self._executor = executor
        self._cache = cache  # the newest record of each session (shared with Titling)
        self._show = show
        self._report = report
        self._spawn = spawn
        self.store: TitleStore | None = None
        # The key a session's record is stored under (its agent's): Titling sets it.
        self.key_of: Callable[[str], str] = lambda _session_id: ""
        self.shown: dict[str, TitleRecord] = {}  # what the editor was told
        self.dirty: set[str] = set()
        self.transactions = 0
        self.shown_unsaved = 0
        self._sessions: dict[str, _Session] = {}
        self._retry_task: asyncio.Task[Any] | None = None
        self._forgotten: set[str] = set()  # deleted sessions whose last write may still land
        self._idle = asyncio.Event()
        self._idle.set()

    def _session(self, session_id: str) -> _Session:
        return self._sessions.setdefault(session_id, _Session())

    def busy(self, session_id: str) -> bool:
        state = self._sessions.get(session_id)
        return state is not None and (state.writing or bool(state.queued))

    def idle(self) -> bool:
        return not any(s.writing or s.queued for s in self._sessions.values())

    def ahead_of_store(self) -> list[TitleRecord]:
        """What the editor was shown that the store may not hold yet: the records of sessions
        with a write queued, in flight or failed. Every other shown record was read from the store
        or shown once its write committed (the store holds it, or something newer)."""
        pending = self.dirty | {sid for sid, state in self._sessions.items() if state.writing or state.queued}
        return [self.shown[sid] for sid in pending if sid in self.shown]

    def saved(self, record: TitleRecord) -> None:
        """A record read from the store: it is what the editor may be shown."""
        self.shown[record.session_id] = record

    # ------------------------------------------------------------------ writing
    def forget(self, session_id: str) -> None:
        """A deleted session: nothing more is written or shown for it (a write in flight lands
        first: the store's worker runs the caller's delete after it)."""
        state = self._sessions.pop(session_id, None)
        if state is not None:
            if state.overdue is not None:
                state.overdue.cancel()
            if state.writing:
                self._forgotten.add(session_id)
        self.shown.pop(session_id, None)
        self.dirty.discard(session_id)
        if self.idle():
            self._idle.set()

    def write(self, session_id: str, change: Rules) -> None:
        """Apply `change` in the store, coalesced with the session's other pending changes."""
        self._forgotten.discard(session_id)
        state = self._session(session_id)
        state.queued.append(change)
        if not state.writing:
            self._submit(session_id, state)

    def _submit(self, session_id: str, state: _Session) -> None:
        store = self.store
        if store is None:
            state.queued.clear()
            self._failed(session_id, state, None)
            return
        changes, state.queued = state.queued, []
        state.writing = True
        self._idle.clear()
        loop = asyncio.get_running_loop()
        future = self._executor.submit(store.update, self.key_of(session_id), session_id, chain(changes))
        future.add_done_callback(lambda f: loop.call_soon_threadsafe(self._written, session_id, f))

    def _written(self, session_id: str, future: Written) -> None:
        if session_id in self._forgotten:  # deleted meanwhile
            self._forgotten.discard(session_id)
            if self.idle():
                self._idle.set()
            return
        state = self._session(session_id)
        state.writing = False
        try:
            self._after_write(session_id, state, future)
        finally:
            if self.idle():
                self._idle.set()

    def _after_write(self, session_id: str, state: _Session, future: Written) -> None:
        try:
            _old, stored = future.result()
        except StoreUnavailable as exc:
            self._failed(session_id, state, exc)
            return
        except Exception as exc:  # a bug must not lose the in-memory title
            log.exception("saving the title of %s failed", session_id)
            self._failed(session_id, state, exc)
            return
        self.transactions += 1
        more = bool(state.queued)
        if more:
            self._submit(session_id, state)
        elif stored is not None and stored != self._cache.get(session_id):
            # Another sidecar changed this session meanwhile: the merged record wins.
            self._cache[session_id] = stored
            state.show = True
        if stored is not None and state.show:
            self._tell(session_id, state, stored, saved=not more)

    def _failed(self, session_id: str, state: _Session, exc: Exception | None) -> None:
        if exc is not None:
            self._report(exc)
        self.dirty.add(session_id)
        if self._retry_task is None or self._retry_task.done():
            self._retry_task = self._spawn(self._retry_later(), "titles-retry")
        record = self._cache.get(session_id)
        if state.show and record is not None:
            self.shown_unsaved += 1
            self._tell(session_id, state, record, saved=True)

    async def _retry_later(self) -> None:
        while self.dirty:
            await asyncio.sleep(RETRY_SECONDS)
            self.persist_dirty()

    def persist_dirty(self) -> None:
        dirty, self.dirty = self.dirty, set()
        for session_id in dirty:
            record = self._cache.get(session_id)
            if record is not None:
                self.write(session_id, replace_with(record))

    # ------------------------------------------------------------------ showing
    def show_when_saved(self, session_id: str, force: bool = False) -> None:
        """Tell the editor the session's record once every change made so far is saved."""
        state = self._session(session_id)
        state.show = True
        state.force = state.force or force
        if not (state.writing or state.queued):
            record = self._cache.get(session_id)
            if record is not None:
                self._tell(session_id, state, record, saved=True)
            return
        if state.overdue is None:
            loop = asyncio.get_running_loop()
            state.overdue = loop.call_later(SHOW_UNSAVED_AFTER, self._overdue, session_id)

    def _overdue(self, session_id: str) -> None:
        state = self._session(session_id)
        state.overdue = None
        record = self._cache.get(session_id)
        if state.show and record is not None:
            self.shown_unsaved += 1
            self._tell(session_id, state, record, saved=True)

    def _tell(self, session_id: str, state: _Session, record: TitleRecord, *, saved: bool) -> None:
        """Show `record`; when it holds every change so far (`saved`), the request is done."""
        if saved:
            state.show = False
            if state.overdue is not None:
                state.overdue.cancel()
                state.overdue = None
        if record == self.shown.get(session_id) and not state.force:
            return
        if saved:
            state.force = False
        self.shown[session_id] = record
        self._show(record)

    # ------------------------------------------------------------------ closing
    async def flush(self, timeout: float) -> None:
        """Wait for every queued write to land (then one more try for failed ones)."""
        if self._retry_task is not None:
            self._retry_task.cancel()
        async with asyncio.timeout(timeout):
            await self._idle.wait()
            self.persist_dirty()
            await self._idle.wait()
        for state in self._sessions.values():
            if state.overdue is not None:
                state.overdue.cancel()
