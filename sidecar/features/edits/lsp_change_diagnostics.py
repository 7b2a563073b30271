"""The agent's changes after they landed, in every editor: one diagnostic per hunk, code actions to
revert or keep it, and the commands behind them (docs/protocol.md, "Agent changes").

The hunks themselves (`edits.agent_changes`) are kept in lines; this module turns them into ranges
in the client's position encoding, follows the editor's buffers (`didOpen`, `didChange`) and puts
old lines back through `workspace/applyEdit`.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.uris import to_fs_path

from sidecar.features.edits.agent_changes import (
    AgentChanges,
    Hunk,
    LineEdit,
    in_file_order,
    line_edit,
    lines_of,
)
from sidecar.features.edits.buffer_steps import BufferSteps, KeepOnly, Step, Whole
from sidecar.lsp.code_actions import AGENT_CHANGE
from sidecar.text_safety import clean_text

if TYPE_CHECKING:
    from sidecar.kernel.kernel import Kernel
    from sidecar.lsp.diagnostic_sets import DiagnosticSets
    from sidecar.lsp.editor_files import EditorFiles
    from sidecar.lsp.ports import ChangesPort

JsonObj = dict[str, Any]
OWNER = "agent-changes"  # this module's diagnostics among the sidecar's (DiagnosticSets)
CODE = AGENT_CHANGE  # the shell offers no "fix" for these (lsp/code_actions.py)
PUBLISH_DELAY = 0.05  # seconds: a burst of keystrokes moves the hunks once on screen
PREVIEW_LINES = 12
PREVIEW_CHARS = 1000


class ChangeRefused(Exception):
    """A revert that cannot be done: the message says why."""


def ago(seconds: float) -> str:
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 86400:
        return f"{int(seconds // 3600)} h ago"
    return f"{int(seconds // 86400)} d ago"


def _preview(lines: list[str]) -> str:
    shown = lines[:PREVIEW_LINES]
    text = clean_text("".join(shown)).rstrip("\n")
    if len(text) > PREVIEW_CHARS:
        text = text[:PREVIEW_CHARS] + "…"
    if len(lines) > len(shown):
        text += f"\n… ({len(lines) - len(shown)} more lines)"
    return text


class AgentChangeDiagnostics:
    def __init__(
        self,
        server: ChangesPort,
        files: EditorFiles,
        sets: DiagnosticSets,
        changes: Callable[[], AgentChanges | None],
        kernel: Callable[[], Kernel | None],
    ) -> None:
        self.server = server
        self.files = files
        self.sets = sets
        self._changes = changes
        self._steps = BufferSteps(changes, kernel)  # the buffers' changes, in order (big diffs off the loop)
        self._published: dict[str, str] = {}  # path -> the uri its diagnostics went to
        self._texts: dict[str, str] = {}  # uri -> the buffer's text after the last change seen
        self._real: dict[str, str] = {}  # uri -> real path
        self._pending: set[str] = set()  # uris whose buffer has not caught up with an agent write
        self._dirty: set[str] = set()
        self._flush: asyncio.Handle | None = None

    @property
    def changes(self) -> AgentChanges | None:
        return self._changes()

    @property
    def shown(self) -> bool:
        return self.server.options.changes.diagnostics

    def attach(self, changes: AgentChanges) -> None:
        changes.listen(self._changed)

    # ------------------------------------------------------------------ buffers
    def _path_of(self, uri: str) -> str | None:
        path = self._real.get(uri)
        if path is None:
            fs = to_fs_path(uri)
            if not fs:
                return None
            path = self._real[uri] = os.path.realpath(fs)
        return path

    def opened(self, uri: str) -> None:
        self._real.pop(uri, None)
        changes, path = self.changes, self._path_of(uri)
        if changes is None or path is None or not changes.has(path):
            return
        doc = self.server.workspace.text_documents.get(uri)
        if doc is None:
            return
        self._texts[uri] = doc.source
        self._steps.then(uri, path, KeepOnly(doc.source))  # the file may have changed while closed
        self._schedule(path)

    def closed(self, uri: str) -> None:
        path = self._path_of(uri)
        self._texts.pop(uri, None)
        self._pending.discard(uri)
        self._real.pop(uri, None)
        if path is not None and self.changes is not None and self.changes.has(path):
            self._schedule(path)

    def changed(self, params: types.DidChangeTextDocumentParams) -> None:
        """The buffer changed (pygls has applied it): move the hunks with it (a diff of a whole
        text may finish later, on the worker: `buffer_steps`)."""
        uri = params.text_document.uri
        changes, path = self.changes, self._path_of(uri)
        if changes is None or path is None or not changes.has(path):
            return
        doc = self.server.workspace.text_documents.get(uri)
        now = doc.source if doc is not None else ""
        before = self._texts.get(uri)
        self._texts[uri] = now
        if uri in self._pending:
            # The agent's write lands in the buffer only now: the hunks are already in its terms.
            self._pending.discard(uri)
            self._steps.then(uri, path, KeepOnly(now))
            return
        steps: list[Step] = []
        edits: list[LineEdit] = []
        for change in params.content_changes:
            if isinstance(change, types.TextDocumentContentChangePartial):
                start, end = change.range.start, change.range.end
                edits.append(line_edit(start.line, start.character, end.line, end.character, change.text))
            elif before is not None:
                if edits:
                    steps.append(tuple(edits))
                steps.append(Whole(before, change.text))
                edits, before = [], change.text
            else:
                self._steps.then(uri, path, KeepOnly(now))
                return
        if edits:
            steps.append(tuple(edits))
        for step in steps:
            self._steps.then(uri, path, step)

    # ------------------------------------------------------------------ publishing
    def _changed(self, path: str, written: bool) -> None:
        if written:
            doc = self.files.document_for(Path(path))
            changes = self.changes
            if doc is not None and changes is not None:
                lines = lines_of(doc.source)
                if all(h.holds_agent_text(lines) for h in changes.hunks(path)):
                    self._texts[doc.uri] = doc.source
                    self._steps.superseded(doc.uri)  # a diff of its echo would move them again
                else:
                    self._pending.add(doc.uri)
        self._schedule(path)

    def _schedule(self, path: str) -> None:
        self._dirty.add(path)
        if self._flush is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                return
            self._flush = loop.call_later(PUBLISH_DELAY, self.publish_now)

    def publish_now(self) -> None:
        self._flush = None
        dirty, self._dirty = self._dirty, set()
        for path in sorted(dirty):
            self.publish(path)

    def publish(self, path: str) -> None:
        changes = self.changes
        hunks = changes.hunks(path) if changes is not None and self.shown else []
        uri = self.uri_of(path)
        before = self._published.pop(path, None)
        if before is not None and before != uri:
            self.sets.publish(before, OWNER, [])
        if hunks:
            self._published[path] = uri
        self.sets.publish(uri, OWNER, [self.diagnostic(h) for h in hunks])

    def uri_of(self, path: str) -> str:
        doc = self.files.document_for(Path(path))
        return doc.uri if doc is not None else Path(path).as_uri()

    def range_of(self, hunk: Hunk) -> types.Range:
        """The hunk's lines as a range in the client's units (a deletion: where the lines were)."""
        start = types.Position(line=hunk.start, character=0)
        if not hunk.new:
            return types.Range(start=start, end=start)
        last = hunk.new[-1]
        if last.endswith(("\n", "\r")):
            return types.Range(start=start, end=types.Position(line=hunk.end, character=0))
        units = self.server.workspace.position_codec.client_num_units(last)
        return types.Range(start=start, end=types.Position(line=hunk.end - 1, character=units))

    def _shown_range(self, hunk: Hunk) -> types.Range:
        """The range a diagnostic marks: up to the end of the hunk's last line, not the next line."""
        if not hunk.new:
            return self.range_of(hunk)
        last = hunk.new[-1].rstrip("\r\n")
        units = self.server.workspace.position_codec.client_num_units(last)
        return types.Range(
            start=types.Position(line=hunk.start, character=0),
            end=types.Position(line=hunk.end - 1, character=units),
        )

    def message(self, hunk: Hunk) -> str:
        verb = "added" if not hunk.old else "removed" if not hunk.new else "changed"
        title = self.server.clean(self.server.session_title(hunk.session_id), 80)
        head = f"{verb} by the agent · {title} · {ago(max(time.time() - hunk.at, 0))}"
        return f"{head}\nwas:\n{_preview(hunk.old)}" if hunk.old else head

    def diagnostic(self, hunk: Hunk) -> types.Diagnostic:
        options = self.server.options.changes
        severity = (
            types.DiagnosticSeverity.Information
            if options.severity == "information"
            else types.DiagnosticSeverity.Hint
        )
        return types.Diagnostic(
            range=self._shown_range(hunk),
            message=self.message(hunk),
            severity=severity,
            source=options.source,
            code=CODE,
            data={"hunkId": hunk.id, "sessionId": hunk.session_id},
        )

    # ------------------------------------------------------------------ code actions
    def actions(self, uri: str, rng: types.Range) -> list[types.CodeAction]:
        changes, path = self.changes, self._path_of(uri)
        if changes is None or path is None or not self.shown:
            return []
        hunks = changes.hunks(path)
        if not hunks:
            return []
        first, last = sorted((rng.start.line, rng.end.line))
        here = [h for h in hunks if h.start <= last and first < max(h.end, h.start + 1)]
        actions: list[types.CodeAction] = []
        for hunk in here:
            where = f" (line {hunk.start + 1})" if len(here) > 1 else ""
            target = [{"hunkId": hunk.id}]
            actions.append(_action(f"Revert this agent change{where}", "acp.changes.revert", target))
            actions.append(_action(f"Keep this agent change{where}", "acp.changes.keep", target))
        if self.server.caps.show_document:
            for hunk in here[:1]:
                actions.append(_action("Show the agent's change", "acp.changes.show", [{"hunkId": hunk.id}]))
        if len(hunks) > 1 or not here:
            whole = [{"uri": uri}]
            actions.append(_action("Revert all agent changes in this file", "acp.changes.revert", whole))
            actions.append(_action("Keep all agent changes in this file", "acp.changes.keep", whole))
        return actions

    # ------------------------------------------------------------------ commands
    def selected(self, hunk_id: str | None, uri: str | None, session_id: str | None) -> list[Hunk]:
        changes = self.changes
        if changes is None:
            return []
        if hunk_id is not None:
            found = changes.find(hunk_id)
            return [found] if found is not None else []
        if uri is not None:
            path = self._path_of(uri)
            hunks = changes.hunks(path) if path is not None else []
        else:
            hunks = list(changes.all_hunks())
        return [h for h in hunks if session_id is None or h.session_id == session_id]

    def listing(self, hunks: Iterable[Hunk]) -> JsonObj:
        by_path: dict[str, list[Hunk]] = {}
        for hunk in hunks:
            by_path.setdefault(hunk.path, []).append(hunk)
        files = []
        for path, found in sorted(by_path.items()):
            files.append(
                {
                    "uri": self.uri_of(path),
                    "path": path,
                    "hunks": [self.describe(h) for h in sorted(found, key=in_file_order)],
                }
            )
        return {"files": files}

    def describe(self, hunk: Hunk) -> JsonObj:
        r = self.range_of(hunk)
        return {
            "hunkId": hunk.id,
            "sessionId": hunk.session_id,
            "title": self.server.session_title(hunk.session_id),
            "range": {
                "start": {"line": r.start.line, "character": r.start.character},
                "end": {"line": r.end.line, "character": r.end.character},
            },
            "oldText": "".join(hunk.old),
            "newText": "".join(hunk.new),
            "at": hunk.at,
        }

    async def before_text(self, hunk: Hunk) -> tuple[str, types.Range]:
        """The file as it was before this hunk (the others left as they are), and where the old
        lines are in it; the old lines alone when the hunk no longer holds the agent's text."""
        _uri, text = await self.files.current(Path(hunk.path))
        lines = lines_of(text or "")
        if hunk.holds_agent_text(lines):
            lines[hunk.start : hunk.end] = hunk.old
            start = hunk.start
        else:
            lines, start = list(hunk.old), 0
        end_line = start + len(hunk.old)
        rng = types.Range(
            start=types.Position(line=start, character=0), end=types.Position(line=end_line, character=0)
        )
        return "".join(lines), rng

    def keep(self, hunks: list[Hunk]) -> JsonObj:
        changes = self.changes
        gone = changes.drop(h.id for h in hunks) if changes is not None else []
        return {"kept": [h.id for h in gone]}

    async def revert(self, hunks: list[Hunk], write_closed: WriteClosed) -> JsonObj:
        """Put back the old lines of each hunk that still holds the agent's text; say why not for
        the others."""
        reverted: list[str] = []
        refused: list[JsonObj] = []
        by_path: dict[str, list[Hunk]] = {}
        for hunk in hunks:
            by_path.setdefault(hunk.path, []).append(hunk)
        for path, found in by_path.items():
            try:
                reverted += await self._revert_file(path, found, refused, write_closed)
            except ChangeRefused as exc:
                refused += [{"hunkId": h.id, "reason": str(exc)} for h in found]
        return {"reverted": reverted, "refused": refused}

    async def _revert_file(
        self, path: str, hunks: list[Hunk], refused: list[JsonObj], write_closed: WriteClosed
    ) -> list[str]:
        uri, text = await self.files.current(Path(path))
        if text is None:
            raise ChangeRefused(f"{path} no longer exists")
        lines = lines_of(text)
        ok: list[Hunk] = []
        for hunk in sorted(hunks, key=in_file_order):
            if hunk.holds_agent_text(lines):
                ok.append(hunk)
            else:
                refused.append({"hunkId": hunk.id, "reason": "the lines changed since the agent wrote them"})
        if not ok:
            return []
        doc = self.files.document_for(Path(path))
        changes = self.changes
        if doc is None:
            # A closed file: the sidecar writes it, only while it holds what was checked.
            new_lines = list(lines)
            for hunk in reversed(ok):
                new_lines[hunk.start : hunk.end] = hunk.old
            if not await write_closed(ok[0].session_id, path, text, "".join(new_lines)):
                raise ChangeRefused(f"{path} changed while it was being reverted")
            if changes is not None:
                changes.drop(h.id for h in ok)
                changes.edited(path, [LineEdit(h.start, h.end, len(h.old)) for h in reversed(ok)])
            return [h.id for h in ok]
        if not self.server.caps.apply_edit:
            raise ChangeRefused("the editor cannot apply edits (workspace/applyEdit)")
        edits = [types.TextEdit(range=self.range_of(h), new_text="".join(h.old)) for h in ok]
        if self.server.caps.document_changes:
            versioned = types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=doc.version)
            edit = types.WorkspaceEdit(
                document_changes=[types.TextDocumentEdit(text_document=versioned, edits=list(edits))]
            )
        else:
            edit = types.WorkspaceEdit(changes={uri: list(edits)})
        from sidecar.lsp.editor_files import EditFailed

        try:
            await self.files.apply_edit(edit, "Revert agent change")
        except EditFailed as exc:
            raise ChangeRefused(str(exc)) from None
        if changes is not None:
            changes.drop(h.id for h in ok)  # the buffer's didChange has moved the rest
        return [h.id for h in ok]


# (sessionId, path, the text expected, the new text) -> written
WriteClosed = Callable[[str, str, str, str], Any]


def _action(title: str, command: str, arguments: list[Any]) -> types.CodeAction:
    return types.CodeAction(
        title=title,
        kind=types.CodeActionKind.QuickFix,
        command=types.Command(title=title, command=command, arguments=arguments),
    )
