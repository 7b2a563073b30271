"""One text-safety policy (sidecar/text_safety.py): a line and a multi-line text agree on what is hostile."""

from __future__ import annotations

import itertools

from hypothesis import example, given
from hypothesis import strategies as st

from sidecar import text_safety
from sidecar.text_safety import TextCleaner, clean_text, one_line, sanitize_text

PIECES = [
    "a",
    "word ",
    "é",
    "\x00",
    "\x1b[31m",
    "\x1b]0;evil\x07",
    "\x1b]0;never ends",
    "\x9d",
    "\x9b2J",
    "\n",
    "\r\n",
    "\r",
    "\t",
    "\u2028",
    "\u202e",
    "\u2066",
    "\ud800",
    "\udfff",
    "\ud83d\ude00",
    "\ud83d",
    "\ude00",
]


def test_a_control_string_ends_at_a_line_break_in_a_line_too() -> None:
    assert clean_text("before\x1b]0;never ends\nnext line") == "before\nnext line"
    assert one_line("before\x1b]0;never ends\nnext line") == "before next line"
    assert one_line("before\x1b]0;never ends\r\nnext") == "before next"


def test_lone_surrogates_are_dropped_in_both_shapes() -> None:
    assert clean_text("a\ud800b\udfffc \ud83d\ude00") == "abc 😀"
    assert one_line("a\ud800b\udfffc \ud83d\ude00") == "abc 😀"
    cleaner = TextCleaner()
    assert cleaner.feed("a\ud83d") + cleaner.feed("\ude00b\ud800") + cleaner.finish() == "a😀b"


@given(st.lists(st.sampled_from(PIECES), max_size=12))
def test_a_line_of_cleaned_text_is_the_line_of_the_raw_text(pieces: list[str]) -> None:
    """What the document stores (clean_text) and what a status line shows (one_line) never
    disagree: making the stored text one line gives the line the raw text gives."""
    raw = "".join(pieces)
    assert one_line(clean_text(raw), 10_000) == one_line(raw, 10_000)
    assert not any(0xD800 <= ord(c) <= 0xDFFF for c in clean_text(raw))


ASCII_BITS = st.sampled_from(
    ["a", " ", "\n", "\r", "\r\n", "\t", "\x00", "\x07", "\x1b", "[", "31m", "]0;", "\\", "\x7f", "P"]
)


@given(st.lists(ASCII_BITS, max_size=30).map("".join))
def test_ascii_text_is_cleaned_as_any_text_is(text: str) -> None:
    assert text_safety._clean(text, ascii_only=True) == text_safety._clean(text, ascii_only=False)


@given(st.lists(ASCII_BITS, max_size=30).map("".join), st.lists(st.integers(0, 40), max_size=5))
def test_an_ascii_stream_is_cleaned_as_the_whole_text(text: str, cuts: list[int]) -> None:
    points = sorted({c % (len(text) + 1) for c in cuts} | {0, len(text)})
    cleaner = TextCleaner()
    streamed = "".join(cleaner.feed(text[a:b]) for a, b in itertools.pairwise(points))
    assert streamed + cleaner.finish() == clean_text(text)


@given(
    st.lists(
        st.sampled_from(["a", "bc", " ", "  ", "\t", "\x1b[m", "\x7f", "\u00e9", "\u200d"]), max_size=8
    ).map("".join),
    st.integers(1, 20),
)
@example("a  b", 5)  # plain but for a double space
@example(" a", 5)
@example("a ", 5)
@example("abc", 3)  # exactly the limit
def test_a_short_line_gives_what_the_full_rules_give(text: str, limit: int) -> None:
    """`sanitize_text` returns plain text as it is without running the rules: only where they
    would not change it."""
    if len(text) <= limit:
        full_rules = text_safety._truncate(text_safety.clean_line(text), limit)
        assert sanitize_text(text, limit) == full_rules
        assert one_line(text, limit) == (full_rules if text else "")
