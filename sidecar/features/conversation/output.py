"""Where the renderer's Markdown goes until the engine takes it as a :class:`~.model.Batch`.

Live, it is one text that grows as things stream, with a blank line between elements and a
section's heading where the section changes. During a replay each element is an item of its own,
whole, with its key and section, so that the store can drop what the document already holds (and
put the headings in between itself).
"""

from __future__ import annotations

from sidecar.features.conversation.blocks import BlockState, Mode
from sidecar.features.conversation.elements import HEADINGS
from sidecar.features.conversation.model import Batch, ReplayCursor, ReplayItem
from sidecar.features.conversation.tracking import MessageState

__all__ = ["KEEP", "Output"]

KEEP = "keep"  # start(): stay in the current section


class Output:
    """One renderer's Markdown not taken yet (see the module doc). Not thread-safe."""

    def __init__(self) -> None:
        self._out: list[str] = []
        self._lead: list[str] = []
        self._lead_keys = 0  # how many of `_keys` name items in `_lead`
        self._sink = self._out
        self._keys: list[str] = []
        self._items: list[ReplayItem] = []
        self._item_section: str | None = None
        self._trailing: int | None = None  # newlines ending what was written (None: unknown)
        self._section: str | None = None
        # Whether what was written last leaves no container (list, quote) open.
        self._after_top = Mode.UNCERTAIN
        self._batch_mid_line = False
        self._batch_fence = ""
        self._batch_needs_blank = False
        self.replaying = False
        self._cursor: ReplayCursor | None = None

    def emit(self, text: str) -> None:
        if not text:
            return
        self._sink.append(text)
        # The newlines it ends with (at most 2 count), without copying the text to strip them.
        if text[-1] != "\n":
            self._trailing = 0
        elif len(text) > 2 and text[-3] != "\n":
            self._trailing = 2 if text[-2] == "\n" else 1
        else:
            body = text.rstrip("\n")
            newlines = len(text) - len(body)
            self._trailing = min(2, newlines if body else (self._trailing or 0) + newlines)

    def blank(self) -> None:
        """Make what was written end with a blank line."""
        if self._trailing is None:
            # Unknown (a new renderer, or after a replay): the store makes sure of it.
            if self._sink is self._out and not self._out:
                self._batch_needs_blank = True
            self._trailing = 2
            return
        self.emit("\n" * (2 - self._trailing))

    def start(self, section: str | None) -> None:
        """Begin one of our elements (or a message): in live mode a blank line and, when the
        section changes, its heading; in a replay, a new item. (The renderer ends whatever
        streams first.)"""
        if self.replaying:
            self._sink = []
            self._trailing = 2
            self._item_section = self._section if section == KEEP else section
            return
        self.blank()
        if section == KEEP:
            return
        if section is not None and section != self._section:
            self.emit(HEADINGS[section] + "\n")
            self.blank()
            self._after_top = Mode.CERTAIN
        self._section = section

    def finish(self, key: str | None, container: bool = False) -> None:
        """The element started last is complete; `key` (if any) names it in the document's index.
        `container`: it may leave a list or a quote open (else its last line was ours, unindented)."""
        if self._trailing == 0:
            self.emit("\n")
        self._after_top = Mode.UNCERTAIN if container else Mode.CERTAIN
        if self.replaying:
            text = "".join(self._sink)
            self._sink = []
            if key is not None and text:
                self._items.append(ReplayItem(text, key, self._item_section))
            return
        if key is not None:
            self._keys.append(key)

    def text_state(self) -> BlockState:
        """Where untrusted text starts: right after our heading or one of our own lines no
        container is open, so the escaper can take indented lines as code and fences there as
        top-level ones. A replayed item may land after anything (the store drops some)."""
        if self.replaying:
            return BlockState(Mode.UNCERTAIN)
        return BlockState(self._after_top, after_blank=True)

    def begin_replay(self) -> None:
        """`session/load` starts: live text not taken yet goes before the replayed items."""
        self._lead.append("".join(self._out))
        self._lead_keys = len(self._keys)
        self._out.clear()
        self.replaying = True
        self._cursor = ReplayCursor()

    def end_replay(self) -> None:
        self.replaying = False
        self._sink = self._out
        # What the document ends with depends on what the store keeps of the replay.
        self._trailing = None
        self._section = None

    def take(self, message: MessageState | None) -> Batch | None:
        """Everything written since the last take, as one batch (None: nothing new). `message`:
        the one still streaming (if any), which the next batch goes on with."""
        batch = Batch(
            lead="".join(self._lead),
            lead_keys=self._lead_keys,
            text="".join(self._out),
            keys=self._keys,
            items=self._items,
            cursor=self._cursor if self._items else None,
            mid_line=self._batch_mid_line,
            fence=self._batch_fence,
            needs_blank=self._batch_needs_blank,
        )
        live = self._sink is self._out
        self._out = []
        if live:
            self._sink = self._out
        self._keys = []
        self._items = []
        self._lead = []
        self._lead_keys = 0
        self._batch_needs_blank = False
        # How the next batch begins: inside a line, or inside an agent's code block.
        self._batch_mid_line = False
        self._batch_fence = ""
        if message is not None and live:
            if message.role == "agent":
                self._batch_mid_line = message.escaper.line_open
                if message.escaper.state.mode is Mode.FENCE:
                    self._batch_fence = batch.closing = message.escaper.state.fence_opener
            elif message.role == "thought":
                self._batch_mid_line = True
        return batch if batch else None
