"""Changes other sidecars make to the shared title cache, noticed within a second.

SQLite's `data_version` changes when another connection commits. The store
worker polls it every `POLL_SECONDS` (microseconds of work); only when it
changed are the sessions' shown fields read (about 10 ms for 10 000 sessions)
and compared with the previous read, and the few records that differ are read
whole and handed over.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Collection
from typing import Any, TypeVar

from sidecar.features.titles.api import StoreUnavailable, TitleRecord, TitleStore

log = logging.getLogger(__name__)

T = TypeVar("T")
POLL_SECONDS = 0.25
RETRY_SECONDS = 5.0  # after the store failed to answer


class StoreWatch:
    def __init__(
        self,
        store: TitleStore,
        in_store: Callable[[Callable[[], Any]], Awaitable[Any]],
        keys: Callable[[], list[str]],
        # Returns the sessions it left for later (busy here): they are handed over again.
        changed: Callable[[list[TitleRecord], int], Collection[str] | None],
        known: Callable[[], Collection[str]] = tuple,
        mark: Callable[[], int] = lambda: 0,
    ) -> None:
        self._store = store
        self._in_store = in_store  # runs a call on the store worker
        # Whose sessions: every configured agent's key (an agent's name may become known later).
        self._keys = keys
        self._changed = changed
        # Sessions this process shows: when an agent's key becomes known (it started), their
        # records under it are compared at once (another sidecar may have saved one meanwhile).
        self._known = known
        # A counter of this process's own changes: `changed` gets its value from before the read,
        # so a record read before a local change lands is not taken for a newer one.
        self._mark = mark
        self._version: int | None = None
        self._seen_keys: list[str] | None = None
        self._seen: dict[tuple[str, str], tuple[Any, ...]] = {}

    async def run(self) -> None:
        failing = False
        while True:
            try:
                await self.poll()
            except StoreUnavailable as exc:
                if not failing:  # once per outage, not every few seconds
                    log.warning("watching the title cache for other sidecars' changes: %s", exc)
                failing = True
                await asyncio.sleep(RETRY_SECONDS)
                continue
            failing = False
            await asyncio.sleep(POLL_SECONDS)

    async def poll(self) -> None:
        """One look: records changed by others since the last look are handed to `changed`, with
        the `mark` taken before they were read."""
        store, keys, before = self._store, self._keys(), self._mark()

        def fingerprints() -> dict[tuple[str, str], tuple[Any, ...]]:
            return {(key, sid): fp for key in keys for sid, fp in store.fingerprints(key).items()}

        version: int = await self._in_store(store.data_version)
        if keys != self._seen_keys:
            # The first look (or an agent's name became known): what is there now is the baseline;
            # under a new key, the records of the sessions shown here are handed over to compare.
            new_keys = set(keys) - set(self._seen_keys or keys)
            known = set(self._known()) if new_keys else set()
            self._seen = await self._in_store(fingerprints)
            self._seen_keys, self._version = keys, version
            fresh = [(key, sid) for key, sid in self._seen if key in new_keys and sid in known]
            if fresh:
                found = await self._in_store(lambda: [store.get(key, sid) for key, sid in fresh])
                self._again(self._changed([r for r in found if r is not None], before))
            return
        if version == self._version:
            return
        self._version = version
        now: dict[tuple[str, str], tuple[Any, ...]] = await self._in_store(fingerprints)
        differ = [pair for pair, seen in now.items() if self._seen.get(pair) != seen]
        self._seen = now
        if differ:
            records: list[TitleRecord | None] = await self._in_store(
                lambda: [store.get(key, sid) for key, sid in differ]
            )
            self._again(self._changed([r for r in records if r is not None], before))

    def _again(self, deferred: Collection[str] | None) -> None:
        """Records `changed` left for later are compared again at the next look, even when nothing
        else changes: the change that made them wait may end without a write of its own."""
        if not deferred:
            return
        for pair in [pair for pair in self._seen if pair[1] in deferred]:
            del self._seen[pair]
        self._version = None
