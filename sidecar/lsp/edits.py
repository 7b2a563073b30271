"""WorkspaceEdits for whole-file replacements, in the client's position encoding."""

from __future__ import annotations

from lsprotocol import types
from pygls.workspace import Workspace


def end_position(text: str, workspace: Workspace) -> types.Position:
    """The position just past the last character, counted in the negotiated units."""
    # LSP line breaks are \n, \r\n and \r; splitlines also knows others, so split by hand.
    normalized = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = normalized.split("\n")
    last = lines[-1]
    return types.Position(line=len(lines) - 1, character=workspace.position_codec.client_num_units(last))


def whole_file_edit(
    uri: str,
    old_text: str | None,
    new_text: str,
    workspace: Workspace,
    *,
    document_changes: bool,
    create_ok: bool,
    version: int | None = None,
) -> types.WorkspaceEdit | None:
    """An edit that turns `old_text` into `new_text` (None = the file does not exist).

    Returns None when the client cannot express it (a new file without create support).
    """
    if old_text is None:
        if not (document_changes and create_ok):
            return None
        insert = types.TextEdit(
            range=types.Range(
                start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)
            ),
            new_text=new_text,
        )
        return types.WorkspaceEdit(
            document_changes=[
                types.CreateFile(
                    uri=uri, options=types.CreateFileOptions(overwrite=False, ignore_if_exists=True)
                ),
                types.TextDocumentEdit(
                    text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=None),
                    edits=[insert],
                ),
            ]
        )
    edit = types.TextEdit(
        range=types.Range(start=types.Position(line=0, character=0), end=end_position(old_text, workspace)),
        new_text=new_text,
    )
    if document_changes:
        return types.WorkspaceEdit(
            document_changes=[
                types.TextDocumentEdit(
                    text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version),
                    edits=[edit],
                )
            ]
        )
    return types.WorkspaceEdit(changes={uri: [edit]})
