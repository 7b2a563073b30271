"""Untrusted text made safe to show or store: one escape policy, one surrogate policy, two shapes.

Agents, replayed sessions and pasted prompts must not be able to move the cursor, recolour the
terminal, hide text behind bidi overrides or crash a UTF-8 writer. Whatever the text becomes, the
same rules apply, so a hostile title reads the same in the status line and in the document:

- Escape sequences are removed whole ("\x1b[31m" leaves nothing). Control strings (OSC, DCS, SOS,
  PM, APC) end at BEL, ST, the next ESC, or (unlike a terminal) a line break: a stray introducer
  must not hide the rest of the text.
- Surrogate pairs are joined; lone halves are dropped (they cannot be encoded as UTF-8).

Then one line (:func:`one_line`: titles, names, status, plan entries, whatever sits inside a line)
drops every control and invisible format character, folds whitespace into single spaces, and cuts
an over-long result without splitting a character sequence. Multi-line text (:func:`clean_text`,
:class:`TextCleaner` for a stream of chunks: messages, diffs) keeps tab and line feed, makes CR LF,
CR and the Unicode line separators line feeds, and drops the other controls and the bidi controls.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Iterator

__all__ = [
    "DEFAULT_MAX_LENGTH",
    "ELLIPSIS",
    "ESCAPES",
    "TextCleaner",
    "clean_text",
    "fix_surrogates",
    "one_line",
    "prepare",
    "sanitize_text",
]

# Escape sequences, 7-bit and C1 forms. Possessive quantifiers keep every branch linear: a hostile
# string of 10 000 introducers must not backtrack quadratically.
ESCAPES = re.compile(
    # Control strings: they end at BEL, ST, the next ESC (xterm aborts the string there) or a line
    # break.
    r"(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c\n\r]*+(?:\x07|\x9c|\x1b\\)?"
    # CSI: parameters, intermediates, final byte (optional: cut-off sequences).
    r"|(?:\x1b\[|\x9b)[0-?]*+[ -/]*+[@-~]?"
    # Any other escape: intermediates then one final byte.
    r"|\x1b[ -/]*+[0-~]?"
)
# What may still grow into an escape sequence if more text comes (a stream's chunk ends there).
_OPEN_ESCAPE = re.compile(
    r"(?:(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c\n\r]*+"
    r"|(?:\x1b\[|\x9b)[0-?]*+[ -/]*+"
    r"|\x1b[ -/]*+)\Z"
)
# Where an escape sequence can start: a search for one character is a fast scan, where a search
# for `_OPEN_ESCAPE` tries its alternatives at every position (a tenth of a long replay's cost).
_ESCAPE_START = re.compile("[\x1b\x90\x98\x9b\x9d\x9e\x9f]")
_SURROGATE_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _join_pair(match: re.Match[str]) -> str:
    hi, lo = ord(match.group()[0]), ord(match.group()[1])
    return chr(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00))


def fix_surrogates(text: str) -> str:
    """Join surrogate pairs, drop lone halves. JSON "\\ud83d\\ude00" decodes to one code point,
    but json.loads lets a lone half through, and a Python-built string may carry a pair as two."""
    if _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub("", _SURROGATE_PAIR.sub(_join_pair, text))


# ====================================================================== one line

DEFAULT_MAX_LENGTH = 500
ELLIPSIS = "…"

# Joiners are needed inside emoji and Indic/Persian words; elsewhere they only
# hide things, so they survive only between two visible characters.
_JOINERS = "\u200c\u200d"
# Letters that render as nothing; they are used to fake empty or spaced names.
_BLANK_LETTERS = "\u115f\u1160\u3164\uffa0\u2800"
# Zalgo text stacks hundreds of marks; no real script needs more than this.
_MAX_MARKS = 8
_EMOJI_MODIFIERS = "\U0001f3fb-\U0001f3ff"

_C1_OR_ESC = re.compile("[\x1b\x90-\x9f]")
# re's \s is str.isspace(): tabs, newlines, NBSP, U+2028/2029, U+3000, and
# the C0 separators U+001C-001F.
_SPACES = re.compile(rf"[\s{_BLANK_LETTERS}]")
SPACE_RUN = re.compile(r" {2,}")
_STRAY_JOINER = re.compile(rf"(?<![^ {_JOINERS}])[{_JOINERS}]|[{_JOINERS}](?![^ {_JOINERS}])")
_TRAILING_SPACES = re.compile(r" +\Z")


def _char_class(codepoints: list[int]) -> str:
    parts: list[str] = []
    i = 0
    while i < len(codepoints):
        j = i
        while j + 1 < len(codepoints) and codepoints[j + 1] == codepoints[j] + 1:
            j += 1
        first, last = re.escape(chr(codepoints[i])), re.escape(chr(codepoints[j]))
        parts.append(first if i == j else f"{first}-{last}")
        i = j + 1
    return "".join(parts)


class _Tables:
    """Character classes from the running Python's Unicode database.

    Built once (about 0.3 s, a walk over every code point): regexes over these classes run in
    C, so even a multi-megabyte hostile title is cleaned in well under a second. The kernel's
    worker builds them when the engine starts (`prepare`); whoever needs them first otherwise
    builds them, on the event loop if that is where it runs.
    """

    def __init__(self) -> None:
        drop: list[int] = []
        marks: list[int] = []
        for cp in range(0x110000):
            ch = chr(cp)
            cat = unicodedata.category(ch)
            if cat[0] == "M":
                marks.append(cp)
            # Cf holds the bidi controls, zero-width spaces, BOM, soft hyphen
            # and tag characters; only the joiners have a use in a title.
            # Whitespace controls were turned into spaces before this runs.
            elif cat in ("Cc", "Cf", "Cs") and ch not in _JOINERS and not ch.isspace():
                drop.append(cp)
        mark_class = _char_class(marks)
        self.drop = re.compile(f"[{_char_class(drop)}]+")
        self.mark_run = re.compile(f"([{mark_class}]{{{_MAX_MARKS}}})[{mark_class}]+")
        self.leading = re.compile(f"\\A[ {_JOINERS}{mark_class}{_EMOJI_MODIFIERS}]+")


class _Built:
    tables: _Tables | None = None
    lock = threading.Lock()  # one build: a caller that comes while it runs waits for it


def _tables() -> _Tables:
    tables = _Built.tables
    if tables is None:
        with _Built.lock:
            tables = _Built.tables
            if tables is None:
                tables = _Built.tables = _Tables()
    return tables


def prepare() -> None:
    """Build the Unicode tables now (heavy: off the event loop), not at their first use."""
    _tables()


def _is_mark(ch: str) -> bool:
    return unicodedata.category(ch)[0] == "M"


def _is_extend(ch: str) -> bool:
    # Characters that belong to the preceding one: cutting before them would
    # strip an accent or break an emoji sequence.
    return ch in _JOINERS or _is_mark(ch) or "\U0001f3fb" <= ch <= "\U0001f3ff"


def _is_regional_indicator(ch: str) -> bool:
    return "\U0001f1e6" <= ch <= "\U0001f1ff"


def trim(text: str) -> str:
    # Strip spaces, and marks/joiners left with nothing to attach to.
    if _plain(text):
        # Nothing but spaces can lead or trail it: no need for the tables, whose first build
        # would hold the event loop for ~0.2 s on a session's first prompt (fallback title).
        return text.strip(" ")
    return _TRAILING_SPACES.sub("", _tables().leading.sub("", text))


def back_off(text: str, cut: int) -> int:
    """Move a cut position left so it does not split a character sequence."""
    while cut > 0 and (_is_extend(text[cut]) or text[cut - 1] in _JOINERS):
        cut -= 1
    # Flags are pairs of regional indicators: never leave half a flag.
    run = 0
    while run < cut and _is_regional_indicator(text[cut - 1 - run]):
        run += 1
    if run % 2:
        cut -= 1
    return cut


def _truncate(text: str, max_length: int) -> str:
    if len(text) <= max_length:
        return text
    cut = back_off(text, max_length - 1)
    return text[:cut].rstrip(" ") + ELLIPSIS


def _plain(raw: str) -> bool:
    """Printable, already NFC, no marks, joiners, blank letters or emoji modifiers: the full pass would
    only collapse spaces. Checked without the Unicode tables, which take ~0.1 s to build."""
    if raw.isascii():
        return raw.isprintable()
    return (
        raw.isprintable()
        and unicodedata.is_normalized("NFC", raw)
        and not any(
            ch in _JOINERS
            or ch in _BLANK_LETTERS
            or "\U0001f3fb" <= ch <= "\U0001f3ff"
            or unicodedata.category(ch)[0] == "M"
            for ch in raw
        )
    )


def clean_line(raw: str) -> str:
    """`raw` as one line, not cut (see :func:`sanitize_text`)."""
    if _plain(raw):
        # The common case: nothing to remove but extra spaces.
        return (SPACE_RUN.sub(" ", raw) if "  " in raw else raw).strip(" ")
    tables = _tables()
    text = fix_surrogates(raw)
    if _C1_OR_ESC.search(text) is not None:
        text = ESCAPES.sub("", text)
    text = _SPACES.sub(" ", text)
    text = tables.drop.sub("", text)
    text = unicodedata.normalize("NFC", text)
    text = _STRAY_JOINER.sub("", text)
    text = tables.mark_run.sub(r"\1", text)
    text = SPACE_RUN.sub(" ", text)
    return trim(text)


def prefixes(raw: str, first: int) -> Iterator[str]:
    """Growing prefixes of ``raw``, the last one ``raw`` itself."""
    size = first
    while size < len(raw):
        yield raw[:size]
        size *= 4
    yield raw


# Cleaning a prefix may differ from cleaning the whole text only in its last
# few characters (a cut grapheme, a joiner, a space); past this margin the two
# agree, so a multi-megabyte title or prompt costs no more than a short one.
_PREFIX_MARGIN = 32
# Only this much of a text is ever looked at for a short result: a hostile
# 100 MB title whose content is all removed still costs a bounded time.
MAX_SCAN = 1 << 20


def sanitize_text(raw: str, max_length: int = DEFAULT_MAX_LENGTH) -> str:
    """Return ``raw`` as one clean line of at most ``max_length`` code points.

    Escape sequences, control, bidi and invisible format characters and lone
    surrogates are removed, whitespace runs become one space, and an over-long
    result is cut (never inside a character sequence) and ends with "…".
    The result is NFC-normalised and ``sanitize_text`` is idempotent.
    With a limit below 1 Mi characters, only the first 1 Mi characters of
    ``raw`` are looked at.
    """
    if max_length < 1:
        raise ValueError(f"max_length must be at least 1, got {max_length}")
    if (
        len(raw) <= max_length
        and raw.isascii()
        and raw.isprintable()
        and "  " not in raw
        and raw[:1] != " " != raw[-1:]
    ):
        return raw  # most names, titles and states: already one clean line (what the rules give)
    if max_length >= len(raw):
        return _truncate(clean_line(raw), max_length)
    if max_length < MAX_SCAN:
        raw = raw[:MAX_SCAN]
    for prefix in prefixes(raw, max(4 * max_length, 4096)):
        text = clean_line(prefix)
        if prefix is raw or len(text) >= max_length + _PREFIX_MARGIN:
            return _truncate(text, max_length)
    raise AssertionError("unreachable: the last prefix is the whole text")


# ====================================================================== multi-line text
# Tab and line feed are kept; every other C0/C1 control, DEL, and the bidi embedding, override and
# isolate controls (they reorder what the reader sees) are dropped.
_DROP = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]+")
# Line and paragraph separators: some editors break lines there, LSP and CommonMark do not; make
# them real line breaks so positions agree everywhere.
_SEPARATORS = re.compile("[\u2028\u2029]")
# An escape sequence longer than this that never ends is dropped rather than held back forever.
_MAX_HELD = 4096


# `_DROP` within ASCII: most text is ASCII, and this class is searched three times as fast.
_DROP_ASCII = re.compile("[\x00-\x08\x0b-\x1f\x7f]+")


def _clean_complete(text: str) -> str:
    """Clean text that is known not to end inside a sequence."""
    return _clean(text, text.isascii())


def _clean(text: str, ascii_only: bool) -> str:
    """`ascii_only`: the text is ASCII, so what only other text can hold is not looked for."""
    if not ascii_only:
        text = fix_surrogates(text)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if text.isprintable():
        # No control, bidi or separator character (most chunks of a stream): nothing to search.
        return text
    drop = _DROP_ASCII if ascii_only else _DROP
    if drop.search(text) is not None:
        text = ESCAPES.sub("", text)
        text = drop.sub("", text)
    if not ascii_only and ("\u2028" in text or "\u2029" in text):
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
        if text.endswith("\r"):
            self._held = "\r"  # maybe the first half of CR LF
            return _clean_complete(text[:-1])
        tail = ""
        if text and "\ud800" <= text[-1] <= "\udbff":
            text, tail = text[:-1], text[-1]  # maybe the first half of a surrogate pair
        # Lone surrogates go first, as in the whole text: an escape one interrupted may go on
        # after it, in this chunk or the next.
        ascii_only = text.isascii()
        if not ascii_only:
            text = fix_surrogates(text)
        cut = len(text)
        start = max(0, cut - _MAX_HELD)
        if ("\x1b" in text) if ascii_only else (_ESCAPE_START.search(text, start) is not None):
            open_escape = _OPEN_ESCAPE.search(text, start)
            if open_escape is not None and open_escape.end() - open_escape.start() < _MAX_HELD:
                cut = open_escape.start()
        self._held = text[cut:] + tail
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
