"""What a file becomes when an agent's diff is applied to its current text.

ACP's `diff` content is `{path, oldText, newText}`, and agents fill it two ways: the whole file
before and after (gemini-cli, codex-acp, the demo agent; `oldText` null for a new file), or only
the part that changes (claude-agent-acp: an Edit's `old_string`/`new_string`, one diff per hunk
of a tool result). Writing `newText` over the file is right for the first and would replace the
whole file by a few lines for the second, so whoever applies or previews a diff asks here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any


class Fit(Enum):
    APPLIES = "applies"  # `text` is the file after the edit
    APPLIED = "applied"  # the file already holds the edit (`text` is the file as it is)
    CONFLICT = "conflict"  # the diff does not fit the file (its old text is not there, or twice)


@dataclass(frozen=True)
class Proposal:
    fit: Fit
    text: str | None  # the whole file after the edit; None on a conflict


def apply_diff(current: str | None, old: str | None, new: str) -> Proposal:
    """`current`: the file's text (None: no such file); `old`/`new`: the diff's texts."""
    if current == new:
        return Proposal(Fit.APPLIED, current)
    if old is None:  # a new file, or the whole file rewritten
        return Proposal(Fit.APPLIES, new)
    if current is None or old == "":
        # Old text of a file that is not there; an empty old text fits only an empty file.
        fits = old == "" and not current
        return Proposal(Fit.APPLIES, new) if fits else Proposal(Fit.CONFLICT, None)
    if new and old in new and new in current:
        return Proposal(Fit.APPLIED, current)  # e.g. lines appended after `old`: already there
    olds = current.count(old)
    if olds == 1:
        return Proposal(Fit.APPLIES, current.replace(old, new, 1))
    if olds == 0 and new and new in current:
        return Proposal(Fit.APPLIED, current)
    return Proposal(Fit.CONFLICT, None)


def apply_diffs(current: str | None, diffs: Iterable[Mapping[str, Any]]) -> Proposal:
    """Several diffs of one file, in order (one per hunk), each applied to what the last made."""
    text, fits = current, []
    for diff in diffs:
        old, new = diff.get("oldText"), diff.get("newText")
        if not isinstance(new, str) or not (old is None or isinstance(old, str)):
            return Proposal(Fit.CONFLICT, None)
        step = apply_diff(text, old, new)
        if step.text is None:
            return step
        text = step.text
        fits.append(step.fit)
    if not fits or all(f is Fit.APPLIED for f in fits):
        return Proposal(Fit.APPLIED, current)
    return Proposal(Fit.APPLIES, text)


def by_path(diffs: Iterable[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    """The diffs of a tool call grouped by file, each file's in the order the agent gave them."""
    grouped: dict[str, list[Mapping[str, Any]]] = {}
    for diff in diffs:
        grouped.setdefault(str(diff.get("path")), []).append(diff)
    return grouped
