"""Untrusted text to one safe line: sanitize_text, validate_user_title, fallback_title."""

from __future__ import annotations

import json
import unicodedata

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sidecar import text_safety as sanitize_module
from sidecar.features.titles import sanitize as title_module
from sidecar.features.titles.api import (
    ELLIPSIS,
    InvalidTitle,
    fallback_title,
    sanitize_text,
    validate_user_title,
)

BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
JOINERS = "\u200c\u200d"

# Pieces that hostile titles are made of, mixed into random text.
HOSTILE = [
    "\x1b[31m",
    "\x1b[2J\x1b[H",
    "\x1b[",
    "\x1b]0;pwned\x07",
    "\x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\",
    "\x1b]52;c;ZXZpbA==",
    "\x1bP+q\x1b\\",
    "\x1b(B",
    "\x1b",
    "\x9b1;31m",
    "\x9d0;t\x9c",
    "\x90",
    "\x00",
    "\x07",
    "\x7f",
    "\x85",
    "\r\n",
    "\t",
    "\u2028",
    "\u2029",
    "\xa0",
    "\u3000",
    "%",
    "%%",
    "\ud800",
    "\udfff",
    "\ud83d\ude00",
    "\u200b",
    "\ufeff",
    "\xad",
    "\U000e0041",
    "\u3164",
    "e\u0301",
    "\u0301",
    "\u0301" * 12,
    "👨\u200d👩\u200d👧",
    "❤\ufe0f\u200d🔥",
    "👍🏽",
    "🇩🇪",
    "🇫",
    "日本語",
    "한국어",
    "…",
    " ",
    *BIDI,
    *JOINERS,
]

hostile_text = st.lists(st.one_of(st.text(max_size=8), st.sampled_from(HOSTILE)), max_size=24).map("".join)


def _assert_clean(out: str) -> None:
    out.encode("utf-8")  # strict: a lone surrogate would raise
    assert out == out.strip(" ")
    assert "  " not in out
    for ch in out:
        cat = unicodedata.category(ch)
        assert cat not in ("Cc", "Cs"), repr(ch)
        assert cat != "Cf" or ch in JOINERS, repr(ch)
        assert ch == " " or not ch.isspace(), repr(ch)
        assert ch not in BIDI
    if out:
        assert unicodedata.category(out[0]) not in ("Mn", "Me", "Mc")
        assert out[0] not in JOINERS and out[-1] not in JOINERS
    assert unicodedata.is_normalized("NFC", out)


@settings(max_examples=400)
@given(hostile_text, st.integers(min_value=1, max_value=40))
@example("\x1b[31mred\x1b[0m", 500)
@example("\ud800", 10)
@example("a\u200d\u0301", 2)
@example("e\u200b\u0301", 5)
def test_sanitize_properties(raw: str, max_length: int) -> None:
    out = sanitize_text(raw, max_length)
    assert len(out) <= max_length
    _assert_clean(out)
    assert sanitize_text(out, max_length) == out  # idempotent
    assert sanitize_text(out) == out


@settings(max_examples=200)
@given(st.text(st.characters(codec=None), max_size=60), st.integers(min_value=1, max_value=30))
def test_sanitize_any_unicode(raw: str, max_length: int) -> None:
    out = sanitize_text(raw, max_length)
    assert len(out) <= max_length
    _assert_clean(out)
    assert sanitize_text(out, max_length) == out


@settings(max_examples=60)
@given(
    st.lists(st.sampled_from([*HOSTILE, "word ", "x", "é"]), min_size=1, max_size=40),
    st.integers(min_value=300, max_value=3000),
    st.integers(min_value=1, max_value=600),
)
def test_long_input_prefix_shortcut_matches_full_clean(
    pieces: list[str], repeat: int, max_length: int
) -> None:
    # sanitize_text cleans only a prefix of long input; it must give exactly
    # what cleaning the whole text would.
    raw = "".join(pieces) * repeat
    scanned = raw[: sanitize_module.MAX_SCAN]
    full = sanitize_module._truncate(sanitize_module.clean_line(scanned), max_length)
    assert sanitize_text(raw, max_length) == full


