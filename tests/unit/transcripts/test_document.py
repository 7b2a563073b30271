"""The prompt area, the header, and keeping an editor buffer equal to the document."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sidecar.features.conversation.document import (
    MARKER,
    PROMPT_AREA,
    TextEdit,
    apply_edits,
    clear_prompt,
    header_text,
    identity_line,
    locate_prompt_area,
    lsp_position,
    lsp_positions,
    parse_identity,
    prompt_text,
    resync,
    title_line,
)

DOC = header_text("T", "agent", "s1") + "## You\n\nhello\n\n" + PROMPT_AREA


def test_prompt_area_is_exactly_the_documented_block() -> None:
    assert PROMPT_AREA == (
        "---\n\n## Your prompt\n\n"
        '<!-- acp-sidecar: write your prompt below this line, then run the code action "Send to agent" -->\n'
    )


def test_prompt_text_is_what_follows_the_marker() -> None:
    assert prompt_text(DOC) == ""
    assert prompt_text(DOC + "\nFix the bug\nplease\n\n") == "Fix the bug\nplease"
    assert prompt_text(DOC.removesuffix("\n") + "") == ""
    assert prompt_text("no area here") is None


def test_a_marker_inside_a_line_is_not_the_marker() -> None:
    text = "x " + MARKER + "\n"
    assert locate_prompt_area(text) is None
    assert locate_prompt_area("  " + MARKER + "\n") is None


def test_the_area_starts_at_its_break_line() -> None:
    area = locate_prompt_area(DOC + "typed")
    assert area is not None
    assert (DOC + "typed")[area.start :].startswith("---\n\n## Your prompt")
    assert (DOC + "typed")[area.prompt_start :] == "typed"


def test_clear_prompt_gives_the_edit_that_empties_the_area() -> None:
    buffer = DOC + "my prompt\n"
    edit = clear_prompt(buffer)
    assert edit is not None
    assert apply_edits(buffer, [edit]) == DOC
    assert clear_prompt(DOC) is None
    no_newline = DOC.removesuffix("\n")
    fixed = clear_prompt(no_newline + "x")  # the marker line's newline was deleted with the text
    assert fixed is None or apply_edits(no_newline + "x", [fixed]) == DOC


def test_resync_keeps_the_users_prompt() -> None:
    buffer = DOC + "my unsent prompt"
    newer = header_text("T", "agent", "s1") + "## You\n\nhello\n\n## Agent\n\nhi\n\n" + PROMPT_AREA
    edits = resync(buffer, newer)
    assert apply_edits(buffer, edits) == newer + "my unsent prompt"
    assert len(edits) == 1 and edits[0].text == "## Agent\n\nhi\n\n"
    assert resync(newer, newer) == []


def test_resync_of_a_buffer_without_area_restores_everything() -> None:
    assert apply_edits("garbage", resync("garbage", DOC)) == DOC


def test_identity_round_trips_any_id() -> None:
    for agent, session in [("a", "s"), ("x y", "../etc -->"), ("", "é\n\x00"), ('""', "%41")]:
        line = identity_line(agent, session)
        assert "\n" not in line and line.count("-->") == 1 and line.endswith("-->")
        assert parse_identity(line) == (agent, session)
    assert parse_identity("<!-- something else -->") is None


def test_title_line_is_one_heading_whatever_the_title() -> None:
    assert title_line("Fix # auth #") == "# Fix # auth \\#"
    assert title_line("# start") == "# \\# start"
    assert title_line(None) == "# Untitled session"
    assert title_line("a\nb\x1b[31m") == "# a b"


def test_apply_edits_rejects_overlaps() -> None:
    with pytest.raises(ValueError):
        apply_edits("abcdef", [TextEdit(0, 3, "x"), TextEdit(2, 4, "y")])


def test_lsp_positions_in_every_encoding() -> None:
    text = "ab\né😀x\r\ny"
    offset = text.index("x")
    assert lsp_position(text, offset, "utf-32") == (1, 2)
    assert lsp_position(text, offset, "utf-16") == (1, 3)
    assert lsp_position(text, offset, "utf-8") == (1, 6)
    assert lsp_position(text, text.index("y"), "utf-16") == (2, 0)
    with pytest.raises(ValueError):
        lsp_position(text, text.index("\n", 5), "utf-16")


@given(
    st.lists(st.sampled_from(["a", "é", "😀", "\n", "\r", "\r\n", " ", "\f"]), max_size=40).map("".join),
    st.sampled_from(["utf-8", "utf-16", "utf-32"]),
    st.data(),
)
def test_many_positions_at_once_are_each_as_lsp_counts_it(
    text: str, encoding: str, data: st.DataObject
) -> None:
    """`lsp_positions` (one pass) and `lsp_position` against the test's own LSP reference."""
    from tests.lsp.buffers import position_at

    inside_crlf = {i for i in range(1, len(text)) if text[i - 1 : i + 1] == "\r\n"}
    allowed = [i for i in range(len(text) + 1) if i not in inside_crlf]
    offsets = data.draw(st.lists(st.sampled_from(allowed), max_size=12))
    expected = [(p.line, p.character) for p in (position_at(text, at, encoding) for at in offsets)]
    assert lsp_positions(text, offsets, encoding) == expected
    assert [lsp_position(text, at, encoding) for at in offsets] == expected
