"""Finding one's way in conversations with plain LSP (docs/protocol.md, "Navigation"):
the turns of a conversation document as symbols, its turns and blocks as folds, the files it names
as links, and every session of the title cache as a workspace symbol that opens its document.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types

from sidecar.features.conversation.outline import Outline, outline, split_lines

if TYPE_CHECKING:
    from sidecar.lsp.server import AcpLanguageServer

MAX_SESSION_SYMBOLS = 100  # a query's answer; a picker asks again as the user types
UNTITLED = "Untitled session"


def column_units(line: str, column: int, encoding: str) -> int:
    head = line[:column]
    if encoding == "utf-8":
        return len(head.encode("utf-8", "surrogatepass"))
    if encoding == "utf-32":
        return len(head)
    return len(head.encode("utf-16-le", "surrogatepass")) // 2


def encoding_of(ls: AcpLanguageServer) -> str:
    value = getattr(ls.workspace.position_encoding, "value", ls.workspace.position_encoding)
    return value if value in ("utf-8", "utf-16", "utf-32") else "utf-16"


async def _outline_of(ls: AcpLanguageServer, uri: str) -> tuple[Outline, list[str], str] | None:
    """The outline, lines and session of a conversation document (None for any other document)."""
    identity = await ls.features.identify(uri)
    if identity is None:
        return None
    source = ls.workspace.get_text_document(uri).source
    return outline(source), split_lines(source), identity[1]


def _range(lines: list[str], start: int, end: int, encoding: str) -> types.Range:
    last = lines[end] if end < len(lines) else ""
    return types.Range(
        start=types.Position(line=start, character=0),
        end=types.Position(line=end, character=column_units(last, len(last), encoding)),
    )


async def document_symbols(ls: AcpLanguageServer, uri: str) -> list[types.DocumentSymbol] | None:
    found = await _outline_of(ls, uri)
    if found is None:
        return None
    shape, lines, _session = found
    encoding = encoding_of(ls)
    symbols = []
    for turn in shape.turns:
        whole = _range(lines, turn.start, turn.end, encoding)
        children = [
            types.DocumentSymbol(
                name=title or "Tool call",
                kind=types.SymbolKind.Function,
                range=_range(lines, line, line, encoding),
                selection_range=_range(lines, line, line, encoding),
            )
            for line, title in turn.tools
        ]
        symbols.append(
            types.DocumentSymbol(
                name=turn.name,
                detail="You",
                kind=types.SymbolKind.Event,
                range=whole,
                selection_range=_range(lines, turn.start, turn.start, encoding),
                children=children or None,
            )
        )
    return symbols


async def folding_ranges(ls: AcpLanguageServer, uri: str) -> list[types.FoldingRange] | None:
    found = await _outline_of(ls, uri)
    if found is None:
        return None
    shape, _lines, _session = found
    return [
        types.FoldingRange(
            start_line=fold.start,
            end_line=fold.end,
            kind=types.FoldingRangeKind.Region if fold.region else None,
        )
        for fold in shape.folds
        if fold.end > fold.start
    ]


async def document_links(ls: AcpLanguageServer, uri: str) -> list[types.DocumentLink] | None:
    found = await _outline_of(ls, uri)
    if found is None:
        return None
    shape, lines, session_id = found
    base = _session_folder(ls, session_id)
    encoding = encoding_of(ls)
    links = []
    for ref in shape.paths:
        path = _joined(base, ref.path)
        if path is None:
            continue
        target = Path(path).as_uri()
        if ref.target_line is not None:
            target += f"#L{ref.target_line}"  # VS Code opens the file at that line
        line = lines[ref.line]
        links.append(
            types.DocumentLink(
                range=types.Range(
                    start=types.Position(line=ref.line, character=column_units(line, ref.start, encoding)),
                    end=types.Position(line=ref.line, character=column_units(line, ref.end, encoding)),
                ),
                target=target,
                tooltip=f"Open {ref.path}" + (f" at line {ref.target_line}" if ref.target_line else ""),
            )
        )
    return links


def _joined(base: str | None, path: str) -> str | None:
    """`path` made absolute against `base` (a path string operation: nothing is read)."""
    if os.path.isabs(path):
        return os.path.normpath(path)
    return os.path.normpath(os.path.join(base, path)) if base else None


def _session_folder(ls: AcpLanguageServer, session_id: str) -> str | None:
    """The folder a session's paths are relative to: its cwd, else the first workspace folder."""
    kernel = ls.kernel
    session = kernel.registry.by_id.get(session_id) if kernel is not None else None
    if session is not None:
        return session.cwd
    folders = ls.folder_paths()
    return folders[0] if folders else None


async def session_symbols(ls: AcpLanguageServer, query: str) -> list[types.SymbolInformation]:
    """The sessions of the title cache whose title, folder, date or id contain every word of the
    query (any case), newest first, at most MAX_SESSION_SYMBOLS; each opens its document."""
    kernel = ls.kernel
    if kernel is None:
        return []
    words = query.lower().split()
    chosen, _more = await kernel.registry.list(None, False, ls.folder_paths(), MAX_SESSION_SYMBOLS, words)
    symbols = []
    for entry in chosen:
        session_id = str(entry["sessionId"])
        uri = await _document_uri(ls, session_id)
        if uri is None:
            continue
        when = str(entry.get("updatedAt") or "")[:16].replace("T", " ")
        symbols.append(
            types.SymbolInformation(
                name=str(entry.get("title") or UNTITLED),
                kind=types.SymbolKind.Event,
                location=types.Location(
                    uri=uri,
                    range=types.Range(
                        start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)
                    ),
                ),
                container_name=" · ".join(part for part in (entry.get("cwd"), when) if part),
            )
        )
    return symbols


async def _document_uri(ls: AcpLanguageServer, session_id: str) -> str | None:
    """The session's document, created first when it does not exist yet (so opening it works)."""
    kernel = ls.kernel
    if kernel is None:
        return None
    from sidecar.features.conversation.feature import Documents  # with the engine

    documents = kernel.feature(Documents)
    path = documents.conversations.store.path(kernel.agents.directory.key_of(session_id), session_id)
    if not await asyncio.to_thread(path.exists):
        try:
            return str((await documents.of_session(session_id))["uri"])
        except Exception:
            return None
    return path.as_uri()


__all__ = ["document_links", "document_symbols", "folding_ranges", "session_symbols"]