def _reference_clean(raw: str) -> str:
    """A slow, character-by-character statement of what _clean does."""
    chars: list[str] = []
    i = 0
    while i < len(raw):  # join surrogate pairs, drop lone halves
        ch = raw[i]
        nxt = raw[i + 1] if i + 1 < len(raw) else ""
        if "\ud800" <= ch <= "\udbff" and "\udc00" <= nxt <= "\udfff":
            chars.append(chr(0x10000 + ((ord(ch) - 0xD800) << 10) + (ord(nxt) - 0xDC00)))
            i += 2
            continue
        if not "\ud800" <= ch <= "\udfff":
            chars.append(ch)
        i += 1
    text = sanitize_module.ESCAPES.sub("", "".join(chars))
    mapped = []
    for ch in text:
        if ch.isspace() or ch in "\u115f\u1160\u3164\uffa0\u2800":
            mapped.append(" ")
        elif unicodedata.category(ch) in ("Cc", "Cs") or (
            unicodedata.category(ch) == "Cf" and ch not in JOINERS
        ):
            continue
        else:
            mapped.append(ch)
    text = unicodedata.normalize("NFC", "".join(mapped))
    kept = []
    for i, ch in enumerate(text):
        prev = text[i - 1] if i > 0 else " "
        nxt = text[i + 1] if i + 1 < len(text) else " "
        if ch in JOINERS and (prev in " " + JOINERS or nxt in " " + JOINERS):
            continue
        kept.append(ch)
    capped, run = [], 0
    for ch in kept:
        run = run + 1 if unicodedata.category(ch)[0] == "M" else 0
        if run <= 8:
            capped.append(ch)
    text = " ".join(t for t in "".join(capped).split(" ") if t)
    while text and (text[0] == " " or sanitize_module._is_extend(text[0])):
        text = text[1:]
    return text.rstrip(" ")


@settings(max_examples=300)
@given(st.one_of(hostile_text, st.text(st.characters(codec=None), max_size=40)))
def test_clean_matches_reference(raw: str) -> None:
    assert sanitize_module.clean_line(raw) == _reference_clean(raw)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("\x1b[31mred\x1b[0m alert", "red alert"),
        ("\x1b[1;38;5;196mbold", "bold"),
        ("before\x1b]0;window title\x07after", "beforeafter"),
        ("a\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\b", "alinkb"),
        ("\x9b31mC1 csi", "C1 csi"),
        ("x\x1b(By", "xy"),
        ("unterminated \x1b]0;rest of it", "unterminated"),
        ("100% done %s %d %%", "100% done %s %d %%"),
        ("nul\x00byte", "nulbyte"),
        ("line one\r\nline two\n\n\tthree", "line one line two three"),
        ("left\u202eright", "leftright"),
        ("".join(BIDI) + "plain", "plain"),
        ("zero\u200bwidth\ufeff\xadsoft", "zerowidthsoft"),
        ("tag\U000e0041\U000e007fs", "tags"),
        ("nbsp\xa0and\u2028ls\u2029ps\u3000ideo", "nbsp and ls ps ideo"),
        ("blank\u3164filler", "blank filler"),
        ("\ud800lone\udfffsurrogates\ud83d", "lonesurrogates"),
        ("pair \ud83d\ude00", "pair 😀"),
        ("   \t\n  ", ""),
        ("\u0301\u0301leading marks", "leading marks"),
        ("e\u0301", "é"),
        ("family 👨\u200d👩\u200d👧", "family 👨\u200d👩\u200d👧"),
        ("stray\u200d joiner \u200dhere\u200d", "stray joiner here"),
        ("DEL\x7fhere", "DELhere"),
    ],
)
def test_sanitize_cases(raw: str, expected: str) -> None:
    assert sanitize_text(raw) == expected


def test_sanitize_json_lone_surrogate() -> None:
    raw = json.loads('"ok \\ud800 \\udc00x"')
    out = sanitize_text(raw)
    assert out == "ok x"
    out.encode("utf-8")


