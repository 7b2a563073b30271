"""Files as the editor has them: open buffers first, then disk; writes through `workspace/applyEdit`.

It serves the engine (the agent's `fs/*` requests), the edit code actions and
`acp.edit.apply`, and the context of a prompt (`uri`/`range`).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.uris import to_fs_path

from sidecar.kernel.errors import SidecarError
from sidecar.kernel.files import read_text_if_exists
from sidecar.lsp.edits import whole_file_edit
from sidecar.lsp.lsp_lines import line_starts, offset_at, split_lines

if TYPE_CHECKING:
    from pygls.workspace import TextDocument

    from sidecar.lsp.ports import EditorPort

JsonObj = dict[str, Any]
# (path, the text the diffs were fitted to or None for no file, the new text) -> written
WriteClosed = Callable[[str, str | None, str], Awaitable[bool]]


class EditFailed(Exception):
    """The editor did not apply an edit (rejected it, or did not answer in time)."""


class EditorFiles:
    def __init__(self, port: EditorPort) -> None:
        self.port = port
        # uri -> real path of each open document, computed once (not per agent file request).
        self._real_paths: dict[str, str] = {}

    # ------------------------------------------------------------------ reading
    def document_for(self, path: Path) -> TextDocument | None:
        """The open document whose file is `path` (a resolved path), if any."""
        wanted = str(path)
        documents = self.port.workspace.text_documents
        for uri, doc in documents.items():
            real = self._real_paths.get(uri)
            if real is None:
                fs = to_fs_path(uri)
                real = self._real_paths[uri] = os.path.realpath(fs) if fs else ""
            if real == wanted:
                found: TextDocument = doc
                return found
        if len(self._real_paths) > len(documents):
            self._real_paths = {u: r for u, r in self._real_paths.items() if u in documents}
        return None

    def forget(self, uri: str) -> None:
        """`uri` was opened or closed: its real path is looked up again when needed."""
        self._real_paths.pop(uri, None)

    def open_document_text(self, path: Path) -> str | None:
        doc = self.document_for(path)
        return doc.source if doc is not None else None

    async def current(self, path: Path) -> tuple[str, str | None]:
        """`path` as (uri, current text): the open buffer first, else disk (None: no such file)."""
        doc = self.document_for(path)
        if doc is not None:
            return doc.uri, doc.source
        return path.as_uri(), await asyncio.to_thread(read_if_file, path)

    # ------------------------------------------------------------------ writing
    async def write_via_editor(self, path: Path, content: str) -> bool:
        """True when the editor applied it to the open document; False when the engine should write
        to disk itself (no such open document, or no applyEdit); raises (SidecarError) when the
        editor rejected it or did not answer. A closed file is never sent to the editor as a
        create-file edit: the editor would write it by path, following a symlink the agent may have
        put in place of a parent since the sidecar checked it."""
        caps = self.port.caps
        doc = self.document_for(path) if caps.apply_edit else None
        if doc is None:
            return False
        edit = whole_file_edit(
            doc.uri,
            doc.source,
            content,
            self.port.workspace,
            document_changes=caps.document_changes,
            create_ok=False,
            version=doc.version if caps.document_changes else None,
        )
        if edit is None:
            return False
        try:
            await self.apply_edit(edit, f"Agent: write {path.name}")
        except EditFailed as exc:
            raise SidecarError(-32603, str(exc)) from None
        return True

    async def apply_edit(self, edit: types.WorkspaceEdit, label: str) -> None:
        """Apply through the editor; raise `EditFailed` with the reason when it does not."""
        timeout = self.port.request_timeout
        try:
            result = await asyncio.wait_for(
                self.port.apply_workspace_edit(types.ApplyWorkspaceEditParams(edit=edit, label=label)),
                timeout,
            )
        except TimeoutError:
            raise EditFailed(f"the editor did not answer workspace/applyEdit within {timeout:g} s") from None
        if result is None or not getattr(result, "applied", False):
            reason = getattr(result, "failure_reason", None) if result is not None else None
            raise EditFailed(f"the editor rejected the edit{': ' + reason if reason else ''}")

    # ------------------------------------------------------------------ prompt context
    async def selection(self, uri: str, rng: types.Range | None) -> tuple[str, str | None]:
        """The text of `uri` (open buffer first), or of `rng` in it: (text, label like "lines 3-7")."""
        doc = self.port.workspace.text_documents.get(uri)
        if doc is not None:
            source = doc.source
        else:
            path = to_fs_path(uri)
            if not path:
                raise ValueError(f"uri {uri!r:.200} is not a file the sidecar can read")
            try:
                found = await asyncio.to_thread(read_if_file, Path(path))
            except SidecarError as exc:
                raise ValueError(exc.message) from None
            if found is None:
                raise ValueError(f"cannot read {path}: no such file")
            source = found
        if rng is None:
            return source, None
        units = self.port.workspace.position_codec.client_num_units
        starts = line_starts(source)
        start, end = offset_at(source, rng.start, units, starts), offset_at(source, rng.end, units, starts)
        if end < start:
            start, end = end, start
        # Lines as the user counts them: a position past the last line is on the last line.
        last = max(len(split_lines(source)) - 1, 0)
        first_line, last_line = sorted((min(int(rng.start.line), last), min(int(rng.end.line), last)))
        return source[start:end], f"lines {first_line + 1}-{last_line + 1}"


def read_if_file(path: Path) -> str | None:
    """The file's UTF-8 text, None when there is no file; a clear error (SidecarError) for what is
    not a readable regular UTF-8 file (never blocks on a FIFO, never replaces bytes silently)."""
    return read_text_if_exists(Path(os.path.realpath(path)))
