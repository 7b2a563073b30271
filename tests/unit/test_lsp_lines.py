"""The sidecar's document model against the test's own LSP reference (tests/lsp/buffers.py)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from lsprotocol import types
from pygls.workspace import PositionCodec

from sidecar.lsp.documents import LspTextDocument
from sidecar.lsp.lsp_lines import line_starts, offset_at, split_lines
from tests.lsp.buffers import apply_lsp_edits, position_at
from tests.lsp.test_line_ends import NOT_LINE_ENDS, TEXT, edit_sequences

ENCODINGS = {
    "utf-8": types.PositionEncodingKind.Utf8,
    "utf-16": types.PositionEncodingKind.Utf16,
    "utf-32": types.PositionEncodingKind.Utf32,
}


def test_lines_end_only_at_lsp_line_ends() -> None:
    text = f"a{NOT_LINE_ENDS}b\nc\r\nd\re"
    assert split_lines(text) == [f"a{NOT_LINE_ENDS}b\n", "c\r\n", "d\r", "e"]
    assert split_lines("x\n") == ["x\n"] and split_lines("") == []
    assert line_starts("x\n") == [0, 2], "the line after a final line end is a line"


def test_positions_past_a_line_end_or_the_text_clamp_as_lsp_says() -> None:
    units = PositionCodec(types.PositionEncodingKind.Utf16).client_num_units
    text = "ab\r\n😀c\flast"
    assert offset_at(text, types.Position(line=0, character=99), units) == 2, "not inside the CR LF"
    assert offset_at(text, types.Position(line=1, character=2), units) == 5, "after the surrogate pair"
    assert offset_at(text, types.Position(line=1, character=99), units) == len(text)
    assert offset_at(text, types.Position(line=7, character=0), units) == len(text)


@given(
    encoding=st.sampled_from(sorted(ENCODINGS)),
    case=edit_sequences(),
)
def test_incremental_changes_follow_the_reference(
    encoding: str, case: tuple[str, list[list[tuple[int, int, str]]]]
) -> None:
    start, batches = case
    doc = LspTextDocument("file:///x", start, 1, None, PositionCodec(ENCODINGS[encoding]))
    held = start
    for batch in batches:
        for a, b, new_text in batch:
            rng = types.Range(start=position_at(held, a, encoding), end=position_at(held, b, encoding))
            held = apply_lsp_edits(held, [types.TextEdit(range=rng, new_text=new_text)], encoding)
            doc.apply_change(types.TextDocumentContentChangePartial(range=rng, text=new_text))
            assert doc.source == held
    assert "".join(doc.lines) == held


@given(TEXT, st.data())
def test_every_offset_round_trips(text: str, data: st.DataObject) -> None:
    units = PositionCodec(types.PositionEncodingKind.Utf8).client_num_units
    offset = data.draw(st.integers(0, len(text)))
    if text[offset - 1 : offset] == "\r" and text[offset : offset + 1] == "\n":
        return  # inside a CR LF: no position names it
    assert offset_at(text, position_at(text, offset, "utf-8"), units) == offset
