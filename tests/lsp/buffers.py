"""The test editor's buffers, edited like a real editor edits them.

`workspace/applyEdit` from the sidecar is applied to the open documents of an `Editor`
(`Editor.docs`): positions counted in the negotiated position encoding, a versioned edit
refused when the buffer has moved on (as Helix and VS Code refuse one), and every applied
edit answered by a `didChange` with the next version. The user can type into a buffer
meanwhile (`type_at_end`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from lsprotocol import types

from tests.lsp.editor import Editor


@dataclass
class AppliedEdit:
    at: float  # time.monotonic()
    uri: str
    edits: int


@dataclass
class Buffers:
    editor: Editor
    encoding: str = "utf-16"
    applied: list[AppliedEdit] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    refuse_next: int = 0  # refuse this many edits (as a user who says no, or an editor that failed)

    @classmethod
    def attach(cls, editor: Editor) -> Buffers:
        negotiated = None
        if editor.init_result is not None:
            negotiated = editor.init_result.capabilities.position_encoding
        buffers = cls(editor, str(getattr(negotiated, "value", negotiated) or "utf-16"))
        editor.edit_applier = buffers.apply
        return buffers

    def text(self, uri: str) -> str:
        return self.editor.docs[uri][1]

    def applied_to(self, uri: str, since: float = float("-inf")) -> list[AppliedEdit]:
        return [a for a in self.applied if a.uri == uri and a.at >= since]

    def type_at_end(self, uri: str, typed: str) -> None:
        """The user types at the end of the buffer (in a transcript: its prompt area)."""
        self.editor.change(uri, self.text(uri) + typed)

    async def apply(self, params: Any) -> types.ApplyWorkspaceEditResult:
        edit: types.WorkspaceEdit = params.edit
        if self.refuse_next > 0:
            self.refuse_next -= 1
            return self._refuse("refused on purpose")
        per_document: list[tuple[str, int | None, list[types.TextEdit]]] = []
        for change in edit.document_changes or []:
            if not isinstance(change, types.TextDocumentEdit):
                return self._refuse("only text edits are expected here")
            edits = [e for e in change.edits if isinstance(e, types.TextEdit)]
            per_document.append((change.text_document.uri, change.text_document.version, edits))
        for uri, edits in (edit.changes or {}).items():
            per_document.append((uri, None, list(edits)))
        results: list[tuple[str, str]] = []
        for uri, version, edits in per_document:
            if uri not in self.editor.docs:
                return self._refuse(f"{uri} is not open")
            current_version, text = self.editor.docs[uri]
            if version is not None and version != current_version:
                return self._refuse(f"outdated edit: version {version}, the buffer is at {current_version}")
            try:
                results.append((uri, apply_lsp_edits(text, edits, self.encoding)))
            except ValueError as exc:
                return self._refuse(str(exc))
        for uri, new_text in results:
            self.editor.change(uri, new_text)
            self.applied.append(AppliedEdit(time.monotonic(), uri, len(per_document)))
        return types.ApplyWorkspaceEditResult(applied=True)

    def _refuse(self, reason: str) -> types.ApplyWorkspaceEditResult:
        self.refused.append(reason)
        return types.ApplyWorkspaceEditResult(applied=False, failure_reason=reason)


def _line_starts(text: str) -> list[int]:
    """Offsets where each line starts; lines end at \\n, \\r\\n or \\r, as LSP counts them."""
    starts = [0]
    i = 0
    while i < len(text):
        char = text[i]
        if char == "\r" and text[i + 1 : i + 2] == "\n":
            i += 1
        if char in "\r\n":
            starts.append(i + 1)
        i += 1
    return starts


def offset_at(text: str, position: types.Position, encoding: str, starts: list[int] | None = None) -> int:
    """The code-point offset of an LSP position (past the end of a line: its end)."""
    starts = starts if starts is not None else _line_starts(text)
    if position.line >= len(starts):
        raise ValueError(f"line {position.line} is past the end ({len(starts)} lines)")
    start = starts[position.line]
    end = starts[position.line + 1] if position.line + 1 < len(starts) else len(text)
    line = text[start:end].rstrip("\r\n")
    units = 0
    for index, char in enumerate(line):
        if units >= position.character:
            return start + index
        if encoding == "utf-8":
            units += len(char.encode("utf-8", "surrogatepass"))
        elif encoding == "utf-16":
            units += 2 if ord(char) > 0xFFFF else 1
        else:
            units += 1
    if units < position.character:
        raise ValueError(f"character {position.character} is past the end of line {position.line}")
    return start + len(line)


def apply_lsp_edits(text: str, edits: list[types.TextEdit], encoding: str) -> str:
    """`edits` (relative to `text`, not overlapping) applied, as LSP defines them."""
    starts = _line_starts(text)
    spans = sorted(
        (
            (
                offset_at(text, e.range.start, encoding, starts),
                offset_at(text, e.range.end, encoding, starts),
                e,
            )
            for e in edits
        ),
        key=lambda span: (span[0], span[1]),
    )
    out: list[str] = []
    position = 0
    for start, end, edit in spans:
        if start < position or end < start:
            raise ValueError("overlapping edits")
        out.append(text[position:start])
        out.append(edit.new_text)
        position = end
    out.append(text[position:])
    return "".join(out)


def position_at(text: str, offset: int, encoding: str) -> types.Position:
    """The LSP position of a code-point offset (lines end at \\n, \\r\\n or \\r)."""
    starts = _line_starts(text)
    line = max(i for i, start in enumerate(starts) if start <= offset)
    head = text[starts[line] : offset]
    if encoding == "utf-8":
        units = len(head.encode("utf-8", "surrogatepass"))
    elif encoding == "utf-16":
        units = len(head.encode("utf-16-le", "surrogatepass")) // 2
    else:
        units = len(head)
    return types.Position(line=line, character=units)


def change_incrementally(editor: Editor, uri: str, changes: list[tuple[int, int, str]], encoding: str) -> str:
    """The user edits `uri` as an editor reports it: one didChange whose content changes are
    ranges, each (start offset, end offset, new text) relative to the text the previous one left.
    Returns the text the editor now holds."""
    version, text = editor.docs[uri]
    events: list[types.TextDocumentContentChangeEvent] = []
    for start, end, new_text in changes:
        rng = types.Range(start=position_at(text, start, encoding), end=position_at(text, end, encoding))
        events.append(types.TextDocumentContentChangePartial(range=rng, text=new_text))
        edited = apply_lsp_edits(text, [types.TextEdit(range=rng, new_text=new_text)], encoding)
        assert edited == text[:start] + new_text + text[end:], "the offsets split a CR LF"
        text = edited
    editor.docs[uri] = (version + 1, text)
    editor.client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version + 1),
            content_changes=events,
        )
    )
    return text
