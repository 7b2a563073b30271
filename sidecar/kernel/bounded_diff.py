"""difflib bounded in time, for the features that diff what an agent or an editor sends.

`difflib.SequenceMatcher` is quadratic on long inputs changed all over (every other line of a
20 000-line file: minutes). `BoundedMatcher` gives up past its deadline on `cpu_clock`, the
running thread's own CPU time: a bound of work, which a loaded machine does not shorten (on
the wall clock, a diff that takes 0.5 s alone passed a 2 s bound while other processes had the
CPUs, and 1 000 hunks came out as one). It checks it checked at each search
for the longest match (each search is linear, and there are as many as there are matching
blocks), and at each `worker.checkpoint()` when it runs as a worker job; the caller then takes
`coarse_block`: one block from the first line that differs to the last one, found in linear
time, which is still a true diff (coarser, never wrong).
"""

from __future__ import annotations

import difflib
import time
from collections.abc import Sequence

from sidecar.kernel.worker import checkpoint

__all__ = ["Block", "BoundedMatcher", "OutOfTime", "coarse_block", "cpu_clock"]

# Seconds of CPU the calling thread has used: what a diff's budget is counted on.
cpu_clock = time.thread_time

# Lines [i1, i2) of the old text that became lines [j1, j2) of the new one.
Block = tuple[int, int, int, int]


class OutOfTime(Exception):
    """A `BoundedMatcher` passed its deadline."""


class BoundedMatcher(difflib.SequenceMatcher[str]):
    """difflib's matcher that raises `OutOfTime` past `deadline` (on `cpu_clock`), and
    `WorkStopped` when its worker job is given up."""

    def __init__(
        self, old: Sequence[str], new: Sequence[str], deadline: float, autojunk: bool = True
    ) -> None:
        self._deadline = deadline
        super().__init__(None, old, new, autojunk=autojunk)

    def find_longest_match(
        self, alo: int = 0, ahi: int | None = None, blo: int = 0, bhi: int | None = None
    ) -> difflib.Match:
        checkpoint()
        if cpu_clock() > self._deadline:
            raise OutOfTime
        return super().find_longest_match(alo, ahi, blo, bhi)


def coarse_block(old: Sequence[str], new: Sequence[str]) -> Block:
    """The one block between the lines `old` and `new` share at their start and at their end."""
    start, most = 0, min(len(old), len(new))
    while start < most and old[start] == new[start]:
        start += 1
    end = 0
    while end < most - start and old[-1 - end] == new[-1 - end]:
        end += 1
    return start, len(old) - end, start, len(new) - end
