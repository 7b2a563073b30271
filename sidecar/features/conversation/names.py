"""Where conversation documents live: safe, readable file names from untrusted agent names and
session ids.

``STATE/transcripts/AGENT/SESSION.md``. A name keeps ``[A-Za-z0-9._-]``; anything else becomes
``_``, a leading dot is replaced (no hidden files, no ``.``/``..``), long names are cut, and a name
that was changed or cut gets ``-`` and a short hash of the original, so two ids never share a file.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote, urlparse

from sidecar.features.conversation.document import parse_identity
from sidecar.kernel.state_files import MAX_NAME, safe_name

__all__ = ["MAX_NAME", "ConversationPaths", "safe_name"]

SUFFIX = ".md"
_HEAD_BYTES = 256 * 1024


class ConversationPaths:
    """Maps (agent, session) to a document path under ``root`` and back."""

    def __init__(self, root: Path) -> None:
        self.root = Path(os.path.abspath(root))

    def document(self, agent: str, session_id: str) -> Path:
        return self.root / safe_name(agent) / (safe_name(session_id) + SUFFIX)

    def keys_file(self, agent: str, session_id: str) -> Path:
        """The private index of what the document holds (for merging a replayed history)."""
        return self.root / safe_name(agent) / f".{safe_name(session_id)}.keys"

    def identify(self, location: str | Path) -> tuple[str, str] | None:
        """(agent, session) when `location` (a path or a file:// URI) is one of our documents.

        The document's header names its agent and session; they must map back to the same path,
        so a Markdown file placed elsewhere, or edited to claim another session, is not taken.
        """
        path = _as_path(location)
        if path is None or path.suffix != SUFFIX:
            return None
        try:
            real = Path(os.path.realpath(path))
            root = Path(os.path.realpath(self.root))
        except (OSError, ValueError):
            return None
        if real.parent.parent != root:
            return None
        identity = _read_identity(real)
        if identity is None:
            return None
        agent, session_id = identity
        if Path(os.path.realpath(self.document(agent, session_id))) != real:
            return None
        return identity


def _as_path(location: str | Path) -> Path | None:
    if isinstance(location, Path):
        return location
    if location.startswith("file:"):
        parsed = urlparse(location)
        if parsed.netloc not in ("", "localhost"):
            return None
        return Path(unquote(parsed.path))
    if "://" in location:
        return None
    return Path(location)


def _read_identity(path: Path) -> tuple[str, str] | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        head = os.read(fd, _HEAD_BYTES)
    except OSError:
        return None
    finally:
        os.close(fd)
    lines = head.decode("utf-8", "replace").split("\n")
    if len(lines) < 2:
        return None
    return parse_identity(lines[1])
