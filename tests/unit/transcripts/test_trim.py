"""Trimming a document's head: the cut is found in one scan, exactly where a scan line by line finds it."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from sidecar.features.conversation.blocks import BlockState, Mode, line_states
from sidecar.features.conversation.layout import _OUR_HEADINGS, _char_at_byte, _choose_cut, trim_head

from .test_structure_property import markdown_text


def cut_line_by_line(body: str, remove_bytes: int, prefer_within: int) -> tuple[int | None, BlockState, int]:
    """The oracle: every line's state, one at a time (how the cut was found before)."""
    position_bytes = 0
    fallback: tuple[int, BlockState, int] | None = None
    last_offset = 0
    for offset, state in line_states(body):
        position_bytes += len(body[last_offset:offset].encode("utf-8", "surrogatepass"))
        last_offset = offset
        if position_bytes < remove_bytes or offset == 0:
            continue
        if fallback is None:
            fallback = (offset, state, position_bytes)
        if state.mode is not Mode.FENCE and state.after_blank and body.startswith(_OUR_HEADINGS, offset):
            return offset, state, position_bytes
        if position_bytes - fallback[2] > prefer_within:
            break
    if fallback is None:
        return None, BlockState(), 0
    return fallback


# Conversations: our headings, blank lines, fences opened and closed, text with multi-byte characters.
pieces = st.sampled_from(["## You\n", "## Agent\n", "\n", "```\n", "~~~~ x\n", "    code\n", "é€😀 text\n"])
bodies = st.lists(st.one_of(pieces, markdown_text.map(lambda t: t + "\n")), max_size=30).map("".join)


@settings(max_examples=400, deadline=None)
@given(bodies, st.integers(0, 400), st.integers(0, 120))
@example("a\nb\n\n## You\n", 2, 2)  # a heading just past a line exactly `prefer` bytes in
def test_the_cut_is_where_a_line_by_line_scan_finds_it(body: str, remove: int, prefer: int) -> None:
    first, _ = _char_at_byte(body.encode("utf-8", "surrogatepass"), remove)
    assert _choose_cut(body, first, prefer) == cut_line_by_line(body, remove, prefer)


def test_a_long_conversation_is_cut_at_a_heading_after_the_bound() -> None:
    turn = "## You\n\n    Prompt.\n\n## Agent\n\n```\ncode\n\n## You\n```\n\n" + "Answer é. " * 50 + "\n\n"
    body = turn * 2_000
    remove = len(body.encode()) // 2
    trimmed, gone, replaced = trim_head(body, remove, 4096)
    assert gone >= remove
    assert trimmed.split("\n", 2)[2].startswith("## You\n\n    Prompt.")  # a real heading, not the fenced one
    assert body.endswith(trimmed[trimmed.index("## You") :])
    assert replaced == len(body) - len(trimmed[trimmed.index("## You") :])


def test_a_heading_offset_that_is_no_heading_is_not_trusted() -> None:
    """Offsets the store remembers may be stale (the file was changed in place): a cut there
    would be at the wrong place, so the scan decides instead."""
    from sidecar.features.conversation.layout import _known_heading_cut

    body = "## You\n\n    Prompt.\n\n## Agent\n\nAnswer.\n\n## You\n\n    Next.\n"
    heading = body.index("## Agent")
    encoded = body.encode()
    first = _char_at_byte(encoded, 3)
    found = _known_heading_cut(body, first, 3, 4096, [heading])
    assert found is not None and found[0] == heading and found[2] == len(body[:heading].encode())
    assert _known_heading_cut(body, first, 3, 4096, [heading + 1]) is None  # inside the heading
    assert _known_heading_cut(body, first, 3, 4096, [body.index("Answer.")]) is None  # no heading
    assert _known_heading_cut(body, first, 3, 4096, [body.index("Prompt.") - 4]) is None
