"""An editor buffer's changes, in order, as the agent's hunks follow them (`lsp_change_diagnostics`).

A change with a range is a line edit at once. A change that sends the whole text is a diff of the
buffer before and after: on a big buffer changed all over that is seconds of difflib, so past
`SYNC_BREAKS` line breaks it runs on the kernel's worker, bounded (`agent_changes.buffer_edits`:
past `DIFF_BUDGET` one coarse edit from the first changed line to the last, which drops the hunks
inside it; the change itself is never lost). While one such diff runs, the buffer's later changes
wait behind it and are applied after it, in order; whole texts waiting behind it are diffed as
one (the first one's before, the last one's after). An agent's write that the buffer is seen to
hold (every hunk on its lines) puts the hunks in the buffer's present terms: what still waits is
void then (an editor's echo of that very write would move them a second time).
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

import attrs

from sidecar.features.edits.agent_changes import (
    AgentChanges,
    LineEdit,
    buffer_edits,
    coarse_edits,
    lines_of,
)
from sidecar.kernel.worker import WorkTimeout

if TYPE_CHECKING:
    from sidecar.kernel.kernel import Kernel

log = logging.getLogger(__name__)

# A whole text with at most this many line breaks, before and after together, is diffed on the
# loop: difflib's worst case at that size (every other line changed) is about 2 ms.
SYNC_BREAKS = 400


@attrs.frozen
class Whole:
    """The buffer's whole text went from `before` to `after`."""

    before: str
    after: str

    @property
    def small(self) -> bool:
        breaks = sum(t.count("\n") + t.count("\r") for t in (self.before, self.after))
        return breaks <= SYNC_BREAKS


@attrs.frozen
class KeepOnly:
    """The buffer holds `text`, in terms the hunks are not in: keep only the hunks it holds."""

    text: str


Step = tuple[LineEdit, ...] | Whole | KeepOnly


class BufferSteps:
    def __init__(
        self, changes: Callable[[], AgentChanges | None], kernel: Callable[[], Kernel | None]
    ) -> None:
        self._changes = changes
        self._kernel = kernel
        self._behind: dict[str, deque[Step]] = {}  # uri -> the steps waiting for a diff on the worker
        self._void: set[str] = set()  # uris whose diff on the worker is not to be applied

    def busy(self, uri: str) -> bool:
        """Whether a diff of this buffer is on the worker (its later steps wait for it)."""
        return uri in self._behind

    def superseded(self, uri: str) -> None:
        """The hunks are in the buffer's present terms (an agent's write it holds, checked line by
        line): the steps still waiting, and the diff on the worker, are void."""
        queue = self._behind.get(uri)
        if queue is not None:
            queue.clear()
            self._void.add(uri)

    def then(self, uri: str, path: str, step: Step) -> None:
        """Apply `step` to the hunks of `path` now, or after the buffer's steps still waiting."""
        queue = self._behind.get(uri)
        if queue is not None:
            last = queue[-1] if queue else None
            if isinstance(step, Whole) and isinstance(last, Whole) and last.after == step.before:
                queue[-1] = Whole(last.before, step.after)
            else:
                queue.append(step)
            return
        kernel = self._kernel()
        if not isinstance(step, Whole) or step.small or kernel is None:
            self._apply(path, step)
            return
        self._behind[uri] = deque([step])
        kernel.spawn(self._catch_up(kernel, uri, path), "buffer-diff")

    async def _catch_up(self, kernel: Kernel, uri: str, path: str) -> None:
        queue = self._behind[uri]
        try:
            while queue:
                step = queue.popleft()
                if isinstance(step, Whole) and not step.small:
                    step = tuple(await self._diff(kernel, path, step))
                    if uri in self._void:
                        self._void.discard(uri)
                        continue
                self._apply(path, step)
        finally:
            self._behind.pop(uri, None)
            self._void.discard(uri)

    @staticmethod
    async def _diff(kernel: Kernel, path: str, whole: Whole) -> list[LineEdit]:
        try:
            return await kernel.worker.run(buffer_edits, whole.before, whole.after)
        except WorkTimeout as exc:  # no thread free for long: the coarse edit, linear, here
            log.warning("the edit of %s is followed coarsely: %s", path, exc)
            return coarse_edits(whole.before, whole.after)

    def _apply(self, path: str, step: Step) -> None:
        changes = self._changes()
        if changes is None:
            return
        if isinstance(step, KeepOnly):
            changes.keep_only(path, lines_of(step.text))
        elif isinstance(step, Whole):
            changes.edited(path, buffer_edits(step.before, step.after, budget=None))
        else:
            changes.edited(path, step)
