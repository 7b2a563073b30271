"""The sidecar's document model against the test's own LSP reference (tests/lsp/buffers.py)."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from lsprotocol import types
from pygls.workspace import PositionCodec

from sidecar.lsp.documents import LspTextDocument
from sidecar.lsp.lsp_lines import apply_changes, line_starts, offset_at, split_lines
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
    for batch in batches:  # one didChange each: its changes are applied together when read
        for a, b, new_text in batch:
            rng = types.Range(start=position_at(held, a, encoding), end=position_at(held, b, encoding))
            held = apply_lsp_edits(held, [types.TextEdit(range=rng, new_text=new_text)], encoding)
            doc.apply_change(types.TextDocumentContentChangePartial(range=rng, text=new_text))
        assert doc.source == held
    assert "".join(doc.lines) == held


@st.composite
def going_down(draw: st.DrawFn) -> tuple[str, list[tuple[types.Position, types.Position, str]]]:
    """A text and changes by line and character (past a line's end or the text's at times),
    mostly each on a line below where the one before it ended, as an editor reports an edit of
    many lines; without "\r" half the time (then they take the one-pass path)."""
    plain = draw(st.booleans())
    text = "\n".join(draw(st.lists(TEXT, max_size=12)))  # enough lines for changes below changes
    text = text.replace("\r", "") if plain else text
    changes = []
    line = 0
    for _ in range(draw(st.integers(1, 8))):
        line = line + draw(st.integers(0, 3)) if draw(st.integers(0, 4)) else draw(st.integers(0, 6))
        begin = types.Position(line=line, character=draw(st.integers(0, 6)))
        end_line = line + draw(st.integers(0, 2))
        end_char = draw(st.integers(0, 6)) if end_line > line else begin.character + draw(st.integers(0, 3))
        new_text = draw(TEXT).replace("\r", "") if plain else draw(TEXT)
        changes.append((begin, types.Position(line=end_line, character=end_char), new_text))
        line = end_line + new_text.count("\n") + draw(st.integers(0, 2))
    return text, changes


@given(encoding=st.sampled_from(sorted(ENCODINGS)), case=going_down())
@example(  # lines deleted, then a change below them: the lines below move up
    encoding="utf-16",
    case=(
        "a\nb\nc\nd\ne\n",
        [
            (types.Position(line=0, character=0), types.Position(line=2, character=0), ""),
            (types.Position(line=1, character=0), types.Position(line=1, character=0), "X"),
        ],
    ),
)
def test_a_didchanges_changes_applied_together_are_the_changes_one_by_one(
    encoding: str, case: tuple[str, list[tuple[types.Position, types.Position, str]]]
) -> None:
    """One change at a time is held to the LSP reference by the test above (positions there are
    in the text; these clamp as `offset_at` does, tested apart)."""
    text, changes = case
    units = PositionCodec(ENCODINGS[encoding]).client_num_units
    held = text
    for change in changes:
        held = apply_changes(held, [change], units)
    assert apply_changes(text, changes, units) == held


def test_a_follow_edit_of_a_long_conversation_is_one_pass_over_its_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Helix reports the sidecar's follow edit (a copy of the window's first lines above it, each
    window line rewritten, the answer added) as one change per line: all of them, one pass."""
    from sidecar.lsp import lsp_lines

    lines = [f"line {n} of the answer" for n in range(2000)]
    text = "\n".join(lines) + "\n"
    end_of = len(lines[1799])
    changes = [
        (types.Position(line=1799, character=end_of), types.Position(line=1799, character=end_of), "\ncopy")
    ]
    for row in range(1800, 1950):  # shifted down by the one line the copy added
        width = len(lines[row])
        changes.append(
            (types.Position(line=row + 1, character=0), types.Position(line=row + 1, character=width), "new")
        )
    changes.append((types.Position(line=1951, character=0), types.Position(line=1951, character=0), "more\n"))
    held = text
    for begin, end, new_text in changes:
        edit = types.TextEdit(range=types.Range(start=begin, end=end), new_text=new_text)
        held = apply_lsp_edits(held, [edit], "utf-16")
    passes = []
    scan = lsp_lines.line_starts
    monkeypatch.setattr(lsp_lines, "line_starts", lambda t: passes.append(len(t)) or scan(t))
    units = PositionCodec(types.PositionEncodingKind.Utf16).client_num_units
    assert lsp_lines.apply_changes(text, changes, units) == held
    assert passes == [len(text)]


@given(TEXT, st.data())
def test_every_offset_round_trips(text: str, data: st.DataObject) -> None:
    units = PositionCodec(types.PositionEncodingKind.Utf8).client_num_units
    offset = data.draw(st.integers(0, len(text)))
    if text[offset - 1 : offset] == "\r" and text[offset : offset + 1] == "\n":
        return  # inside a CR LF: no position names it
    assert offset_at(text, position_at(text, offset, "utf-8"), units) == offset


def test_a_didchanges_changes_are_applied_at_its_end_none_kept_for_later() -> None:
    """`settle_document` (the sidecar's didChange handler calls it first): a document no feature
    reads holds no keystrokes waiting, and its text is the edited one."""
    from pygls.workspace import Workspace

    from sidecar.lsp.documents import LspWorkspace, settle_document

    workspace = LspWorkspace.replacing(Workspace(None))
    uri = "file:///tmp/typed%20in.txt"
    workspace.put_text_document(types.TextDocumentItem(uri=uri, language_id="text", version=1, text="ab\n"))
    document = workspace.get_text_document(uri)
    for n, typed in enumerate("xyz"):
        at = types.Position(line=0, character=n)
        document.apply_change(
            types.TextDocumentContentChangePartial(range=types.Range(start=at, end=at), text=typed)
        )
    settle_document(workspace, uri)
    assert isinstance(document, LspTextDocument) and document._pending == []
    assert document._text == "xyzab\n"
