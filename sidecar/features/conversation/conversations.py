"""Each session's conversation document (docs/protocol.md, "Conversation documents"), written as it
streams.

The composition subscribes these methods to the kernel's events (`sidecar/composition.py`): a
session was opened, a prompt sent, an update arrived (live or replayed), a turn ended, the mode,
model or title changed. Each session's `Renderer` turns that into Markdown and the
`ConversationStore` appends it to the session's file.

Rendering hostile text and file I/O can be slow (seconds for megabytes of agent text on a loaded
machine), so the event loop only queues what happened; one worker thread does the rendering and
the writing, in the order things happened, for every session. A session's queue is flushed within
the interval (`EngineOptions.conversation_interval`, 0.25 s by default) while it is busy,
and at once at a turn end or replay end and after a big chunk (`BIG_CHUNK`, once per interval).
A replayed history is held while the agent sends it (at most `REPLAY_HOLD`): the load's answer
does not wait for the interpreter the rendering takes, and the history is written after it.
Each change a flush makes goes to `events.on_conversation_change` (`at_once` for such a flush): an
open editor buffer follows the file (at once when `at_once`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

from sidecar.features.conversation.api import ConversationStore, DocumentChange, Renderer
from sidecar.features.conversation.operations import (
    AfterRendered,
    Conversation,
    ConversationEvents,
    Operation,
    Outcome,
    TextRun,
    TitleOf,
    Updates,
    describe,
    render_call,
)
from sidecar.kernel import errors
from sidecar.kernel.bus import ConversationPiece
from sidecar.kernel.context import EngineContext
from sidecar.kernel.daemon_worker import DaemonWorker
from sidecar.kernel.session import Session
from sidecar.kernel.turns import Turn, no_answer
from sidecar.kernel.updates import Update

log = logging.getLogger(__name__)

JsonObj = dict[str, Any]

# Plain text chunks of agent messages and thoughts are joined before the renderer sees them; a user
# message's are not (the renderer keeps its chunks as blocks until the message ends).
_JOINED = frozenset({"agent_message_chunk", "agent_thought_chunk"})
# A text chunk at least this long is written out at once (it is on screen as soon as it can be),
# at most once per interval: under a flood of such chunks the document still changes at most
# twice per interval.
BIG_CHUNK = 16 * 1024  # characters
MAX_UNSAVED = 256  # batches kept while the disk refuses them; the oldest are dropped beyond this
REPORT_EVERY = 30.0  # seconds between two messages to the user about a failing document
CLOSE_WAIT = 10.0  # seconds shutdown waits for the last writes
# Seconds a replayed history is held before it is written: the editor waits for the load's
# answer, and rendering while the replay is read would share the interpreter with reading it (a
# 100 000-update history is read in about a second); a longer replay is written every so often.
REPLAY_HOLD = 2.0


class Conversations:
    """The conversation documents of this process's sessions (see the module doc)."""

    def __init__(self, ctx: EngineContext, title_of: TitleOf, events: ConversationEvents) -> None:
        options = ctx.options
        self.store = ConversationStore(
            options.state_dir, max_bytes=options.conversation_max_bytes, durable=options.conversations_durable
        )
        self._events = events
        self._spawn = ctx.spawn
        self._agent_key = ctx.agent_key
        self._title_of = title_of
        # A daemon thread: a write stuck in the kernel (a dead mount) never keeps the process
        # from exiting once `aclose` gave up waiting for it.
        self._executor = DaemonWorker("transcripts")  # its threads' name, which a test checks
        self._by_session: dict[str, Conversation] = {}
        self._interval = options.conversation_interval
        self._reported_at = float("-inf")
        # Retitles of documents no conversation here writes, by (agent, session): a burst (a
        # reconcile changing thousands of records) is one worker job, not a task and a job each.
        self._retitles: dict[tuple[str, str], str | None] = {}
        self._retitler: asyncio.Task[None] | None = None
        self._stopping = False  # shutdown began: queue, but start no flusher (aclose flushes)
        self._closed = False

    # ------------------------------------------------------------------ names
    def uri(self, session_id: str) -> str:
        """The session's document: where it is, or will be, for the agent this sidecar runs."""
        conversation = self._by_session.get(session_id)
        return conversation.uri if conversation else self.store.uri(self._agent_key(session_id), session_id)

    # ------------------------------------------------------------------ what happens in a session
    def _of(self, session: Session) -> Conversation:
        conversation = self._by_session.get(session.session_id)
        if conversation is None:
            agent = self._agent_key(session.session_id)
            conversation = Conversation(
                session.session_id,
                agent,
                self.store.uri(agent, session.session_id),
                Renderer(cwd=session.cwd),
            )
            self._by_session[session.session_id] = conversation
        return conversation

    def opened(self, session: Session) -> None:
        """The agent holds the session (new, resumed, loaded): its document exists from here on,
        and the modes and model it starts with are the baseline (not shown as changes)."""
        first = session.session_id not in self._by_session
        conversation = self._of(session)
        renderer, title = conversation.renderer, self._title_of(session.session_id)
        modes, options = session.modes, list(session.config_options)
        agent, sid = conversation.agent, conversation.session_id
        if first and (parent := session.forked_from) is not None:
            # A fork made here: the parent's conversation (written out before the fork), then
            # the line saying where it forked.
            parent_agent, name = self._agent_key(parent), self._title_of(parent) or parent
            self._queue(conversation, lambda: self.store.fork(agent, sid, parent_agent, parent, title))
            self._queue(conversation, lambda: render_call(renderer.forked, name))
        elif title is None:
            self._queue(conversation, lambda: self.store.ensure(agent, sid))
        else:  # also when a replay created the document before the title was known
            self._queue(conversation, lambda: self.store.set_title(agent, sid, title))
        self._queue(conversation, lambda: render_call(renderer.set_modes, modes))
        self._queue(conversation, lambda: render_call(renderer.set_config_options, options))

    def replay(self, session: Session, starting: bool) -> None:
        """`session/load` replays the history (merged with what the document holds)."""
        conversation = self._of(session)
        renderer = conversation.renderer
        if starting:
            conversation.replay_since = asyncio.get_running_loop().time()
            self._queue(conversation, lambda: render_call(renderer.begin_replay))
        else:
            conversation.replay_since = None
            self._queue(conversation, lambda: render_call(renderer.end_replay), urgent=True)

    def update(self, session: Session, update: Update) -> None:
        conversation = self._of(session)
        operations = conversation.operations
        last = operations[-1] if operations else None
        # What joins the last operation, not handed to the worker yet, goes into it: nothing is
        # built per update but its place in a list (a replay's backlog is hundreds of thousands
        # of updates, and every object it holds is walked by the garbage collector).
        if update.plain and update.kind in _JOINED:
            text = update.text or ""
            # A big replayed chunk waits with the rest of the history (see REPLAY_HOLD).
            live = conversation.replay_since is None
            urgent = len(text) >= BIG_CHUNK and live and self._early(conversation)
            if type(last) is TextRun and last.kind == update.kind and last.message_id == update.message_id:
                last.parts.append(text)
                if urgent:
                    conversation.urgent.set()
                return
            run = TextRun(conversation.renderer, update.kind, update.message_id, [text])
            self._queue(conversation, run, urgent=urgent)
        elif type(last) is Updates:
            last.updates.append(update.raw)
        else:
            self._queue(conversation, Updates(conversation.renderer, [update.raw]))

    def prompt_sent(self, session: Session, turn: Turn) -> None:
        conversation = self._of(session)
        conversation.prompted.add(turn.turn_id)
        renderer, blocks, meta = conversation.renderer, turn.blocks, turn.meta
        self._queue(conversation, lambda: render_call(renderer.prompt, blocks, meta), urgent=True)

    def turn_ended(self, session: Session, turn: Turn) -> None:
        """A turn whose prompt the document shows ended: say how, and write it out at once."""
        conversation = self._by_session.get(session.session_id)
        if conversation is None or turn.turn_id not in conversation.prompted:
            return  # never sent (cancelled in the queue): the document has nothing of it
        conversation.prompted.discard(turn.turn_id)
        renderer, stop, error = conversation.renderer, turn.stop_reason, turn.error
        silent = no_answer(stop, error, turn.answered)
        self._queue(conversation, lambda: render_call(renderer.turn_ended, stop, error, silent), urgent=True)

    def piece(self, event: ConversationPiece) -> None:
        """A feature's piece of the document: a shown client terminal's new output or its end
        (features/terminals/pieces.py), an agent's form question that waits for the user, which
        goes in at once, where the user can answer it (features/questions/form_block.py)."""
        renderer = self._of(event.session).renderer
        self._queue(
            self._of(event.session), lambda: render_call(renderer.piece, event.markdown), event.urgent
        )

    def question_settled(self, session: Session, ident: str, outcome: str) -> None:
        """The question `ident` was answered (by any route), declined or cancelled: its block is
        replaced by the line `outcome`; where there is no block (trimmed away), that line is
        added at the end."""
        conversation = self._of(session)
        renderer, agent, sid = conversation.renderer, conversation.agent, conversation.session_id

        def settle() -> DocumentChange | None:
            change = self.store.replace_question(agent, sid, ident, outcome)
            if change is None:
                renderer.piece(outcome)
            return change

        self._queue(conversation, AfterRendered(settle), urgent=True)

    def mode_changed(self, session: Session, mode_id: str) -> None:
        renderer = self._of(session).renderer
        self._queue(self._of(session), lambda: render_call(renderer.mode_changed, mode_id))

    def model_changed(self, session: Session, model_id: str, name: str | None) -> None:
        """The model changed through legacy `session/set_model`."""
        renderer = self._of(session).renderer
        self._queue(self._of(session), lambda: render_call(renderer.model_changed, model_id, name))

    def options_changed(self, session: Session, options: list[JsonObj]) -> None:
        """The agent answered `session/set_config_option` with these options (an agent need not
        also send `config_option_update`); shown like that update, once."""
        renderer = self._of(session).renderer
        update = {"sessionUpdate": "config_option_update", "configOptions": options}
        self._queue(self._of(session), lambda: render_call(renderer.update, update))

    def title_changed(self, info: JsonObj, *, held_only: bool = False) -> None:
        """A session's title changed: the document's header follows (documents of sessions this
        process has not opened are retitled only when they exist, and not when `held_only`)."""
        session_id, title = info.get("sessionId"), info.get("title")
        if not isinstance(session_id, str) or not (title is None or isinstance(title, str)):
            return
        conversation = self._by_session.get(session_id)
        if conversation is not None:
            agent = conversation.agent
            self._queue(conversation, lambda: self.store.set_title(agent, session_id, title))
            return
        if self._stopping or held_only:
            return
        self._retitles[(self._agent_key(session_id), session_id)] = title
        if self._retitler is None or self._retitler.done():
            self._retitler = self._spawn(self._retitle_existing(), "conversation-retitles")

    async def _retitle_existing(self) -> None:
        """Retitle the documents that exist of the sessions in `_retitles`, a burst per job."""
        while self._retitles:
            burst, self._retitles = self._retitles, {}

            def work(burst: dict[tuple[str, str], str | None] = burst) -> list[tuple[str, str, Outcome]]:
                done = []
                for (agent, session_id), title in burst.items():
                    outcome = Outcome()
                    try:
                        if self.store.path(agent, session_id).exists():
                            change = self.store.set_title(agent, session_id, title)
                            if change is not None:
                                outcome.changes.append(change)
                    except Exception as exc:
                        outcome.problems.append(describe(exc))
                    outcome.notices.extend(self.store.take_notices())
                    if outcome.changes or outcome.problems or outcome.notices:
                        done.append((agent, session_id, outcome))
                return done

            loop = asyncio.get_running_loop()
            for agent, session_id, outcome in await asyncio.shield(
                loop.run_in_executor(self._executor, work)
            ):
                self._deliver(session_id, self.store.uri(agent, session_id), outcome)

    # ------------------------------------------------------------------ the editor's requests
    async def document(self, session_id: str, agent: str | None = None) -> str:
        """The session's document URI, once everything queued for it so far is written (created
        when missing). `agent`: for a session this process has not opened (default: ours)."""
        if self._stopping:
            raise errors.agent_down("the sidecar is shutting down")
        conversation = self._by_session.get(session_id)
        if conversation is not None:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            conversation.waiters.append(waiter)
            sid, key, title = session_id, conversation.agent, self._title_of(session_id)
            self._queue(conversation, lambda: self.store.ensure(key, sid, title), urgent=True)
            await asyncio.shield(waiter)
            return conversation.uri
        owner = agent or self._agent_key(session_id)
        title = self._title_of(session_id)
        await self._run_alone(session_id, owner, lambda: self.store.ensure(owner, session_id, title))
        return self.store.uri(owner, session_id)

    async def delete(self, session_id: str) -> None:
        """Remove the session's document (a deleted session), after what was queued for it."""
        conversation = self._by_session.pop(session_id, None)
        agent = conversation.agent if conversation is not None else self._agent_key(session_id)
        if conversation is not None and conversation.flusher is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(conversation.flusher)

        def remove() -> None:
            self.store.delete(agent, session_id)

        await self._run_alone(session_id, agent, remove)

    async def clear_prompt(self, agent: str, session_id: str) -> None:
        """Empty the prompt area of the file (what an editor saved there was sent)."""
        if self._stopping:
            return
        conversation = self._by_session.get(session_id)
        if conversation is not None and conversation.agent == agent:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            conversation.waiters.append(waiter)
            self._queue(conversation, lambda: self.store.clear_prompt(agent, session_id), urgent=True)
            await asyncio.shield(waiter)
            return
        await self._run_alone(session_id, agent, lambda: self.store.clear_prompt(agent, session_id))

    # ------------------------------------------------------------------ flushing
    def _early(self, conversation: Conversation) -> bool:
        """Whether a big chunk brings the next flush forward (once per interval; not when the
        next flush is due anyway). Such a flush counts as one of the interval's; the other
        urgent ones (a prompt, a turn's or a replay's end, an editor's request) do not delay
        the next flush: the user, not the agent, bounds how often they come."""
        now = asyncio.get_running_loop().time()
        if now - conversation.flushed_at >= self._interval or now - conversation.early_at < self._interval:
            return False
        conversation.early_at = now
        conversation.costly = True
        return True

    def _queue(self, conversation: Conversation, operation: Operation, urgent: bool = False) -> None:
        if self._closed:
            return
        conversation.operations.append(operation)
        if urgent:
            conversation.urgent.set()
        if self._stopping:
            return
        if conversation.flusher is None or conversation.flusher.done():
            conversation.flusher = self._spawn(
                self._flush_while_busy(conversation), f"conversation-{conversation.session_id}"
            )

    async def _flush_while_busy(self, conversation: Conversation) -> None:
        """Flush at most every interval (the first at once after a quiet moment) until nothing is
        queued; an urgent operation (a turn's or a replay's end, an editor's request, a big chunk)
        is flushed without waiting."""
        loop = asyncio.get_running_loop()
        while conversation.operations:
            delay = conversation.flushed_at + self._interval - loop.time()
            if conversation.replay_since is not None:
                delay = max(delay, conversation.replay_since + REPLAY_HOLD - loop.time())
            if delay > 0 and not conversation.urgent.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(conversation.urgent.wait(), delay)
            counts = conversation.costly or not conversation.urgent.is_set()
            conversation.costly = False
            await self._flush(conversation)
            if counts:
                conversation.flushed_at = loop.time()
            if conversation.replay_since is not None:
                conversation.replay_since = loop.time()  # a replay this long: the next part later

    async def _flush(self, conversation: Conversation) -> None:
        at_once = conversation.urgent.is_set()
        conversation.urgent.clear()
        operations, conversation.operations = conversation.operations, []
        waiters, conversation.waiters = conversation.waiters, []
        try:
            # Shielded: a job cancelled before the worker starts it would be dropped with its
            # operations (a flusher is cancelled at shutdown; aclose waits for the job instead).
            outcome = await asyncio.shield(
                asyncio.get_running_loop().run_in_executor(
                    self._executor, self._work, conversation, operations
                )
            )
            self._deliver(conversation.session_id, conversation.uri, outcome, at_once)
        finally:
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(None)

    def _work(self, conversation: Conversation, operations: list[Operation]) -> Outcome:
        """In the worker thread: run the operations in order, then append what was rendered
        (and what the disk refused before)."""
        outcome = Outcome()
        for operation in operations:
            if isinstance(operation, AfterRendered):
                self._write_rendered(conversation, outcome)
            try:
                change = operation()
            except Exception as exc:
                outcome.problems.append(describe(exc))
                log.warning("the conversation document of %s: %r", conversation.session_id, exc, exc_info=exc)
                continue
            if change is not None:
                outcome.changes.append(change)
        self._write_rendered(conversation, outcome)
        outcome.notices.extend(self.store.take_notices())
        return outcome

    def _write_rendered(self, conversation: Conversation, outcome: Outcome) -> None:
        """Append what the renderer holds (and what the disk refused before) to the document."""
        try:
            batch = conversation.renderer.take()
        except Exception as exc:
            outcome.problems.append(describe(exc))
            log.warning("the conversation document of %s: %r", conversation.session_id, exc, exc_info=exc)
            batch = None
        if batch is not None:
            conversation.unsaved.append(batch)
            if len(conversation.unsaved) > MAX_UNSAVED:
                conversation.unsaved.popleft()
                outcome.problems.append("part of the conversation could not be saved and was dropped")
        while conversation.unsaved:
            try:
                change = self.store.append(
                    conversation.agent, conversation.session_id, conversation.unsaved[0]
                )
            except OSError as exc:
                outcome.problems.append(describe(exc))  # kept: written with the next flush
                break
            except Exception as exc:
                conversation.unsaved.popleft()  # it would fail again: do not let it block the rest
                outcome.problems.append(describe(exc))
                log.warning("the conversation document of %s: %r", conversation.session_id, exc, exc_info=exc)
                continue
            conversation.unsaved.popleft()
            if change is not None:
                outcome.changes.append(change)

    async def _run_alone(self, session_id: str, agent: str, operation: Operation) -> None:
        """One store operation for a document no conversation of this process writes."""

        def work() -> Outcome:
            outcome = Outcome()
            try:
                change = operation()
            except Exception as exc:
                outcome.problems.append(describe(exc))
            else:
                if change is not None:
                    outcome.changes.append(change)
            outcome.notices.extend(self.store.take_notices())
            return outcome

        outcome = await asyncio.shield(asyncio.get_running_loop().run_in_executor(self._executor, work))
        self._deliver(session_id, self.store.uri(agent, session_id), outcome)

    def _deliver(self, session_id: str, uri: str, outcome: Outcome, at_once: bool = False) -> None:
        for change in outcome.changes:
            self._events.on_conversation_change(session_id, uri, change, at_once)
        for notice in outcome.notices:
            self._events.on_log("warning", f"transcript of session {session_id}: {notice}")
        if outcome.problems:
            message = f"transcript of session {session_id}: {outcome.problems[-1]}"
            self._events.on_log("warning", message)
            now = time.monotonic()
            if now - self._reported_at > REPORT_EVERY:  # one message per burst, not one per flush
                self._reported_at = now
                self._events.on_error(f"{message} (the conversation goes on; the document may miss parts)")

    # ------------------------------------------------------------------ shutdown
    def stop_flushing(self) -> None:
        """Shutdown began: what happens from now on is queued and written by `aclose`."""
        self._stopping = True

    async def aclose(self) -> None:
        """Write what is still queued (the last turn ends), then stop the worker."""
        self._stopping = True
        try:
            async with asyncio.timeout(CLOSE_WAIT):
                while pending := [c for c in self._by_session.values() if c.operations]:
                    for conversation in pending:
                        with contextlib.suppress(Exception):
                            await self._flush(conversation)
                for conversation in [c for c in self._by_session.values() if c.unsaved]:
                    with contextlib.suppress(Exception):
                        await self._flush(conversation)  # one last try for what the disk refused
                # The worker runs jobs in order: this one ends after those cancelled flushers left.
                await asyncio.get_running_loop().run_in_executor(self._executor, lambda: None)
        except TimeoutError:
            log.warning(
                "conversation documents: the last writes took over %g s; some may be missing", CLOSE_WAIT
            )
        self._closed = True
        self._executor.shutdown(wait=False)
