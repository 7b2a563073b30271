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
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from ..titles import StoreUnavailable, TitleRecord, TitleStore

log = logging.getLogger(__name__)

T = TypeVar("T")
POLL_SECONDS = 0.25
RETRY_SECONDS = 5.0  # after the store failed to answer


class StoreWatch:
    def __init__(
        self,
        store: TitleStore,
        in_store: Callable[[Callable[[], Any]], Awaitable[Any]],
        key: Callable[[], str],
        changed: Callable[[list[TitleRecord]], None],
    ) -> None:
        self._store = store
        self._in_store = in_store  # runs a call on the store worker
        self._key = key  # whose sessions (the agent's name may become known later)
        self._changed = changed
        self._version: int | None = None
        self._seen_key: str | None = None
        self._seen: dict[str, tuple[Any, ...]] = {}

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
        """One look: records changed by others since the last look are handed to `changed`."""
        store, key = self._store, self._key()
        version: int = await self._in_store(store.data_version)
        if key != self._seen_key:
            # The first look (or another agent): what is there now is the baseline.
            self._seen = await self._in_store(lambda: store.fingerprints(key))
            self._seen_key, self._version = key, version
            return
        if version == self._version:
            return
        self._version = version
        now: dict[str, tuple[Any, ...]] = await self._in_store(lambda: store.fingerprints(key))
        differ = [sid for sid, seen in now.items() if self._seen.get(sid) != seen]
        self._seen = now
        if differ:
            records: list[TitleRecord | None] = await self._in_store(
                lambda: [store.get(key, sid) for sid in differ]
            )
            self._changed([r for r in records if r is not None])
