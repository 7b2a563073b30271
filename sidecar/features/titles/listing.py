"""The titles' side of `session/list`: an agent's listing reconciled with the records, and the
entries `acp.session.list` shows (newest first, filtered in the store). Part of `Titling`, kept
apart for its size; it uses the store, the cache and the writes `Titling` holds."""

from __future__ import annotations

import heapq
import logging
import os
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from sidecar.acp.errors import AcpError
from sidecar.features.titles.api import (
    ListedSession,
    StoreUnavailable,
    TitleRecord,
    TitleStore,
    contains_words,
    newest_first,
)
from sidecar.kernel.bus import EventBus, TitleChanged
from sidecar.kernel.ports import AgentConnection

if TYPE_CHECKING:
    from sidecar.features.titles.writes import TitleWrites
    from sidecar.kernel.agent_directory import AgentDirectory
    from sidecar.kernel.options import EngineOptions

log = logging.getLogger("sidecar.features.titles.titling")

JsonObj = dict[str, Any]
T = TypeVar("T")


def _under_any(path: str, roots: Sequence[str]) -> bool:
    return any(path == root or path.startswith(root.rstrip(os.sep) + os.sep) for root in roots)


class TitleListing:
    # What it uses of `Titling` (set there).
    options: EngineOptions
    store: TitleStore | None
    writes: TitleWrites
    _agents: AgentDirectory
    _bus: EventBus
    _cache: dict[str, TitleRecord]
    _changes: int
    _changed_at: dict[str, int]
    _emit_status: Callable[[], None]
    _in_store: Callable[[Callable[[], Any]], Awaitable[Any]]
    _report: Callable[[Exception], None]
    info: Callable[[TitleRecord], JsonObj]

    # ------------------------------------------------------------------ list and reconcile
    async def reconcile(self, client: AgentConnection, cwd: str | None, agent: str) -> None:
        """Apply the `agent`'s session/list (of `cwd`) to its records."""
        sessions, complete = await client.list_sessions(cwd)
        listed = [entry for entry in map(ListedSession.from_acp, sessions) if entry is not None]
        # A listed id another agent holds stays that agent's (and is not this one's to list).
        listed = [e for e in listed if self._agents.owner.setdefault(e.session_id, agent) == agent]
        store = self.store
        if store is None:
            return
        key, max_len = self._agents.key(agent), self.options.titles_max_length
        before = self._changes
        try:
            changed = await self._in_store(
                lambda: store.reconcile(key, cwd, listed, complete, max_length=max_len)
            )
        except StoreUnavailable as exc:
            self._report(exc)
            return
        for old, rec in changed:
            sid = rec.session_id
            if sid in self._cache:
                if self.writes.busy(sid) or self._changed_at.get(sid, 0) > before:
                    continue  # changed here meanwhile: that newer record stands
                self._cache[sid] = rec
            self.writes.saved(rec)
            # Only what changes an acp/sessionInfo is told: a complete listing marks every
            # session the agent no longer lists missing, thousands at once in a long history.
            if old is None or old.to_session_info() != rec.to_session_info():
                self._bus.publish(TitleChanged(self.info(rec)))
        if changed:
            self._emit_status()

    async def reconcile_all(self, client: AgentConnection, agent: str) -> None:
        """The reconcile when an agent starts: a failure leaves the cached titles as they are, and
        is said once."""
        try:
            await self.reconcile(client, None, agent)
        except Exception as exc:
            why = exc.described() if isinstance(exc, AcpError) else repr(exc)
            # Logged once (this logger also reaches the editor's log); the cached titles stand.
            log.warning("session/list at start failed, cached titles kept: %s", why)

    async def entries(
        self,
        cwd: str | None,
        all_cwds: Sequence[str],
        active_id: str | None,
        limit: int | None = None,
        words: Sequence[str] = (),
    ) -> tuple[list[JsonObj], bool]:
        """Every configured agent's sessions, newest first, each naming its agent: the first
        `limit` (all: None) that contain every one of the lower-case `words` (in the title, the
        folder, the date or the id), and whether more would follow. Only the rows shown are read
        from the store (filtered there), so the newest few cost the same in any history."""
        store, keys = self.store, self._agents.stored_keys()
        names = {key: name for name, key in keys}

        def wanted(records: Iterable[TitleRecord]) -> dict[str, TitleRecord]:
            return {
                r.session_id: r
                for r in records
                if (cwd is None or r.cwd == cwd) and (not words or contains_words(r, words))
            }

        # What this process has shown and the store may not hold yet is the freshest; the rest is
        # read from the store (a reconcile may have shown thousands: not sorted on every list).
        shown = wanted(self.writes.ahead_of_store())
        folders = all_cwds if cwd is None else ()

        def take(stored: Iterator[TitleRecord]) -> tuple[list[tuple[TitleRecord, JsonObj]], bool]:
            fresh = sorted(shown.values(), key=newest_first)
            older = (r for r in stored if r.session_id not in shown)
            picked: list[tuple[TitleRecord, JsonObj]] = []
            seen: set[str] = set()
            for r in heapq.merge(fresh, older, key=newest_first):
                if r.agent not in names or r.session_id in seen:
                    continue  # under a key no configured agent has (any more), or listed already
                if folders and (r.cwd is None or not _under_any(r.cwd, folders)):
                    continue
                entry = r.to_session_entry(r.session_id == active_id)
                if limit is not None and len(picked) == limit:
                    return picked, True
                seen.add(r.session_id)
                picked.append((r, entry))
            return picked, False

        picked: list[tuple[TitleRecord, JsonObj]] = []
        more = False
        try:
            if store is None:
                picked, more = take(iter(()))
            else:
                # The worker is FIFO: our own queued writes land before this read.
                picked, more = await self._in_store(lambda: store.newest(names, cwd, take, words))
        except StoreUnavailable as exc:
            self._report(exc)
            shown = wanted(self.writes.shown.values())  # all the store cannot say
            picked, more = take(iter(()))
        owner = self._agents.owner
        return [
            dict(entry, agent=owner.setdefault(r.session_id, names[r.agent])) for r, entry in picked
        ], more
