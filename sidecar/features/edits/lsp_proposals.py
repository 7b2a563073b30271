"""What each file of a tool call becomes after the agent's diffs: the `proposals` the editors show.

The rule is `edits.diff_apply`'s, applied here once, to the file as the editor has it (its open
buffer, with the LSP version of that buffer, else the disk), so that no plugin computes it. They
are computed while the notification that carries them is sent, to keep the notifications' order:
a disk read is bounded (PROPOSAL_TEXT_MAX) and never blocks on a named pipe (`kernel.files`).
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sidecar.features.edits.diff_apply import Fit, apply_diffs, by_path
from sidecar.kernel.errors import SidecarError
from sidecar.kernel.files import read_text, resolve_inside
from sidecar.kernel.tool_calls import diffs_in

if TYPE_CHECKING:
    from sidecar.features.edits.fs_service import FileService
    from sidecar.kernel.session import PermissionRequest
    from sidecar.lsp.editor_files import EditorFiles

JsonObj = dict[str, Any]
log = logging.getLogger(__name__)

PROPOSAL_TEXT_MAX = 1024 * 1024  # UTF-8 bytes of one file, before or after the edit
PROPOSALS_TEXT_MAX = 4 * 1024 * 1024  # UTF-8 bytes of all the texts of one message
UNAVAILABLE = "unavailable"  # the fit of a file that could not be read (or may not be)
NOT_FOUND = -32002


TOOL_CALL_UPDATES = ("tool_call", "tool_call_update")
SETTLED = ("completed", "failed")  # a tool call past these proposes nothing any more


class Proposals:
    def __init__(self, files: EditorFiles, fs_of: Callable[[], FileService | None]) -> None:
        self._files = files
        self._fs_of = fs_of  # the edits feature's file service, once the engine runs

    def for_tool_call(self, session_id: object, tool_call_id: object) -> list[JsonObj]:
        """`acp.edit.proposals`: computed now; an unknown session or a tool call without a diff is
        an error (SidecarError)."""
        fs = self._fs_of()
        if fs is None:
            return []
        roots, diffs = fs.diffs_of(session_id, tool_call_id)
        return self._of(roots, diffs)

    def for_permission(self, request: PermissionRequest) -> list[JsonObj]:
        """A pending permission's: the diffs of its tool call, else of the tool call it names."""
        diffs = diffs_in(request.tool_call)
        fs = self._fs_of()
        asked = request.tool_call.get("toolCallId")
        if not diffs and fs is not None and isinstance(asked, str) and asked:
            with contextlib.suppress(SidecarError):  # no diff known for it: nothing to propose
                diffs = fs.diffs_of(request.session_id, asked)[1]
        return self._of(self._roots(request.session_id), diffs) if diffs else []

    def for_update(self, session_id: str, replay: bool, update: Mapping[str, Any]) -> list[JsonObj] | None:
        """A live tool call (update) that carries diffs and is not settled: its proposals; else None."""
        if replay or update.get("sessionUpdate") not in TOOL_CALL_UPDATES or update.get("status") in SETTLED:
            return None
        diffs = diffs_in(dict(update))
        return self._of(self._roots(session_id), diffs) if diffs else None

    def _roots(self, session_id: str) -> Sequence[str] | None:
        fs = self._fs_of()
        return fs.roots_of(session_id) if fs is not None else None

    def _of(self, roots: Sequence[str] | None, diffs: Iterable[Mapping[str, Any]]) -> list[JsonObj]:
        """One proposal per file the diffs change, in the order the agent first named them."""
        budget = PROPOSALS_TEXT_MAX
        out: list[JsonObj] = []
        for path, group in by_path(diffs).items():
            try:
                proposal = self._one(path, group, roots)
            except Exception as exc:  # a bug here must not cost the user the request itself
                log.exception("proposal for %.200s", path)
                proposal = {"path": path, "uri": None, "version": None, "fit": UNAVAILABLE, "text": None}
                proposal["reason"] = f"the sidecar could not compute it ({exc!r:.200})"
            text = proposal["text"]
            if text is not None:
                size = len(text.encode("utf-8", "surrogatepass"))
                if size > min(PROPOSAL_TEXT_MAX, budget):
                    proposal["text"] = None
                    proposal["reason"] = (
                        f"the file after the edit is over {_mib(PROPOSAL_TEXT_MAX)}"
                        if size > PROPOSAL_TEXT_MAX
                        else f"the files of this edit are over {_mib(PROPOSALS_TEXT_MAX)} together"
                    )
                else:
                    budget -= size
            out.append(proposal)
        return out

    def _one(self, path: str, diffs: list[Mapping[str, Any]], roots: Sequence[str] | None) -> JsonObj:
        proposal: JsonObj = {"path": path, "uri": None, "version": None, "fit": UNAVAILABLE, "text": None}
        if roots is None:
            return {**proposal, "reason": "the session is not loaded in this sidecar"}
        try:
            real = resolve_inside(path, roots)
        except SidecarError as exc:
            return {**proposal, "reason": exc.message}
        doc = self._files.document_for(real)
        current: str | None
        if doc is not None:
            proposal["uri"], proposal["version"], current = doc.uri, doc.version, doc.source
            if len(current.encode("utf-8", "surrogatepass")) > PROPOSAL_TEXT_MAX:
                return {**proposal, "reason": f"the file is over {_mib(PROPOSAL_TEXT_MAX)}"}
        else:
            proposal["uri"] = real.as_uri()
            try:
                current = _read_bounded(real, roots)
            except SidecarError as exc:
                return {**proposal, "reason": exc.message}
        result = apply_diffs(current, diffs)
        proposal["fit"], proposal["text"] = result.fit.value, result.text
        proposal["reason"] = (
            "the agent's diff does not fit the file: its old text is not there, or is there more "
            "than once, or a text of the diff is not a string"
            if result.fit is Fit.CONFLICT
            else None
        )
        return proposal


def _mib(size: int) -> str:
    return f"{size / (1024 * 1024):g} MiB"


def _read_bounded(path: Path, roots: Sequence[str]) -> str | None:
    """The file's text (None: no such file); a clear error past PROPOSAL_TEXT_MAX or for what is not
    a regular UTF-8 file."""
    with contextlib.suppress(OSError):  # no file, or unreadable: read_text says which
        if os.stat(path).st_size > PROPOSAL_TEXT_MAX:
            raise SidecarError(-32602, f"the file is over {_mib(PROPOSAL_TEXT_MAX)}")
    try:
        return read_text(path, roots, max_bytes=PROPOSAL_TEXT_MAX)
    except SidecarError as exc:
        if exc.code == NOT_FOUND:
            return None
        raise
