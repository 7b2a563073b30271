"""An agent's diffs applied to the editor's buffers: how a tool call's diffs of one file fit its
text as the editor has it, the WorkspaceEdit that writes the result, and `acp.edit.apply`'s apply
of every file (open documents through the editor, closed files by the sidecar's own write)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from lsprotocol import types

from sidecar.features.edits.diff_apply import Fit, apply_diffs, by_path
from sidecar.lsp.editor_files import EditFailed, EditorFiles, WriteClosed, read_if_file
from sidecar.lsp.edits import whole_file_edit

JsonObj = dict[str, Any]


async def diff_edit(
    files: EditorFiles, path: str, diffs: Sequence[Mapping[str, Any]]
) -> tuple[Fit, types.WorkspaceEdit | None]:
    """How a tool call's diffs of one file fit its current text (open buffer first), and, for an
    open document, the WorkspaceEdit that writes the result when they apply (`edits.diff_apply`).
    A closed file gets no edit: the sidecar writes it (`apply_diffs`)."""
    doc = files.document_for(Path(path))
    current = doc.source if doc is not None else await asyncio.to_thread(read_if_file, Path(path))
    proposal = apply_diffs(current, diffs)
    if proposal.fit is not Fit.APPLIES or proposal.text is None or doc is None:
        return proposal.fit, None
    caps = files.port.caps
    edit = whole_file_edit(
        doc.uri,
        current,
        proposal.text,
        files.port.workspace,
        document_changes=caps.document_changes,
        create_ok=False,
    )
    return proposal.fit, edit


async def apply_agent_diffs(files: EditorFiles, diffs: list[JsonObj], write_closed: WriteClosed) -> bool:
    """Apply each file's diffs not applied yet: an open document through the editor, a closed
    file by `write_closed(path, expected, text)` (the sidecar's own write, only while the file
    holds `expected`). False when one does not fit, is rejected or changed meanwhile."""
    for path, group in by_path(diffs).items():
        doc = files.document_for(Path(path))
        if doc is None:
            current = await asyncio.to_thread(read_if_file, Path(path))
            proposal = apply_diffs(current, group)
            if proposal.fit is Fit.APPLIED:
                continue  # e.g. the agent wrote it already
            if proposal.fit is not Fit.APPLIES or proposal.text is None:
                return False
            if not await write_closed(path, current, proposal.text):
                return False
            continue
        fit, edit = await diff_edit(files, path, group)
        if fit is Fit.APPLIED:
            continue  # e.g. the agent wrote it, or the code action's own edit did
        if edit is None:
            return False
        try:
            await files.apply_edit(edit, "Apply agent edit")
        except EditFailed:
            return False
    return True
