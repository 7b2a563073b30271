"""Untrusted text is made safe to store: no controls, escape sequences, NUL or lone surrogates."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from sidecar.features.conversation.clean import TextCleaner, clean_text, inline_code


def test_escape_sequences_are_removed_whole() -> None:
    assert clean_text("a\x1b[31mred\x1b[0m b") == "ared b"
    assert clean_text("title\x1b]0;evil\x07 after") == "title after"
    assert clean_text("c1\x9b2Jx") == "c1x"


def test_controls_and_nul_go_tabs_and_newlines_stay() -> None:
    assert clean_text("a\x00b\x07c\x08d\x7fe\x85f") == "abcdef"
    assert clean_text("a\tb\nc") == "a\tb\nc"


def test_line_breaks_become_newlines() -> None:
    assert clean_text("a\r\nb\rc\u2028d\u2029e") == "a\nb\nc\nd\ne"


def test_bidi_overrides_are_dropped() -> None:
    assert clean_text("abc\u202edef\u2066g\u2069") == "abcdefg"


def test_lone_surrogates_are_dropped_and_pairs_joined() -> None:
    assert clean_text("a\ud800b") == "ab"
    assert clean_text("\ud83d\ude00") == "😀"
    clean_text("x\udfff").encode("utf-8")  # encodable


def test_an_unterminated_control_string_ends_at_the_line() -> None:
    assert clean_text("before\x1b]0;never ends\nnext line") == "before\nnext line"


def test_sequences_split_across_chunks() -> None:
    cleaner = TextCleaner()
    out = [cleaner.feed(p) for p in ["a\x1b", "[3", "1mb\r", "\nc\ud83d", "\ude00d\x1b]0;t", "itle\x07e"]]
    out.append(cleaner.finish())
    assert "".join(out) == "ab\nc😀de"


def test_a_huge_unterminated_sequence_is_not_held_forever() -> None:
    cleaner = TextCleaner()
    first = cleaner.feed("\x1b]" + "x" * 10_000)
    assert len(first) < 10  # dropped, not kept back
    assert cleaner.feed(" tail") == " tail"


@settings(max_examples=300, deadline=None)
@given(st.text(), st.lists(st.integers(0, 200), max_size=8))
def test_streaming_equals_cleaning_at_once(text: str, cuts: list[int]) -> None:
    points = sorted({c % (len(text) + 1) for c in cuts} | {0, len(text)})
    cleaner = TextCleaner()
    pieces = [cleaner.feed(text[a:b]) for a, b in itertools.pairwise(points)]
    pieces.append(cleaner.finish())
    streamed = "".join(pieces)
    assert streamed == clean_text(text)
    streamed.encode("utf-8")
    assert not any(ord(c) < 32 and c not in "\t\n" for c in streamed)
    assert "\x1b" not in streamed and "\r" not in streamed


def test_inline_code_cannot_be_closed_from_inside() -> None:
    assert inline_code("a``b") == "```a``b```"
    assert inline_code("`x") == "`` `x ``"
    assert inline_code("plain") == "`plain`"
    assert inline_code("  ") == "`    `"  # blank: padded, so that it is not read as nothing
    assert inline_code("") == "`  `"


@given(st.text(alphabet="ab `\u00e9", max_size=12))
def test_inline_code_is_one_code_span_holding_the_text(text: str) -> None:
    span = inline_code(text)
    fence = span[: len(span) - len(span.lstrip("`"))]
    inner = span[len(fence) : len(span) - len(fence)]
    assert span.endswith(fence) and fence not in inner  # nothing inside closes it
    padded = inner.startswith(" ") and inner.endswith(" ") and len(inner) >= 2
    assert inner == text or (padded and inner[1:-1] == text)
    if not text.strip(" ") or text.startswith("`") or text.endswith("`"):
        assert padded and inner[1:-1] == text