def test_sanitize_ten_thousand_chars() -> None:
    out = sanitize_text("x" * 10_000)
    assert len(out) == 500
    assert out == "x" * 499 + ELLIPSIS
    assert sanitize_text(out) == out


def test_sanitize_huge_hostile_input() -> None:
    raw = ("\x1b[31m" + "\u0301" * 50 + "\x1b]0;" + "\u202e") * 200_000 + "tail"
    assert len(raw) > 10_000_000
    out = sanitize_text(raw)
    _assert_clean(out)
    assert len(out) <= 500


def test_sanitize_zalgo_capped() -> None:
    out = sanitize_text("q" + "\u0300\u0301\u0302" * 50 + "b")  # q has no precomposed forms
    assert out.startswith("q") and out.endswith("b")
    assert len(out) == 2 + 8


def test_truncation_backs_off_over_combining_marks() -> None:
    # The cut would fall between "o" and its accents: the whole "ö̃" goes.
    raw = "x" * 8 + "o\u0308\u0303" + "yyyy"
    out = sanitize_text(raw, 10)
    assert out == "x" * 8 + ELLIPSIS


def test_truncation_keeps_emoji_sequences_whole() -> None:
    family = "👨\u200d👩\u200d👧"
    out = sanitize_text("ab" + family + "cd", 5)
    assert out == "ab" + ELLIPSIS
    flags = "🇩🇪🇫🇷🇮🇹"
    out = sanitize_text(flags, 4)
    assert out == "🇩🇪" + ELLIPSIS


def test_truncation_drops_trailing_space_before_ellipsis() -> None:
    assert sanitize_text("abc def", 5) == "abc" + ELLIPSIS


def test_sanitize_rejects_bad_limit() -> None:
    with pytest.raises(ValueError, match="max_length"):
        sanitize_text("x", 0)


# -- validate_user_title ----------------------------------------------------


def test_validate_user_title_normalises() -> None:
    assert validate_user_title("  Fix\tauth\n timeout\x1b[0m ", 500) == "Fix auth timeout"


@pytest.mark.parametrize("raw", [None, 42, ["x"], {"title": "x"}, b"bytes"])
def test_validate_user_title_rejects_non_strings(raw: object) -> None:
    with pytest.raises(InvalidTitle, match="must be a string"):
        validate_user_title(raw, 500)


@pytest.mark.parametrize("raw", ["", "   ", "\x1b[31m\x1b[0m", "\u202e\u200b", "\n\t"])
def test_validate_user_title_rejects_empty(raw: str) -> None:
    with pytest.raises(InvalidTitle, match="empty"):
        validate_user_title(raw, 500)


def test_validate_user_title_too_long_names_the_limit() -> None:
    assert validate_user_title("x" * 20, 20) == "x" * 20
    with pytest.raises(InvalidTitle, match=r"21 characters long; the limit is 20") as info:
        validate_user_title("x" * 21, 20)
    assert isinstance(info.value, ValueError)


# -- fallback_title ---------------------------------------------------------


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("Fix the login bug", "Fix the login bug"),
        ("> ## **Fix** the `auth` timeout", "Fix the auth timeout"),
        ("- [ ] add tests for the parser", "add tests for the parser"),
        ("1. Refactor the store.", "Refactor the store"),
        ("one two three four five six seven eight nine ten", "one two three four five six seven eight…"),
        ("\x1b[31mred\x1b[0m\n\nalert:", "red alert"),
        ("   \n\t ", None),
        ("### ** `` >", None),
        ("", None),
    ],
)
def test_fallback_title_cases(prompt: str, expected: str | None) -> None:
    assert fallback_title(prompt) == expected


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        # Issue 17 item 6: settings for the agent are no title, and their "#" is no heading.
        ("#chunks=300 #slow=100", None),
        ("#chunks=1 first prompt words", "first prompt words"),
        ("Explain the parser #verbose=2 please", "Explain the parser please"),
        # A heading's "#"s stand before a space; "#123" and "#todo" are words a user means.
        ("# Fix the parser", "Fix the parser"),
        ("###### Six levels", "Six levels"),
        ("#123 crashes at start", "#123 crashes at start"),
        ("#todo write the tests", "#todo write the tests"),
        ("See #123 and a=b", "See #123 and a=b"),
        ("#", None),
    ],
)
def test_fallback_title_hashes(prompt: str, expected: str | None) -> None:
    assert fallback_title(prompt) == expected


