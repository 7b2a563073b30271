"""The sidecar's copy of each open buffer, kept with LSP's line rule (`lsp_lines`).

pygls' own document counts lines with `str.splitlines`: an incremental edit below a form feed,
`\\x85` or U+2028 would land a line early and the copy would drift from the editor's buffer.
`LspWorkspace` makes every open document an `LspTextDocument`. The changes of one didChange are
applied together (`settle_document`): an edit of many lines is one pass over the text.
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import unquote

from lsprotocol import types
from pygls.workspace import PositionCodec, TextDocument, Workspace

from sidecar.lsp.lsp_lines import Change, apply_changes, offset_at, split_lines
from sidecar.lsp.pygls_internals import HookedWorkspace

SYNC_KIND = types.TextDocumentSyncKind.Incremental  # what the server announces (server.py)


class LspTextDocument(TextDocument):
    def __init__(
        self,
        uri: str,
        text: str,
        version: int | None,
        language_id: str | None,
        position_codec: PositionCodec,
    ) -> None:
        # pygls' own copy of the text stays None: `source` below is the one copy.
        super().__init__(
            uri,
            source=None,
            version=version,
            language_id=language_id,
            sync_kind=SYNC_KIND,
            position_codec=position_codec,
        )
        self._text = text
        # Incremental changes not applied yet: pygls hands over a didChange's changes one by one;
        # they are applied together (`apply_changes`) by `settle`, at the end of the didChange.
        self._pending: list[Change] = []

    def settle(self) -> None:
        """Apply the changes handed over so far (all of one didChange: see `settle_document`)."""
        if self._pending:
            pending, self._pending = self._pending, []
            self._text = apply_changes(self._text, pending, self.position_codec.client_num_units)

    @property
    def source(self) -> str:
        self.settle()
        return self._text

    @property
    def lines(self) -> Sequence[str]:
        return tuple(split_lines(self.source))

    def apply_change(self, change: types.TextDocumentContentChangeEvent) -> None:
        if isinstance(change, types.TextDocumentContentChangePartial):
            self._pending.append((change.range.start, change.range.end, change.text))
        else:
            self._pending.clear()
            self._text = change.text

    def offset_at_position(self, client_position: types.Position) -> int:
        return offset_at(self.source, client_position, self.position_codec.client_num_units)


def settle_document(workspace: Workspace, uri: str) -> None:
    """A didChange's changes were all handed over: apply them now, together (none is kept for
    later: a document no feature reads would hold every keystroke)."""
    document = workspace.text_documents.get(unquote(uri))
    if isinstance(document, LspTextDocument):
        document.settle()


class LspWorkspace(HookedWorkspace):
    def new_document(
        self, uri: str, source: str | None, version: int | None, language_id: str | None
    ) -> TextDocument:
        return LspTextDocument(uri, source or "", version, language_id, self.position_codec)

    @classmethod
    def replacing(cls, made: object) -> LspWorkspace:
        """The same workspace as pygls made it at `initialize`, with LSP-line documents."""
        assert isinstance(made, Workspace)
        return cls(
            made.root_uri,
            SYNC_KIND,
            list(made.folders.values()),
            made.position_encoding,
        )
