"""Turn untrusted text (titles from agents, users and prompts) into one safe line.

Everything that reaches an editor's status line or session list goes through
:func:`sanitize_text`: an agent, a replayed session or a pasted prompt must not
be able to move the cursor, recolour the terminal, hide text behind bidi
overrides or smuggle invisible characters.
"""

from __future__ import annotations

import functools
import re
import sys
import unicodedata
from collections.abc import Iterator

__all__ = [
    "DEFAULT_MAX_LENGTH",
    "ELLIPSIS",
    "InvalidTitle",
    "fallback_title",
    "sanitize_text",
    "validate_user_title",
]

DEFAULT_MAX_LENGTH = 500
ELLIPSIS = "…"
_ELLIPSIS_BYTES = len(ELLIPSIS.encode("utf-8"))

# Escape sequences are removed whole, not just their ESC, so that "\x1b[31m"
# leaves nothing behind. Possessive quantifiers keep every branch linear: a
# hostile string of 10 000 introducers must not backtrack quadratically.
_ESCAPES = re.compile(
    # Control strings (OSC, DCS, SOS, PM, APC), 7-bit and C1 forms. They end at
    # BEL, ST, or the next ESC (xterm aborts the string there); an unterminated
    # one swallows the rest, as a terminal would.
    r"(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*+(?:\x07|\x9c|\x1b\\)?"
    # CSI: parameters, intermediates, final byte (optional: cut-off sequences).
    r"|(?:\x1b\[|\x9b)[0-?]*+[ -/]*+[@-~]?"
    # Any other escape: intermediates then one final byte.
    r"|\x1b[ -/]*+[0-~]?"
)

# Joiners are needed inside emoji and Indic/Persian words; elsewhere they only
# hide things, so they survive only between two visible characters.
_JOINERS = "\u200c\u200d"
# Letters that render as nothing; they are used to fake empty or spaced names.
_BLANK_LETTERS = "\u115f\u1160\u3164\uffa0\u2800"
# Zalgo text stacks hundreds of marks; no real script needs more than this.
_MAX_MARKS = 8
_EMOJI_MODIFIERS = "\U0001f3fb-\U0001f3ff"

_SURROGATE_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_C1_OR_ESC = re.compile("[\x1b\x90-\x9f]")
# re's \s is str.isspace(): tabs, newlines, NBSP, U+2028/2029, U+3000, and
# the C0 separators U+001C-001F.
_SPACES = re.compile(rf"[\s{_BLANK_LETTERS}]")
_SPACE_RUN = re.compile(r" {2,}")
_STRAY_JOINER = re.compile(rf"(?<![^ {_JOINERS}])[{_JOINERS}]|[{_JOINERS}](?![^ {_JOINERS}])")
_TRAILING_SPACES = re.compile(r" +\Z")


class InvalidTitle(ValueError):
    """A title the user asked for cannot be used; the message says why."""


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

    Built on first use (about 0.2 s): regexes over these classes run in C,
    so even a multi-megabyte hostile title is cleaned in well under a second.
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


@functools.cache
def _tables() -> _Tables:
    return _Tables()


def _is_mark(ch: str) -> bool:
    return unicodedata.category(ch)[0] == "M"


def _is_extend(ch: str) -> bool:
    # Characters that belong to the preceding one: cutting before them would
    # strip an accent or break an emoji sequence.
    return ch in _JOINERS or _is_mark(ch) or "\U0001f3fb" <= ch <= "\U0001f3ff"


def _is_regional_indicator(ch: str) -> bool:
    return "\U0001f1e6" <= ch <= "\U0001f1ff"


def _join_pair(match: re.Match[str]) -> str:
    hi, lo = ord(match.group()[0]), ord(match.group()[1])
    return chr(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00))


def _fix_surrogates(text: str) -> str:
    # JSON "\ud83d\ude00" decodes to one code point, but a Python-built string
    # may carry the pair as two; join valid pairs, drop lone halves (they
    # cannot be encoded as UTF-8 and would crash the LSP writer).
    if _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub("", _SURROGATE_PAIR.sub(_join_pair, text))


def _trim(text: str) -> str:
    # Strip spaces, and marks/joiners left with nothing to attach to.
    if _plain(text):
        # Nothing but spaces can lead or trail it: no need for the tables, whose first build
        # would hold the event loop for ~0.2 s on a session's first prompt (fallback title).
        return text.strip(" ")
    return _TRAILING_SPACES.sub("", _tables().leading.sub("", text))


def _back_off(text: str, cut: int) -> int:
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
    cut = _back_off(text, max_length - 1)
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


def _clean(raw: str) -> str:
    if _plain(raw):
        # The common case: nothing to remove but extra spaces.
        return _SPACE_RUN.sub(" ", raw).strip(" ")
    tables = _tables()
    text = _fix_surrogates(raw)
    if _C1_OR_ESC.search(text) is not None:
        text = _ESCAPES.sub("", text)
    text = _SPACES.sub(" ", text)
    text = tables.drop.sub("", text)
    text = unicodedata.normalize("NFC", text)
    text = _STRAY_JOINER.sub("", text)
    text = tables.mark_run.sub(r"\1", text)
    text = _SPACE_RUN.sub(" ", text)
    return _trim(text)


def _prefixes(raw: str, first: int) -> Iterator[str]:
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
_MAX_SCAN = 1 << 20


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
    if max_length >= len(raw):
        return _truncate(_clean(raw), max_length)
    if max_length < _MAX_SCAN:
        raw = raw[:_MAX_SCAN]
    for prefix in _prefixes(raw, max(4 * max_length, 4096)):
        text = _clean(prefix)
        if prefix is raw or len(text) >= max_length + _PREFIX_MARGIN:
            return _truncate(text, max_length)
    raise AssertionError("unreachable: the last prefix is the whole text")


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
    text = _SPACE_RUN.sub(" ", _DIRECTIVE.sub("", text)).strip(" ")
    text = _LEADING_NOISE.sub("", text)
    return _trim(_SPACE_RUN.sub(" ", _INLINE_NOISE.sub("", text)))


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
    cut = _back_off(text, cut)
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
    prompt_text = prompt_text[:_MAX_SCAN]
    for prefix in _prefixes(prompt_text, 4096):
        text = _strip_markdown(_clean(prefix))
        # The word after the last one we keep proves that the kept words
        # were not cut by the end of the prefix.
        if prefix is prompt_text or text.count(" ") > max_words + 1:
            break
    words = text.split(" ")
    cut = len(words) > max_words
    text = _trim(" ".join(words[:max_words]).strip(_TRAILING_NOISE))
    if len(text.encode("utf-8")) > max_bytes:
        cut = True
    if cut:
        room_for_ellipsis = max_bytes > _ELLIPSIS_BYTES
        budget = max_bytes - _ELLIPSIS_BYTES if room_for_ellipsis else max_bytes
        # A cut must not leave noise, marks or joiners dangling at either end.
        text = _trim(_fit_bytes(text, budget).rstrip(_TRAILING_NOISE))
        if text and room_for_ellipsis:
            text += ELLIPSIS
    return text or None