def test_fallback_title_byte_limit_cuts_at_word() -> None:
    out = fallback_title("alpha beta gamma delta", max_bytes=15)
    assert out == "alpha beta" + ELLIPSIS
    assert len(out.encode()) <= 15


def test_fallback_title_cuts_a_single_long_word() -> None:
    out = fallback_title("x" * 200)
    assert out == "x" * 77 + ELLIPSIS
    assert len(out.encode()) == 80


def test_fallback_title_multibyte_never_split() -> None:
    out = fallback_title("日本語" * 40, max_bytes=20)
    assert out is not None
    assert len(out.encode()) <= 20
    assert out == "日本語日本" + ELLIPSIS  # 15 bytes + 3 for the ellipsis


def test_fallback_title_tiny_budget() -> None:
    assert fallback_title("abcdef", max_bytes=3) == "abc"
    assert fallback_title("😀😀", max_bytes=3) is None


def test_fallback_title_huge_prompt() -> None:
    out = fallback_title("  \n" * 100 + "Explain this log " + "line\n" * 2_000_000)
    assert out == "Explain this log line line line line line…"


def test_fallback_title_rejects_bad_limits() -> None:
    with pytest.raises(ValueError):
        fallback_title("x", max_words=0)
    with pytest.raises(ValueError):
        fallback_title("x", max_bytes=0)


words = st.one_of(
    st.text(st.characters(codec="utf-8"), min_size=1, max_size=6),
    st.sampled_from(
        ["日本語", "😀", "👨\u200d👩\u200d👧", "e\u0301\u0302", "🇩🇪", "x" * 30, "ÿ", "#", ">", "`"]
    ),
)


@settings(max_examples=400)
@given(
    st.lists(words, max_size=30).map(" ".join),
    st.integers(min_value=1, max_value=12),
    st.integers(min_value=1, max_value=100),
)
def test_fallback_title_properties(prompt: str, max_words: int, max_bytes: int) -> None:
    out = fallback_title(prompt, max_words=max_words, max_bytes=max_bytes)
    if out is None:
        return
    assert out
    assert len(out.encode("utf-8")) <= max_bytes
    _assert_clean(out)
    assert sanitize_text(out, 10_000) == out
    assert len(out.split(" ")) <= max_words
    core = out.removesuffix(ELLIPSIS)
    source = title_module._strip_markdown(sanitize_module.clean_line(prompt))
    # Where the title is a cut of the prompt, the cut is not inside a
    # character sequence: the next character is no mark, joiner or modifier.
    if source.startswith(core) and len(core) < len(source):
        assert not sanitize_module._is_extend(source[len(core)]), repr(source[len(core)])
        assert core[-1] not in JOINERS


@given(st.text(max_size=60))
def test_plain_fast_path_agrees_with_the_full_pass(raw: str) -> None:
    if sanitize_module._plain(raw):
        fast = sanitize_module.SPACE_RUN.sub(" ", raw).strip(" ")
        # A zero-width space (dropped by the full pass) forces the full pass.
        assert fast == sanitize_text(raw + "\u200b", 10_000), "same as the full pass"


def test_a_plain_prompt_gets_its_fallback_title_without_building_the_unicode_tables() -> None:
    # Building them takes ~0.2 s of the event loop; a session's first prompt must not wait for it.
    sanitize_module._Built.tables = None
    assert fallback_title("## Fix the **auth** timeout in `login.py`  ") == "Fix the auth timeout in login.py"
    assert fallback_title("Café crème — déjà vu") == "Café crème — déjà vu"
    assert sanitize_module._Built.tables is None
    # Text the fast path cannot vouch for still gets the full pass.
    assert fallback_title("e\u0301\u0301\u0301\u0301\u0301\u0301\u0301\u0301\u0301\u0301 accents") is not None
    assert sanitize_module._Built.tables is not None
