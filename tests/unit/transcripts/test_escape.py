"""The block escaper on known cases: what must be escaped is, what is plain Markdown stays."""

from __future__ import annotations

import time

import pytest

from sidecar.features.conversation.blocks import BlockState, MarkdownEscaper, Mode, escape_markdown, scan_end
from sidecar.features.conversation.document import MARKER


def stream(text: str, size: int) -> str:
    escaper = MarkdownEscaper()
    out = [escaper.feed(text[i : i + size]) for i in range(0, len(text), size)]
    return "".join(out) + escaper.close()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("# Heading", "\\# Heading\n"),
        ("   ## h", "   \\## h\n"),
        ("para\n===", "para\n\\===\n"),
        ("para\n---", "para\n\\---\n"),
        ("* * *", "\\* * *\n"),
        ("<!-- comment", "\\<!-- comment\n"),
        ("<pre>", "\\<pre>\n"),
        (MARKER, "\\" + MARKER + "\n"),
        ("> # quoted heading", "> \\# quoted heading\n"),
        ("- > ```", "- > \\```\n"),
        ("- item\n\n  ```\n  code\n  ```", "- item\n\n  \\```\n  code\n  \\```\n"),
    ],
)
def test_structure_is_escaped(text: str, expected: str) -> None:
    assert escape_markdown(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Plain *emphasis* and `code`.",
        "- a list\n- of items\n\n1. numbered\n2. too",
        "Text\n\n```python\n# a comment in code\n---\n<div>\n```\n\nAfter.",
        "~~~\n```\n~~~",
        "#hashtag is not a heading",
        "a | b\n--|--",
    ],
)
def test_ordinary_markdown_is_left_alone(text: str) -> None:
    escaped = escape_markdown(text)
    assert escaped.rstrip("\n") == text.replace("#hashtag", "\\#hashtag").replace("\n--|--", "\n--|--")


def test_indented_code_at_the_top_level_is_left_alone() -> None:
    text = "    indented code\n    # not a heading"
    assert escape_markdown(text, BlockState(Mode.CERTAIN)) == text + "\n"
    # Where containers may be open (the default start), indentation is not known to be code.
    assert escape_markdown(text) == "    indented code\n    \\# not a heading\n"


def test_an_open_fence_is_closed_with_its_own_fence() -> None:
    assert escape_markdown("````md\n```\nstill code") == "````md\n```\nstill code\n````\n"
    assert escape_markdown("~~~\ncode") == "~~~\ncode\n~~~\n"


def test_our_marker_is_escaped_even_inside_code() -> None:
    assert escape_markdown(f"```\n{MARKER}\n```") == f"```\n\\{MARKER}\n```\n"


@pytest.mark.parametrize("size", [1, 2, 3, 7])
def test_chunk_size_does_not_matter(size: int) -> None:
    text = " ```##\n- ```\n# x\n```py\ncode\n``` \n---\n> > ~~~\n" + MARKER + "\n<x>"
    assert stream(text, size) == escape_markdown(text)


def test_a_line_start_is_held_only_while_it_is_undecided() -> None:
    escaper = MarkdownEscaper()
    assert escaper.feed("Hello wor") == "Hello wor"
    assert escaper.feed("ld\n##") == "ld\n\\##"  # a "#" line start is always escaped: no wait
    assert escaper.feed(" x\n--") == " x\n"
    assert escaper.pending() == "--"  # a break, an underline or a paragraph?
    assert escaper.feed("-") == ""
    assert escaper.feed("x") == "---x"
    assert escaper.feed("\n```py") == "\n"
    assert escaper.pending() == "```py"  # a fence opener only if no backtick follows on its line
    assert escaper.feed("\ncode") == "```py\ncode"
    assert escaper.state.mode is Mode.FENCE


def test_a_hostile_undecided_line_is_decided_safely() -> None:
    escaper = MarkdownEscaper(BlockState(Mode.CERTAIN))
    out = escaper.feed("```" + "x" * 5000)  # a fence opener waits for its line end, but not forever
    assert out.startswith("\\```")
    assert escaper.state.mode is Mode.CERTAIN
    spaces = MarkdownEscaper()
    assert spaces.feed(" " * 5000) == " " * 5000  # indentation inside containers goes out at once
    assert spaces.feed("# h\n") == "\\# h\n"


def test_scan_end_reports_an_open_fence() -> None:
    assert scan_end("text\n```\ncode").mode is Mode.FENCE
    assert scan_end("text\n```\ncode\n```\n").mode is Mode.CERTAIN


def test_hostile_volume_is_escaped_in_bounded_time() -> None:
    # 3 MB of the worst lines (each one decided on its own; the renderer shows at most 1 MiB of
    # one message): linear, a few seconds at most even on a loaded machine.
    hostile = "#\n```\n- ```\n" * (3_000_000 // 12)
    started = time.monotonic()
    out = stream(hostile, 65536)
    elapsed = time.monotonic() - started
    assert out.count("\\") >= hostile.count("#")
    assert elapsed < 60, elapsed
