"""Turns one session's conversation events into the Markdown of its document, incrementally.

The engine calls :meth:`Renderer.prompt` when a prompt turn starts, :meth:`Renderer.update` with
every ``session/update``, :meth:`Renderer.turn_ended` when a turn ends, and :meth:`Renderer.take`
when it flushes: the returned :class:`~.model.Batch` goes to :meth:`ConversationStore.append`.

Live text streams: an agent message is written as its chunks arrive (the start of each line is held
back until the escaper knows whether it needs a backslash). Between :meth:`begin_replay` and
:meth:`end_replay` (``session/load``) every item is rendered whole, with a key, so that the store
can drop what the document already holds. Where the Markdown waits until it is taken, and the
blank lines and headings between elements, is :class:`~.output.Output`.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from sidecar.features.conversation.blocks import BlockState, MarkdownEscaper, Mode, escape_markdown
from sidecar.features.conversation.clean import clean_text, one_line
from sidecar.features.conversation.elements import (
    DIFF_TIME,
    DIFFS_TIME,
    PromptParts,
    compaction_line,
    context_line,
    diff_block,
    diff_key,
    diffs_of,
    digest,
    fork_line,
    inline,
    model_choice,
    notice_line,
    plan_block,
    plan_entries,
    rename_line,
    setting_line,
    split_prompt,
    tool_call_line,
    tool_status_line,
    turn_end_line,
    verbatim_block,
)
from sidecar.features.conversation.model import Batch
from sidecar.features.conversation.output import KEEP, Output
from sidecar.features.conversation.tracking import Compaction, MessageState, ToolState, placeholder
from sidecar.kernel.bounded_diff import cpu_clock
from sidecar.kernel.prompts import rename_title

__all__ = ["Renderer"]

JsonObj = dict[str, Any]

_CHUNK_ROLES = {"agent_message_chunk": "agent", "agent_thought_chunk": "thought"}
MAX_THOUGHT = 500  # characters of a thought shown (thoughts are compact)
# Characters of one agent message rendered; the rest is counted, not shown. The store keeps the
# current turn whole (up to its ceiling, 64 MiB), and this bounds the work a hostile flood can cause.
MAX_MESSAGE = 32 << 20
MAX_USER_CHARS = 1 << 20  # a user message is kept whole until it ends; longer ones are cut
MAX_TOOLS = 1000
# What a user message the agent made up during a live session is shown under (docs/protocol.md).
ECHO_LINE = "_The agent reported a user message that was not sent from here:_\n"


class Renderer:
    """One session's conversation document writer (see the module doc). Not thread-safe; cheap to create."""

    def __init__(self, *, cwd: str | None = None, clock: Callable[[], datetime] | None = None) -> None:
        self.cwd = cwd
        self._clock = clock or (lambda: datetime.now(UTC))
        self._output = Output()
        self._open: MessageState | None = None
        # Blank text that would begin a message (role, messageId, text): held until the message
        # says something; a message of blank text only is not shown (pi-acp greets a session
        # with "\n"), and a message's leading blank lines are not shown either.
        self._blank_start: tuple[str, str | None, str] | None = None
        self._tools: OrderedDict[str, ToolState] = OrderedDict()
        self._pending_plan: list[JsonObj] | None = None  # the turn's latest plan, not shown yet
        self._mode: str | None = None
        self._model: str | None = None
        self._mode_names: dict[str, str] = {}
        self._compactions: dict[str, Compaction] = {}
        self._live_prompt: PromptParts | None = None
        self._live_title: str | None = None

    # ------------------------------------------------------------------ the engine's calls

    def set_modes(self, modes: object) -> None:
        """The session's modes (`SessionModeState`): names for mode lines; the current one is
        the baseline (not shown)."""
        if not isinstance(modes, dict):
            return
        available = modes.get("availableModes")
        if isinstance(available, list):
            for mode in available:
                if isinstance(mode, dict) and isinstance(mode.get("id"), str):
                    name = mode.get("name")
                    self._mode_names[mode["id"]] = name if isinstance(name, str) else mode["id"]
        current = modes.get("currentModeId")
        if isinstance(current, str):
            self._mode = current

    def set_config_options(self, options: object) -> None:
        """The session's config options: the current model is the baseline (not shown)."""
        choice = model_choice(options)
        if choice is not None:
            self._model = choice[0]

    def prompt(
        self, blocks: list[JsonObj], meta: object = None, labels: dict[str, str] | None = None
    ) -> None:
        """A live prompt turn starts: show what was sent (a rename prompt as one line).
        `labels` names the range of attached context by its URI (e.g. "lines 3-7")."""
        self._flush_plan()  # one sent outside a turn
        parts = split_prompt(blocks, labels)
        self._live_prompt = parts
        self._live_title = rename_title(parts.text, meta)
        self._render_user(parts, meta)

    def update(self, update: JsonObj) -> None:
        """One `session/update` (live, or replayed between begin_replay and end_replay)."""
        kind = update.get("sessionUpdate")
        if kind == "agent_message_chunk":
            self._chunk("agent", update)
        elif kind == "agent_thought_chunk":
            self._chunk("thought", update)
        elif kind == "user_message_chunk":
            self._user_chunk(update)
        elif kind in ("tool_call", "tool_call_update"):
            self._tool(update, kind == "tool_call")
        elif kind == "plan":
            self._plan(update)
        elif kind == "current_mode_update":
            mode = update.get("currentModeId")
            if isinstance(mode, str):
                self.mode_changed(mode)
        elif kind == "config_option_update":
            choice = model_choice(update.get("configOptions"))
            if choice is not None:
                if self._model is not None and choice[0] != self._model:
                    self._setting("Model", choice[1], "M:" + digest(choice[0]))
                self._model = choice[0]
        elif kind == "notice":
            self._notice(update)
        elif kind in ("compaction_update", "compaction_summary_chunk"):
            self._compaction(update, kind == "compaction_update")
        # usage, commands, session info (the title is the header's) and unknown kinds: not shown.

    def mode_changed(self, mode_id: str) -> None:
        """The session's mode changed (an update, or a successful session/set_mode)."""
        if mode_id != self._mode:
            self._mode = mode_id
            self._setting("Mode", self._mode_names.get(mode_id, mode_id), "m:" + digest(mode_id))

    def model_changed(self, model_id: str, name: str | None = None) -> None:
        """The model changed through legacy session/set_model (config options come as updates)."""
        if model_id != self._model:
            self._model = model_id
            self._setting("Model", name or model_id, "M:" + digest(model_id))

    def turn_ended(
        self, stop_reason: str | None, error: JsonObj | None = None, no_answer: bool = False
    ) -> None:
        """`no_answer`: the agent sent nothing for the turn (kernel/turns.py decides)."""
        self._close_open()
        self._flush_plan()
        self._live_prompt = None
        self._start(KEEP)
        self._output.emit(turn_end_line(stop_reason, error, self._clock(), no_answer))
        self._output.finish(None)

    def forked(self, parent_title: str) -> None:
        """A fork's document: the parent's conversation is above; say where it forked (live
        only, no key: it is no item of the agent's history)."""
        self._close_open()
        self._start(None)
        self._output.emit(fork_line(parent_title, self._clock()))
        self._output.finish(None)

    def piece(self, markdown: str) -> None:
        """A feature's piece, already Markdown (untrusted parts escaped by the feature): a client
        terminal's output, the block of an agent's question the user answers in the document, or
        the line that records its outcome; live only, no key: it is no item of the agent's
        history."""
        self._start("agent")
        self._output.emit(markdown)
        self._output.finish(None)

    def begin_replay(self) -> None:
        """`session/load` starts: what follows until end_replay is the session's history."""
        self._close_open()
        self._flush_plan()
        self._output.begin_replay()
        self._live_prompt = None

    def end_replay(self) -> None:
        self._close_open()
        self._flush_plan()  # the last replayed turn's
        self._output.end_replay()

    def take(self) -> Batch | None:
        """Everything rendered since the last take, as one batch (None: nothing new)."""
        return self._output.take(self._open)

    # ------------------------------------------------------------------ writing

    def _start(self, section: str | None) -> None:
        """Begin one of our elements (or a message): whatever streams ends first (then see
        :meth:`Output.start`)."""
        self._close_open()
        self._output.start(section)

    def _close_open(self) -> None:
        self._blank_start = None
        message, self._open = self._open, None
        if message is None:
            return
        if message.role == "user":
            self._render_user(split_prompt(message.blocks), message.meta, replayed=True)
            return
        if message.role == "agent":
            rest = message.escaper.feed(message.cleaner.finish())
            self._output.emit(rest + message.escaper.close())
            if message.hidden:
                self._output.blank()
                self._output.emit(f"_… {message.hidden} more characters of this message not shown …_\n")
            self._output.finish("a:" + message.hasher.hexdigest(), container=True)
        else:
            self._output.emit("\n")
            self._output.finish("t:" + message.hasher.hexdigest(), container=True)

    # ------------------------------------------------------------------ messages

    def text_chunk(self, kind: str, message_id: str | None, text: str) -> None:
        """A plain text chunk (`kind`: agent_message_chunk or agent_thought_chunk), as `update`
        renders it, without a dict to build and take apart (a replay has one per message)."""
        self._text(_CHUNK_ROLES[kind], message_id, text)

    def _chunk(self, role: str, update: JsonObj) -> None:
        content = update.get("content")
        message_id = update.get("messageId") if isinstance(update.get("messageId"), str) else None
        text = content.get("text") if isinstance(content, dict) and content.get("type") == "text" else None
        if isinstance(text, str):
            self._text(role, message_id, text)
            return
        if not self._continues(self._open, role, message_id):
            self._start_message(role, message_id)
        self._chunk_text(self._open_message(), role, content)

    @staticmethod
    def _continues(message: MessageState | None, role: str, message_id: str | None) -> bool:
        """Whether a chunk of `role` and `message_id` goes on with the open message."""
        return (
            message is not None
            and message.role == role
            and (message_id is None or message.message_id in (None, message_id))
        )

    def _text(self, role: str, message_id: str | None, text: str) -> None:
        message = self._open
        if not self._continues(message, role, message_id):
            if text and not text[0].isspace() and self._blank_start is None:
                # The common start (a message's first words, nothing held): nothing to hold or hide.
                self._start_message(role, message_id)
                self._feed(self._open_message(), role, text)
                return
            # Blank text that would begin a message is held until the message says something.
            held = self._blank_start
            lead = held[2] if held is not None and held[0] == role and held[1] in (None, message_id) else ""
            whole = lead + text
            if not whole.strip():
                self._blank_start = (role, message_id, whole)
                return
            self._start_message(role, message_id)
            message = self._open_message()
            # Hashed as sent (a replay may send it in one piece); its leading blank lines not shown.
            blank = whole[: len(whole) - len(whole.lstrip())]
            shown = whole[max(blank.rfind("\n"), blank.rfind("\r")) + 1 :]
            message.hasher.update(whole[: len(whole) - len(shown)])
            self._feed(message, role, shown)
            return
        self._feed(self._open_message(), role, text)

    def _open_message(self) -> MessageState:
        assert self._open is not None
        return self._open

    def _start_message(self, role: str, message_id: str | None) -> None:
        self._start("agent")
        # Right after our heading or one of our paragraphs no container is open: the
        # escaper can treat indented lines as code and fences there as top-level ones.
        self._open = MessageState(role, message_id, MarkdownEscaper(self._output.text_state()))
        if role == "thought":
            self._output.emit("> _Thinking:_ ")

    def _chunk_text(self, message: MessageState, role: str, content: object) -> None:
        if not isinstance(content, dict):
            return
        text = content.get("text") if content.get("type") == "text" else None
        if not isinstance(text, str):
            text = placeholder(content)
        self._feed(message, role, text)

    def _feed(self, message: MessageState, role: str, text: str) -> None:
        message.hasher.update(text)
        if role == "agent":
            room = MAX_MESSAGE - message.chars
            if room < len(text):
                message.hidden += len(text) - max(room, 0)
                text = text[: max(room, 0)]
            message.chars += len(text)
            self._output.emit(message.escaper.feed(message.cleaner.feed(text)))
            return
        cleaned = message.cleaner.feed(text)
        room = MAX_THOUGHT - message.chars
        if room <= 0:
            return
        shown = inline(cleaned.replace("\n", " ").replace("\t", " "))
        if len(shown) > room:
            shown = shown[:room] + "…"
        message.chars += len(shown)
        self._output.emit(shown)

    def _user_chunk(self, update: JsonObj) -> None:
        content = update.get("content")
        message_id = update.get("messageId") if isinstance(update.get("messageId"), str) else None
        message = self._open
        if (
            message is None
            or message.role != "user"
            or (message_id is not None and message.message_id not in (None, message_id))
        ):
            self._close_open()
            if self._output.replaying:
                self._flush_plan()  # a replayed turn ends where the next user message starts
            message = self._open = MessageState("user", message_id, MarkdownEscaper())
        if message.meta is None:
            message.meta = update.get("_meta")
        if isinstance(content, dict):
            text = content.get("text")
            message.chars += len(text) if isinstance(text, str) else 0
            if message.chars <= MAX_USER_CHARS:
                message.blocks.append(content)

    def _render_user(self, parts: PromptParts, meta: object, replayed: bool = False) -> None:
        title = rename_title(parts.text, meta)
        if replayed and not self._output.replaying:
            # A user message the agent sent outside a replay: the echo of the prompt we show
            # already, or words we never sent (shown as the agent's, never as the user's).
            if not self._echoes_live_prompt(parts, title):
                self._render_echo(parts)
            return
        if title is not None:
            self._start(None)
            self._output.emit(rename_line(title))
            self._output.finish("r:" + digest(title))
            return
        self._start("you")
        text = clean_text(parts.text).strip("\n")
        if text.strip():
            self._output.emit(verbatim_block(text))
        context = context_line(parts, self.cwd)
        if context:
            self._output.blank()
            self._output.emit(context)
        if not text.strip() and not context:
            self._output.emit("_(empty prompt)_\n")
        self._output.finish(parts.key)

    def _render_echo(self, parts: PromptParts) -> None:
        """A `user_message_chunk` during a live session that is not the prompt sent: the agent's
        words, marked as such (its key is the user message's, so a replay of it adds nothing)."""
        text = clean_text(parts.text).strip("\n")
        context = context_line(parts, self.cwd)
        if not text.strip() and not context:
            return
        self._start("agent")
        self._output.emit(ECHO_LINE)
        if text.strip():
            self._output.blank()
            self._output.emit(verbatim_block(text))
        if context:
            self._output.blank()
            self._output.emit(context)
        self._output.finish(parts.key)

    def _echoes_live_prompt(self, parts: PromptParts, title: str | None) -> bool:
        live = self._live_prompt
        if live is None:
            return False
        if title is not None:
            return title == self._live_title
        text = parts.text.strip()
        contexts = {c.uri for c in parts.contexts}
        return (not text or live.text.strip().startswith(text)) and contexts <= {c.uri for c in live.contexts}

    # ------------------------------------------------------------------ tool calls, plans, settings

    def _tool(self, update: JsonObj, is_call: bool) -> None:
        call_id = update.get("toolCallId")
        if not isinstance(call_id, str):
            return
        tool = self._tools.get(call_id)
        title = update.get("title")
        if tool is None and is_call:
            status = update.get("status") if isinstance(update.get("status"), str) else "pending"
            tool = ToolState(str(title) if isinstance(title, str) else "Tool call", status)
            self._remember_tool(call_id, tool)
            self._start("agent")
            self._output.emit(tool_call_line(update, self.cwd))
            self._output.finish("tc:" + digest(call_id))
        else:
            if tool is None:
                tool = ToolState("Tool call", None)
                self._remember_tool(call_id, tool)
            if isinstance(title, str) and title:
                tool.title = title
            status = update.get("status")
            if isinstance(status, str) and status != tool.status:
                tool.status = status
                self._start("agent")
                name = one_line(tool.title, 200) or "Tool call"
                self._output.emit(tool_status_line(name, one_line(status, 40)))
                self._output.finish("ts:" + digest(call_id, status))
        deadline = cpu_clock() + DIFFS_TIME  # for all the diffs of this update (this thread's CPU)
        for diff in diffs_of(update.get("content")):
            key = diff_key(call_id, diff)
            if key in tool.diffs:
                continue
            tool.diffs.add(key)
            self._start(KEEP)
            self._output.emit(diff_block(diff, self.cwd, min(DIFF_TIME, deadline - cpu_clock())))
            self._output.finish(key)

    def _remember_tool(self, call_id: str, tool: ToolState) -> None:
        self._tools[call_id] = tool
        while len(self._tools) > MAX_TOOLS:
            self._tools.popitem(last=False)

    def _plan(self, update: JsonObj) -> None:
        # A plan is sent again whole at every step: the document shows each turn's latest plan
        # once, where the turn ends (a replayed turn: where the next user message starts), and
        # $/progress shows the steps live. Decided from the updates alone, so a replay renders
        # the same plans as the live turn did. (Not edited in place: the document's edits are
        # anchored to its title, its start and the prompt area only.)
        entries = plan_entries(update)
        self._pending_plan = entries or None

    def _flush_plan(self) -> None:
        entries, self._pending_plan = self._pending_plan, None
        if entries is None:
            return
        self._start("agent")
        self._output.emit(plan_block(entries))
        self._output.finish("p:" + digest(entries), container=True)

    def _setting(self, what: str, value: str, key: str) -> None:
        self._start(KEEP)
        self._output.emit(setting_line(what, value))
        self._output.finish(key)

    def _notice(self, update: JsonObj) -> None:
        self._start("agent")
        self._output.emit(notice_line(update))
        key = "n:" + digest(update.get("severity"), update.get("title"), update.get("description"))
        self._output.finish(key, container=True)

    def _compaction(self, update: JsonObj, is_status: bool) -> None:
        compaction_id = update.get("compactionId")
        if not isinstance(compaction_id, str):
            return
        state = self._compactions.setdefault(compaction_id, Compaction())
        ended = state.absorb(update, is_status)
        if ended is None:
            return
        self._start("agent")
        self._output.emit(compaction_line(ended, update.get("error")))
        summary = state.summary()
        if summary:
            self._output.blank()
            self._output.emit("Summary:\n\n")
            self._output.emit(escape_markdown(summary, BlockState(Mode.CERTAIN)))
        self._output.finish("c:" + digest(compaction_id), container=True)
