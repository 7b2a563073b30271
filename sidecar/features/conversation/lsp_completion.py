"""Completion in the prompt area of a conversation document (docs/protocol.md, "Completion"):
`/` at the start of the prompt offers the agent's commands, `@` the workspace's files and the
open buffers. Nothing is offered anywhere else: not in other documents, not above the marker.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

from lsprotocol import types
from pygls.uris import to_fs_path

from sidecar.features.conversation.document import locate_prompt_area
from sidecar.features.conversation.lsp_navigation import column_units, encoding_of
from sidecar.features.conversation.outline import split_lines
from sidecar.features.conversation.workspace_files import WorkspaceFiles, rank
from sidecar.kernel.mentions import mention_text

if TYPE_CHECKING:
    from sidecar.lsp.server import AcpLanguageServer

TRIGGERS = ["/", "@"]
MAX_ITEMS = 100
_TOKEN = re.compile(r'(?:^|(?<=[\s(\[{]))(@"[^"]*|@[^\s"]*|/[^\s/]*)\Z')


class PromptCompletion:
    def __init__(self, ls: AcpLanguageServer) -> None:
        self.ls = ls
        self.files = WorkspaceFiles()

    async def complete(self, params: types.CompletionParams) -> types.CompletionList | None:
        ls = self.ls
        uri = params.text_document.uri
        identity = await ls.features.identify(uri)
        if identity is None:
            return None
        source = ls.workspace.get_text_document(uri).source
        area = locate_prompt_area(source)
        if area is None:
            return None
        lines = split_lines(source)
        area_line = len(split_lines(source[: area.prompt_start])) - 1
        line_no = params.position.line
        if line_no < area_line or line_no >= len(lines):
            return None  # above the marker: the conversation, not the prompt
        line = lines[line_no]
        column = _code_points(line, params.position.character, encoding_of(ls))
        match = _TOKEN.search(line[:column])
        if match is None:
            return None
        token = match.group(1)
        encoding = encoding_of(ls)
        replace = types.Range(
            start=types.Position(line=line_no, character=column_units(line, match.start(1), encoding)),
            end=types.Position(line=line_no, character=column_units(line, column, encoding)),
        )
        if token.startswith("/"):
            before = "\n".join([*lines[area_line:line_no], line[: match.start(1)]])
            if before.strip():
                return None  # a command only starts the prompt
            return self._commands(identity[1], token[1:], replace)
        return await self._mentions(identity[1], token[1:].lstrip('"'), replace)

    def _commands(self, session_id: str, typed: str, replace: types.Range) -> types.CompletionList:
        kernel = self.ls.kernel
        session = kernel.registry.by_id.get(session_id) if kernel is not None else None
        commands = session.commands if session is not None else ()
        items = []
        for command in commands:
            if not command.name.lower().startswith(typed.lower()):
                continue
            docs = command.description + (f"\n\nInput: {command.hint}" if command.hint else "")
            items.append(
                types.CompletionItem(
                    label="/" + command.name,
                    kind=types.CompletionItemKind.Function,
                    detail=command.hint or command.description or None,
                    documentation=docs or None,
                    filter_text="/" + command.name,
                    text_edit=types.TextEdit(range=replace, new_text=f"/{command.name} "),
                )
            )
        return types.CompletionList(is_incomplete=False, items=items[:MAX_ITEMS])

    async def _mentions(self, session_id: str, typed: str, replace: types.Range) -> types.CompletionList:
        folder = self._folder(session_id)
        if folder is None:
            return types.CompletionList(is_incomplete=False, items=[])
        listed = await self.files.files(folder)
        open_files = self._open_buffers(folder)
        shown = set(open_files)
        candidates = open_files + [f for f in listed if f not in shown]  # open buffers first
        chosen, more = rank(candidates, typed, MAX_ITEMS)
        items = []
        for index, path in enumerate(chosen):
            written = mention_text(path)
            items.append(
                types.CompletionItem(
                    label=written,
                    kind=types.CompletionItemKind.File,
                    detail="open buffer" if path in open_files else None,
                    filter_text=written,
                    sort_text=f"{index:05d}",  # our ranking, not the client's alphabet
                    text_edit=types.TextEdit(range=replace, new_text=written + " "),
                )
            )
        return types.CompletionList(is_incomplete=more, items=items)

    def _folder(self, session_id: str) -> str | None:
        kernel = self.ls.kernel
        session = kernel.registry.by_id.get(session_id) if kernel is not None else None
        if session is not None:
            return session.cwd
        folders = self.ls.folder_paths()
        return folders[0] if folders else None

    def _open_buffers(self, folder: str) -> list[str]:
        """Open documents inside `folder` (relative paths), conversation documents left out."""
        found = []
        prefix = folder.rstrip(os.sep) + os.sep
        for uri in list(self.ls.workspace.text_documents):
            if self.ls.features.identity(uri) is not None:
                continue
            path = to_fs_path(uri)
            if path and path.startswith(prefix):
                found.append(os.path.relpath(path, folder).replace(os.sep, "/"))
        return found


def _code_points(line: str, units: int, encoding: str) -> int:
    """The code-point column of a position given in `encoding` units (clamped to the line)."""
    if encoding == "utf-32":
        return min(units, len(line))
    count = 0
    for index, char in enumerate(line):
        if encoding == "utf-8":
            width = len(char.encode("utf-8", "surrogatepass"))
        else:
            width = 2 if ord(char) > 0xFFFF else 1
        if count + width > units:
            return index
        count += width
    return len(line)
