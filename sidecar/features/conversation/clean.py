"""Text for the conversation documents: the text-safety rules, and Markdown code spans.

Untrusted text is made safe by :mod:`sidecar.text_safety` (one escape and surrogate policy for the
whole sidecar): multi-line text (messages) through :class:`TextCleaner`, which works on a stream of
chunks, single-line fields (titles, names, plan entries) through :func:`one_line`.
"""

from __future__ import annotations

from sidecar.kernel.pieces import inline_code
from sidecar.text_safety import TextCleaner, clean_text, one_line

__all__ = ["TextCleaner", "clean_text", "inline_code", "one_line"]
