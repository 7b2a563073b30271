"""The engine's side of titles: the store, live updates, fallback, reconcile, rename.

Decisions about provenance live in `sidecar.features.titles.rules`; this module applies
them at the right moments of a session's life and tells the editor.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any, Protocol, TypeVar

from sidecar.acp.errors import INTERNAL_ERROR, RESOURCE_NOT_FOUND
from sidecar.features.titles.api import (
    UNSET,
    RenameFallback,
    RenameOutcome,
    RenameState,
    RenameTracker,
    StoreUnavailable,
    TitleRecord,
    TitleSource,
    TitleStore,
    apply_agent_info,
    apply_fallback,
    apply_rename_outcome,
    fallback_title,
    new_record,
    sanitize_text,
    set_pending,
    validate_user_title,
)
from sidecar.features.titles.listing import TitleListing
from sidecar.features.titles.meta import MetaError, check_meta
from sidecar.features.titles.rules import session_info_fields
from sidecar.features.titles.sanitize import InvalidTitle
from sidecar.features.titles.watch import StoreWatch
from sidecar.features.titles.writes import Rules, TitleWrites, chain
from sidecar.kernel import errors
from sidecar.kernel.bus import TitleChanged
from sidecar.kernel.context import EngineContext
from sidecar.kernel.errors import SidecarError
from sidecar.kernel.session import Session
from sidecar.kernel.turns import Turn
from sidecar.state_dir import secure_state_dir

log = logging.getLogger(__name__)

JsonObj = dict[str, Any]
T = TypeVar("T")
# `session/set_title` on the agent, its errors made user-facing: the title the agent stored.
SetTitle = Callable[[str, str], Awaitable[str]]


class TitleEvents(Protocol):
    """What titling tells the user directly (a title change goes on the bus: `TitleChanged`)."""

    def on_log(self, level: str, message: str) -> None: ...
    def on_error(self, message: str) -> None: ...


class Titling(TitleListing):
    """Titles of this process's sessions, kept in memory and persisted in the background.

    The SQLite store lives behind one worker thread: a database locked by
    another sidecar, or a slow disk, never stalls the event loop. Each change is
    applied at once to the in-memory record (what the rules build on) and then
    re-applied inside a store transaction (so concurrent sidecars merge); the
    editor is told once it is saved (`TitleWrites`); a write that fails is
    retried until it lands.
    """

    def __init__(self, ctx: EngineContext) -> None:
        options = self.options = ctx.options
        self._events: TitleEvents = ctx.listener
        self._bus = ctx.bus
        spawn = self._spawn = ctx.spawn
        self._emit_status = ctx.status_changed
        # Which agent owns each session, and the key each agent's titles are stored under.
        self._agents = ctx.agents
        self.store: TitleStore | None = None
        self.tracker = RenameTracker(fallback=RenameFallback(options.rename_fallback))
        self._timers: dict[str, asyncio.Task[None]] = {}
        self._cache: dict[str, TitleRecord] = {}
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="titles")
        self.writes = TitleWrites(
            self._executor, self._cache, show=self._emit, report=self._report, spawn=spawn
        )
        self.writes.key_of = self._key
        self._last_error_at = 0.0
        # A counter of local changes, so a slow store answer never overwrites a newer one.
        self._changes = 0
        self._changed_at: dict[str, int] = {}
        # Sessions whose session/set_title is in flight, with the agent's session_info_updates
        # that arrive meanwhile (held back, then applied together with the rename's outcome).
        self._setting_title: set[str] = set()
        self._held: dict[str, list[Rules]] = {}

    # ------------------------------------------------------------------ lifecycle
    async def open(self) -> None:
        state = self.options.state_dir
        # The first touch of the state dir at start: make it (and what is in it) private.
        for note in await self._in_store(lambda: secure_state_dir(state)):
            self._events.on_log("warning", note)
        path = state / "titles.sqlite3"
        store = self.store = await self._in_store(lambda: TitleStore.open_or_memory(path))
        self.writes.store = store
        for warning in store.warnings:
            self._events.on_error(warning)
        if not store.in_memory:
            watch = StoreWatch(
                store,
                self._in_store,
                lambda: [k for _n, k in self._agents.stored_keys()],
                self._changed_elsewhere,
                known=lambda: list(self.writes.shown),
                mark=lambda: self._changes,
            )
            self._spawn(watch.run(), "titles-watch")

    async def save_pending(self, timeout: float) -> None:
        """Land every queued or failed write now (bounded); the store stays open for more."""
        try:
            await self.writes.flush(timeout)
        except Exception as exc:  # the final flush in `aclose` tries again
            log.warning("saving titles at shutdown: %r", exc)

    async def aclose(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        with contextlib.suppress(Exception):
            # Everything queued lands first; then one more try for what failed.
            await self.writes.flush(10)
        store = self.store
        if store is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._in_store(store.close), 5)
        self._executor.shutdown(wait=False)

    def _key(self, session_id: str) -> str:
        """The key the session's title is stored under: its agent's."""
        return self._agents.key_of(session_id)

    def info(self, rec: TitleRecord) -> JsonObj:
        """The record's acp/sessionInfo, naming the configured agent the session belongs to."""
        info = rec.to_session_info()
        info["agent"] = self._agents.name_of_key(rec.agent) or self._agents.owner_of(rec.session_id)
        return info

    # ------------------------------------------------------------------ store access
    async def _in_store(self, fn: Callable[[], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn)

    def _report(self, exc: Exception) -> None:
        now = time.monotonic()
        if now - self._last_error_at > 30:  # one message per burst, not one per write
            self._last_error_at = now
            self._events.on_error(
                f"title cache: {exc} Titles are kept in memory and saved when it works again."
            )
        self._events.on_log("warning", f"title cache: {exc}")

    def _update(
        self, session_id: str, fn: Callable[[TitleRecord | None], TitleRecord | None]
    ) -> TitleRecord | None:
        """Apply a rules function now in memory, then in a store transaction; the new record if changed.

        Nothing is shown here: callers ask `writes.show_when_saved`.
        """
        old = self._cache.get(session_id)
        new = fn(old)
        if new is None or new == old:
            return None
        self._cache[session_id] = new
        self._changes += 1
        self._changed_at[session_id] = self._changes
        self.writes.write(session_id, fn)
        return new

    def record(self, session_id: str) -> TitleRecord | None:
        return self._cache.get(session_id)

    def title_of(self, session_id: str) -> str | None:
        """The title the editor is shown: saved (see `TitleWrites`)."""
        rec = self.writes.shown.get(session_id)
        return rec.title if rec else None

    async def find(self, session_id: str) -> TitleRecord | None:
        """What the title cache knows of a session (this process's, or any other's), or None."""
        return self._cache.get(session_id) or await self._stored(session_id)

    async def cwd_of(self, session_id: str) -> str | None:
        rec = self._cache.get(session_id) or await self._stored(session_id)
        return rec.cwd if rec else None

    async def _stored(self, session_id: str) -> TitleRecord | None:
        """The stored record of the session: under its agent's key when its agent is known, else
        under the first configured agent's that has it (which then owns the session)."""
        store = self.store
        if store is None:
            return None
        known = session_id in self._agents.owner
        keys = [self._key(session_id)] if known else [k for _n, k in self._agents.stored_keys()]
        try:
            found = await self._in_store(
                lambda: next((r for r in (store.get(k, session_id) for k in keys) if r is not None), None)
            )
        except StoreUnavailable as exc:
            self._report(exc)
            return None
        if found is not None and not known and (name := self._agents.name_of_key(found.agent)) is not None:
            self._agents.owner.setdefault(session_id, name)
        return found

    def _changed_elsewhere(self, records: list[TitleRecord], before: int) -> list[str]:
        """Records another sidecar saved (read when our change counter was `before`): the editor
        sees what the store holds. Returns the sessions left for the watch's next look."""
        told = False
        deferred: list[str] = []
        for rec in records:
            sid = rec.session_id
            if self.writes.busy(sid) or sid in self.writes.dirty or sid in self._setting_title:
                deferred.append(sid)  # our own change is under way: look again once it is done
                continue
            if self._changed_at.get(sid, 0) > before:
                deferred.append(sid)  # changed here after the read: compare with a newer read
                continue
            if sid in self._cache:
                self._cache[sid] = rec
            shown = self.writes.shown.get(sid)
            self.writes.saved(rec)
            if shown is None or shown.to_session_info() != rec.to_session_info():
                if sid not in self._agents.owner and (name := self._agents.name_of_key(rec.agent)):
                    self._agents.owner[sid] = name
                self._bus.publish(TitleChanged(self.info(rec), elsewhere=True))
                told = True
        if told:
            self._emit_status()
        return deferred

    def _emit(self, rec: TitleRecord | None) -> None:
        if rec is None:
            return
        self._bus.publish(TitleChanged(self.info(rec)))
        self._emit_status()

    # ------------------------------------------------------------------ session life
    async def known(self, session_id: str) -> TitleRecord | None:
        """The session's record, read from the store the first time: what rules build on (a
        replay must find the user's title, not start from nothing)."""
        if session_id not in self._cache:
            stored = await self._stored(session_id)
            if stored is None or session_id in self._cache:
                return self._cache.get(session_id)
            self._cache[session_id] = stored
            self.writes.saved(stored)
        return self._cache[session_id]

    async def session_created(self, session: Session) -> None:
        cwd, sid, now = session.cwd, session.session_id, time.time()
        await self.known(sid)

        def ensure(rec: TitleRecord | None) -> TitleRecord:
            if rec is None:
                return new_record(self._key(sid), sid, now, cwd)
            return rec if rec.cwd == cwd and not rec.missing else replace(rec, cwd=cwd, missing=False)

        if self._update(sid, ensure) is not None:
            self.writes.show_when_saved(sid)

    async def session_attached(self, session: Session) -> None:
        await self.session_created(session)

    async def forget(self, session_id: str) -> None:
        """A deleted session: its record leaves the cache and the store."""
        key = self._key(session_id)
        self.writes.forget(session_id)
        self._cache.pop(session_id, None)
        self._changed_at.pop(session_id, None)
        self.tracker.cancel(session_id)
        store = self.store
        if store is None:
            return
        try:
            await self._in_store(lambda: store.delete(key, session_id))
        except StoreUnavailable as exc:
            self._report(exc)

    def forked(self, session: Session, parent_id: str) -> None:
        """A fork's title, `Fork: <parent title>` (its id when it has none), of the fallback
        class: the agent's own title wins (now or later)."""
        parent = self._cache.get(parent_id)
        name = parent.title if parent is not None and parent.title else parent_id
        sid, cwd, now = session.session_id, session.cwd, time.time()
        max_len = self.options.titles_max_length
        changed = self._update(
            sid,
            lambda r: apply_fallback(
                r, f"Fork: {name}", agent=self._key(sid), session_id=sid, now=now, cwd=cwd, max_length=max_len
            ),
        )
        if changed is not None:
            self.writes.show_when_saved(sid)

    def current_title(self, session_id: str) -> str | None:
        """The session's title as known now (saved or not)."""
        rec = self._cache.get(session_id)
        return rec.title if rec is not None else None

    def first_prompt(self, session: Session, text: str) -> None:
        title = fallback_title(text)
        if title:
            sid, cwd, now = session.session_id, session.cwd, time.time()
            max_len = self.options.titles_max_length
            changed = self._update(
                sid,
                lambda r: apply_fallback(
                    r, title, agent=self._key(sid), session_id=sid, now=now, cwd=cwd, max_length=max_len
                ),
            )
            if changed is not None:
                self.writes.show_when_saved(sid)

    def on_info_update(self, session: Session, update: JsonObj) -> None:
        fields = session_info_fields(update)
        if "meta" in fields and fields["meta"] is not None:
            try:
                check_meta(fields["meta"])
            except MetaError as exc:
                # Refused, not stored: the rest of the update still applies.
                del fields["meta"]
                self._events.on_log("warning", f"refused _meta of session {session.session_id}: {exc}")
        if not fields:
            return
        sid, now, max_len = session.session_id, time.time(), self.options.titles_max_length

        def change(r: TitleRecord | None) -> TitleRecord:
            return apply_agent_info(
                r, agent=self._key(sid), session_id=sid, now=now, max_length=max_len, **fields
            )

        if sid in self._setting_title:
            # Applied with the rename's outcome, in one write: the editor sees no in-between title.
            self._held[sid].append(change)
            return
        rec = self._update(sid, change)
        if not self._after_agent_title(session, fields.get("title", UNSET)) and rec is not None:
            self.writes.show_when_saved(sid)

    def _after_agent_title(self, session: Session, title: Any) -> bool:
        """Settle a pending rename with the agent's title; True when it did (and told the editor)."""
        pending = self.tracker.pending(session.session_id)
        if title is UNSET or pending is None:
            return False
        # Only an answer to the rename prompt settles it: a title from a turn still
        # running ahead of it in the queue is just the agent's title of that turn.
        current = session.current
        if current is None or current.turn_id != pending.turn_id:
            return False
        clean = sanitize_text(title, self.options.titles_max_length) if isinstance(title, str) else None
        outcome = self.tracker.on_agent_title(session.session_id, clean)
        if outcome is None:
            return False
        self._finish_rename(session.session_id, outcome)
        return True

    # ------------------------------------------------------------------ rename
    def validate_user_title(self, title: object) -> str:
        try:
            return validate_user_title(title, self.options.titles_max_length)
        except InvalidTitle as exc:
            raise errors.invalid(f"invalid title: {exc}") from None

    def rename_requested(self, session: Session, requested: str, turn: Turn) -> None:
        previous = self.record(session.session_id)
        self.tracker.start(session.session_id, requested, previous, turn.turn_id)
        sid, now = session.session_id, time.time()
        self._update(sid, lambda r: set_pending(r, requested, agent=self._key(sid), session_id=sid, now=now))
        self.writes.show_when_saved(sid, force=True)
        old = self._timers.pop(session.session_id, None)
        if old is not None:
            old.cancel()
        self._timers[session.session_id] = self._spawn(
            self._timeout(session, turn.turn_id), f"rename-timeout-{session.session_id}"
        )

    def rename_turn_ended(self, session: Session, turn: Turn) -> None:
        outcome = self.tracker.on_turn_ended(session.session_id, turn.turn_id)
        if outcome is not None:
            self._finish_rename(session.session_id, outcome)

    async def _timeout(self, session: Session, turn_id: str) -> None:
        await asyncio.sleep(self.options.rename_timeout_ms / 1000)
        outcome = self.tracker.on_timeout(session.session_id, turn_id)
        if outcome is not None:
            self._finish_rename(session.session_id, outcome)

    def _finish_rename(self, session_id: str, outcome: RenameOutcome, held: Sequence[Rules] = ()) -> None:
        """Store the outcome, after the `held` changes, in one write, and tell the editor."""
        timer = self._timers.pop(session_id, None)
        if timer is not None and timer is not asyncio.current_task():
            timer.cancel()
        now = time.time()

        def settle(r: TitleRecord | None) -> TitleRecord:
            return apply_rename_outcome(r, outcome, agent=self._key(session_id), now=now)

        self._update(session_id, chain([*held, settle]) if held else settle)
        self.writes.show_when_saved(session_id, force=True)
        if outcome.state is RenameState.UNCONFIRMED:
            what = (
                "kept it as a local title"
                if self.options.rename_fallback == "keep_local"
                else "restored the previous title"
            )
            self._events.on_log("warning", f"the agent did not confirm the rename of {session_id}; {what}")

    async def rename_by_agent(self, session_id: str, requested: str, set_title: SetTitle) -> None:
        """A rename through `session/set_title`: the title the agent stored is the user's.

        Any session the title cache knows can be renamed, loaded or not. On failure
        nothing changes and the error says why.
        """
        if await self.known(session_id) is None:
            raise errors.unknown_session(session_id)
        if session_id in self._setting_title:
            raise errors.invalid(f"a rename of {session_id} is already under way; try again when it ends")
        self._setting_title.add(session_id)
        self._held[session_id] = []
        outcome: RenameOutcome | None = None
        try:
            title = sanitize_text(await set_title(session_id, requested), self.options.titles_max_length)
            if not title:
                raise SidecarError(
                    INTERNAL_ERROR,
                    "the agent stored a title that is empty once control characters are removed",
                )
            state = RenameState.CONFIRMED if title == requested else RenameState.CHANGED
            outcome = RenameOutcome(session_id, state, requested, title, TitleSource.USER)
        except SidecarError as exc:
            if exc.code == RESOURCE_NOT_FOUND:
                raise errors.unknown_session(session_id) from None
            if exc.code == errors.INVALID_PARAMS:
                raise errors.invalid(f"invalid title: {exc.message}") from None
            raise
        finally:
            self._setting_title.discard(session_id)
            held = self._held.pop(session_id)
            if outcome is None and held and self._update(session_id, chain(held)) is not None:
                self.writes.show_when_saved(session_id)  # failed: what the agent sent still counts
        # This rename supersedes one asked by prompt (the agent may have gained set_title on a restart).
        self.tracker.cancel(session_id)
        self._finish_rename(session_id, outcome, held)
