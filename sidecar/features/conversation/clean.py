"""Text for the transcript documents: the text-safety rules, and Markdown code spans.

Untrusted text is made safe by :mod:`sidecar.text_safety` (one escape and surrogate policy for the
whole sidecar): multi-line text (messages) through :class:`TextCleaner`, which works on a stream of
chunks, single-line fields (titles, names, plan entries) through :func:`one_line`.
"""

from __future__ import annotations

from sidecar.text_safety import TextCleaner, clean_text, one_line

__all__ = ["TextCleaner", "clean_text", "inline_code", "one_line"]


def inline_code(text: str) -> str:
    """`text` (one line) as a Markdown code span that nothing inside can end early."""
    if "`" not in text:  # most paths and names: no run of backticks to outlast
        return f"` {text} `" if not text.strip(" ") else f"`{text}`"
    longest = 0
    run = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip(" ") else ""
    return f"{fence}{pad}{text}{pad}{fence}"
