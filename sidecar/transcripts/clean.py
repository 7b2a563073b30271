"""Make untrusted text safe to store: no control characters, escape sequences or lone surrogates.

Multi-line text (messages) goes through :class:`TextCleaner`, which works on a stream of chunks: a
CR LF, an escape sequence or a surrogate pair split across two chunks is handled as if it had come
whole. Single-line fields (titles, names, plan entries) use :func:`one_line`.
"""

from __future__ import annotations

import re

from ..titles import sanitize_text

__all__ = ["TextCleaner", "clean_text", "inline_code", "one_line"]

# Escape sequences are removed whole, so "\x1b[31m" leaves nothing behind. Control strings (OSC,
# DCS, SOS, PM, APC) end at BEL, ST, the next ESC, or (unlike a terminal) a line break: a stray
# introducer must not hide the rest of a message. Possessive quantifiers keep matching linear.
_ESCAPE = re.compile(
    r"(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c\n]*+(?:\x07|\x9c|\x1b\\)?"
    r"|(?:\x1b\[|\x9b)[0-?]*+[ -/]*+[@-~]?"
    r"|\x1b[ -/]*+[0-~]?"
)
# What may still grow into an escape sequence if more text comes (checked at the end of a chunk).
_OPEN_ESCAPE = re.compile(
    r"(?:(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c\n]*+"
    r"|(?:\x1b\[|\x9b)[0-?]*+[ -/]*+"
    r"|\x1b[ -/]*+)\Z"
)
# Tab and line feed are kept; every other C0/C1 control, DEL, and the bidi embedding, override and
# isolate controls (they reorder what the reader sees) are dropped.
_DROP = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]+")
_SURROGATE_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")
_SURROGATE = re.compile("[\ud800-\udfff]")
# Line and paragraph separators: some editors break lines there, LSP and CommonMark do not; make
# them real line breaks so positions agree everywhere.
_SEPARATORS = re.compile("[\u2028\u2029]")
# An escape sequence longer than this that never ends is dropped rather than held back forever.
_MAX_HELD = 4096
REPLACEMENT = "\ufffd"


def _join_pair(match: re.Match[str]) -> str:
    hi, lo = ord(match.group()[0]), ord(match.group()[1])
    return chr(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00))


def _fix_surrogates(text: str) -> str:
    if _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub(REPLACEMENT, _SURROGATE_PAIR.sub(_join_pair, text))


def _clean_complete(text: str) -> str:
    """Clean text that is known not to end inside a sequence."""
    text = _fix_surrogates(text)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if "\x1b" in text or _DROP.search(text) is not None:
        text = _ESCAPE.sub("", text)
        text = _DROP.sub("", text)
    if "\u2028" in text or "\u2029" in text:
        text = _SEPARATORS.sub("\n", text)
    return text


def clean_text(text: str) -> str:
    """The whole of `text`, cleaned (see :class:`TextCleaner`)."""
    return _clean_complete(text)


class TextCleaner:
    """Cleans a stream of chunks; what may continue in the next chunk is held back."""

    def __init__(self) -> None:
        self._held = ""

    def feed(self, chunk: str) -> str:
        text = self._held + chunk if self._held else chunk
        self._held = ""
        cut = len(text)
        if text.endswith("\r"):
            cut -= 1  # maybe the first half of CR LF
        elif text and "\ud800" <= text[-1] <= "\udbff":
            cut -= 1  # maybe the first half of a surrogate pair
        else:
            open_escape = _OPEN_ESCAPE.search(text, max(0, len(text) - _MAX_HELD))
            if open_escape is not None and open_escape.end() - open_escape.start() < _MAX_HELD:
                cut = open_escape.start()
        self._held = text[cut:]
        return _clean_complete(text[:cut])

    def finish(self) -> str:
        """The end of the stream: whatever was held back, cleaned."""
        held, self._held = self._held, ""
        return _clean_complete(held)


def one_line(text: object, limit: int = 300) -> str:
    """An untrusted value as one clean line of at most `limit` characters ("" for non-strings)."""
    if not isinstance(text, str) or not text:
        return ""
    return sanitize_text(text, limit)


def inline_code(text: str) -> str:
    """`text` (one line) as a Markdown code span that nothing inside can end early."""
    longest = 0
    run = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip(" ") else ""
    return f"{fence}{pad}{text}{pad}{fence}"
