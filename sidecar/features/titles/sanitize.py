"""Titles from agents, users and prompts: a user's title checked, a provisional one from a prompt.

The text rules themselves (escapes, controls, bidi, surrogates, one line) are the sidecar's one
text-safety module, :mod:`sidecar.text_safety`; everything that reaches an editor's status line or
session list goes through its :func:`~sidecar.text_safety.sanitize_text`.
"""

from __future__ import annotations

import re
import sys

from sidecar.text_safety import (
    DEFAULT_MAX_LENGTH,
    ELLIPSIS,
    MAX_SCAN,
    SPACE_RUN,
    back_off,
    clean_line,
    prefixes,
    sanitize_text,
    trim,
)

__all__ = [
    "DEFAULT_MAX_LENGTH",
    "ELLIPSIS",
    "InvalidTitle",
    "fallback_title",
    "sanitize_text",
    "validate_user_title",
]

_ELLIPSIS_BYTES = len(ELLIPSIS.encode("utf-8"))


class InvalidTitle(ValueError):
    """A title the user asked for cannot be used; the message says why."""


def validate_user_title(raw: object, max_length: int = DEFAULT_MAX_LENGTH) -> str:
    """Check and normalise a title the user typed for a rename.

    Unlike agent titles, a user's title is never cut silently: too long is an
    error that names the limit.
    """
    if not isinstance(raw, str):
        raise InvalidTitle(f"the title must be a string, not {type(raw).__name__}")
    title = sanitize_text(raw, sys.maxsize)
    if not title:
        raise InvalidTitle("the title is empty once control characters and whitespace are removed")
    if len(title) > max_length:
        raise InvalidTitle(
            f"the title is {len(title)} characters long; the limit is {max_length} (titles.maxLength)"
        )
    return title


# Markdown and quoting that often opens a prompt but says nothing about it:
# headings, quotes, list bullets and numbers, fences, emphasis, quote marks.
# A heading's "#"s are followed by a space (CommonMark): "#123" or "#todo" is a word.
_LEADING_NOISE = re.compile(r"""^(?:#+(?: |$)|[>*+\-=_~|`"'“”‘’«»„]+ ?|\d{1,3}[.)] |\[[ xX]\] )+""")
_INLINE_NOISE = re.compile(r"`+|\*\*|__")
# "#name=value" tokens are settings for a tool or agent (the demo agent's "#chunks=300"),
# not words about the conversation.
_DIRECTIVE = re.compile(r"(?<!\S)#[\w.-]+=\S*(?!\S)")
_TRAILING_NOISE = " .,;:-"


def _strip_markdown(text: str) -> str:
    text = SPACE_RUN.sub(" ", _DIRECTIVE.sub("", text)).strip(" ")
    text = _LEADING_NOISE.sub("", text)
    return trim(SPACE_RUN.sub(" ", _INLINE_NOISE.sub("", text)))


def _fit_bytes(text: str, budget: int) -> str:
    """Longest prefix of ``text`` within ``budget`` UTF-8 bytes, at a word
    boundary when there is one, never splitting a character sequence."""
    used = 0
    cut = 0
    for ch in text:
        size = len(ch.encode("utf-8"))
        if used + size > budget:
            break
        used += size
        cut += 1
    if cut >= len(text):
        return text
    cut = back_off(text, cut)
    space = text.rfind(" ", 0, cut + 1)
    if space > 0:
        cut = space
    return text[:cut]


def fallback_title(prompt_text: str, max_words: int = 8, max_bytes: int = 80) -> str | None:
    """A provisional title from a session's first prompt, or None.

    At most ``max_words`` words and ``max_bytes`` UTF-8 bytes (the "…" that
    marks a cut included), never splitting a code point.
    """
    if max_words < 1 or max_bytes < 1:
        raise ValueError("max_words and max_bytes must be at least 1")
    text = ""
    prompt_text = prompt_text[:MAX_SCAN]
    for prefix in prefixes(prompt_text, 4096):
        text = _strip_markdown(clean_line(prefix))
        # The word after the last one we keep proves that the kept words
        # were not cut by the end of the prefix.
        if prefix is prompt_text or text.count(" ") > max_words + 1:
            break
    words = text.split(" ")
    cut = len(words) > max_words
    text = trim(" ".join(words[:max_words]).strip(_TRAILING_NOISE))
    if len(text.encode("utf-8")) > max_bytes:
        cut = True
    if cut:
        room_for_ellipsis = max_bytes > _ELLIPSIS_BYTES
        budget = max_bytes - _ELLIPSIS_BYTES if room_for_ellipsis else max_bytes
        # A cut must not leave noise, marks or joiners dangling at either end.
        text = trim(_fit_bytes(text, budget).rstrip(_TRAILING_NOISE))
        if text and room_for_ellipsis:
            text += ELLIPSIS
    return text or None
