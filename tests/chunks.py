"""The demo agent's numbered chunks (`#chunks=N` streams "c0 c1 ..."), found as words."""

from __future__ import annotations

import re


def shows_chunk(text: str, n: int) -> bool:
    """Whether chunk `cN` is in `text` as a word: a session id is hex and may hold "c39"."""
    return re.search(rf"(?<![\w-])c{n}\b", text) is not None
