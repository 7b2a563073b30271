"""The engine's side of titles: the store, live updates, fallback, reconcile, rename.

Decisions about provenance live in `sidecar.titles.rules`; this module applies
them at the right moments of a session's life and tells the editor.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ..acp import AcpClient
from ..titles import (
    UNSET,
    ListedSession,
    RenameFallback,
    RenameState,
    RenameTracker,
    StoreUnavailable,
    TitleRecord,
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
from ..titles.meta import MetaError, check_meta
from ..titles.rules import session_info_fields
from ..titles.sanitize import InvalidTitle
from . import errors
from .session import Session
from .turns import Turn

if TYPE_CHECKING:
    from .engine import Engine, EngineOptions

log = logging.getLogger(__name__)

JsonObj = dict[str, Any]


def _now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _under_any(path: str, roots: Sequence[str]) -> bool:
    return any(path == root or path.startswith(root.rstrip(os.sep) + os.sep) for root in roots)


class Titling:
    def __init__(self, engine: Engine, options: EngineOptions) -> None:
        self.engine = engine
        self.options = options
        self.store: TitleStore | None = None
        self.agent_key: str | None = None
        self.tracker = RenameTracker(fallback=RenameFallback(options.rename_fallback))
        self._timers: dict[str, asyncio.Task[None]] = {}
        # Titles for sessions whose agent identity is not known yet (before initialize).
        self._cache: dict[str, TitleRecord] = {}

    # ------------------------------------------------------------------ lifecycle
    def open(self) -> None:
        path = self.options.state_dir / "titles.sqlite3"
        self.store = TitleStore.open_or_memory(path)
        for warning in self.store.warnings:
            self.engine.listener.on_error(warning)

    def close(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        if self.store is not None:
            self.store.close()

    def agent_ready(self, agent_key: str) -> None:
        self.agent_key = agent_key

    @property
    def key(self) -> str:
        return self.agent_key or self.engine.agent_key

    def clean(self, text: str, max_length: int) -> str:
        return sanitize_text(text, max_length)

    # ------------------------------------------------------------------ store access
    def _update(self, session_id: str, fn: Any) -> TitleRecord | None:
        """Apply a rules function in one store transaction; storage trouble is reported, not fatal."""
        assert self.store is not None
        try:
            old, new = self.store.update(self.key, session_id, fn)
        except StoreUnavailable as exc:
            self.engine.listener.on_error(f"title cache: {exc}")
            current = self._cache.get(session_id)
            new = fn(current)
            old = current
        if new is not None:
            self._cache[session_id] = new
        return new if new != old else None

    def record(self, session_id: str) -> TitleRecord | None:
        if self.store is not None:
            try:
                found = self.store.get(self.key, session_id)
            except StoreUnavailable:
                found = None
            if found is not None:
                return found
        return self._cache.get(session_id)

    def title_of(self, session_id: str) -> str | None:
        rec = self.record(session_id)
        return rec.title if rec else None

    def cwd_of(self, session_id: str) -> str | None:
        rec = self.record(session_id)
        return rec.cwd if rec else None

    def _emit(self, rec: TitleRecord | None) -> None:
        if rec is None:
            return
        self.engine.listener.on_session_info(rec.to_session_info())
        self.engine.emit_status()

    # ------------------------------------------------------------------ session life
    def session_created(self, session: Session) -> None:
        cwd, sid, now = session.cwd, session.session_id, time.time()

        def ensure(rec: TitleRecord | None) -> TitleRecord:
            if rec is None:
                return new_record(self.key, sid, now, cwd)
            return rec if rec.cwd == cwd and not rec.missing else replace(rec, cwd=cwd, missing=False)

        self._emit(self._update(sid, ensure))

    def session_attached(self, session: Session) -> None:
        self.session_created(session)

    def first_prompt(self, session: Session, text: str) -> None:
        title = fallback_title(text)
        if title:
            sid, cwd, now = session.session_id, session.cwd, time.time()
            max_len = self.options.titles_max_length
            self._emit(
                self._update(
                    sid,
                    lambda r: apply_fallback(
                        r, title, agent=self.key, session_id=sid, now=now, cwd=cwd, max_length=max_len
                    ),
                )
            )

    def on_info_update(self, session: Session, update: JsonObj) -> None:
        fields = session_info_fields(update)
        if "meta" in fields and fields["meta"] is not None:
            try:
                check_meta(fields["meta"])
            except MetaError as exc:
                # Refused, not stored: the rest of the update still applies.
                del fields["meta"]
                self.engine.listener.on_log(
                    "warning", f"refused _meta of session {session.session_id}: {exc}"
                )
        if not fields:
            return
        now = time.time()
        max_len = self.options.titles_max_length
        rec = self._update(
            session.session_id,
            lambda r: apply_agent_info(
                r, agent=self.key, session_id=session.session_id, now=now, max_length=max_len, **fields
            ),
        )
        if not self._after_agent_title(session, fields.get("title", UNSET)) and rec is not None:
            self._emit(rec)

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
        self._finish_rename(session, outcome)
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
        rec = self._update(sid, lambda r: set_pending(r, requested, agent=self.key, session_id=sid, now=now))
        self._emit(rec or self.record(session.session_id))
        old = self._timers.pop(session.session_id, None)
        if old is not None:
            old.cancel()
        self._timers[session.session_id] = self.engine.spawn(
            self._timeout(session, turn.turn_id), f"rename-timeout-{session.session_id}"
        )

    def rename_started(self, session: Session, turn: Turn) -> None:
        """Nothing to do yet: the prompt carries the request; kept as a hook for logging."""
        log.debug("rename turn %s running in %s", turn.turn_id, session.session_id)

    def rename_turn_ended(self, session: Session, turn: Turn) -> None:
        outcome = self.tracker.on_turn_ended(session.session_id, turn.turn_id)
        if outcome is not None:
            self._finish_rename(session, outcome)

    async def _timeout(self, session: Session, turn_id: str) -> None:
        await asyncio.sleep(self.options.rename_timeout_ms / 1000)
        outcome = self.tracker.on_timeout(session.session_id, turn_id)
        if outcome is not None:
            self._finish_rename(session, outcome)

    def _finish_rename(self, session: Session, outcome: Any) -> None:
        timer = self._timers.pop(session.session_id, None)
        if timer is not None and timer is not asyncio.current_task():
            timer.cancel()
        now = time.time()
        rec = self._update(
            session.session_id, lambda r: apply_rename_outcome(r, outcome, agent=self.key, now=now)
        )
        rec = rec or self.record(session.session_id)
        if rec is not None:
            self.engine.listener.on_session_info(rec.to_session_info())
            self.engine.emit_status()
        if outcome.state is RenameState.UNCONFIRMED:
            what = (
                "kept it as a local title"
                if self.options.rename_fallback == "keep_local"
                else "restored the previous title"
            )
            self.engine.listener.on_log(
                "warning", f"the agent did not confirm the rename of {session.session_id}; {what}"
            )

    # ------------------------------------------------------------------ list and reconcile
    async def reconcile(self, client: AcpClient, cwd: str | None) -> None:
        sessions, complete = await client.list_sessions(cwd)
        listed = [entry for entry in map(ListedSession.from_acp, sessions) if entry is not None]
        assert self.store is not None
        try:
            changed = self.store.reconcile(
                self.key, cwd, listed, complete, max_length=self.options.titles_max_length
            )
        except StoreUnavailable as exc:
            self.engine.listener.on_error(f"title cache: {exc}")
            return
        for rec in changed:
            self.engine.listener.on_session_info(rec.to_session_info())
        if changed:
            self.engine.emit_status()

    async def reconcile_all(self) -> None:
        client = self.engine.client
        if client is None:
            return
        with contextlib.suppress(Exception):
            await self.reconcile(client, None)

    def entries(self, cwd: str | None, all_cwds: Sequence[str], active_id: str | None) -> list[JsonObj]:
        assert self.store is not None
        try:
            records = self.store.list(self.key, cwd)
        except StoreUnavailable as exc:
            self.engine.listener.on_error(f"title cache: {exc}")
            records = list(self._cache.values())
        if cwd is None and all_cwds:
            records = [r for r in records if r.cwd is not None and _under_any(r.cwd, all_cwds)]
        return [r.to_session_entry(r.session_id == active_id) for r in records]
