"""File access rules for the agent: roots, symlinks, line windows, atomic writes."""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from collections.abc import Iterable
from pathlib import Path

from .errors import SidecarError, invalid, path_refused

_PERCENT_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")


def resolve_inside(raw: object, roots: Iterable[str]) -> Path:
    """The real path of `raw` if it lies inside one of `roots`, else a clear error.

    Symlinks are resolved first (also for a file that does not exist yet: its
    existing parent is resolved), so a link inside the workspace pointing out
    of it is refused.
    """
    if not isinstance(raw, str) or not raw:
        raise invalid("path must be a non-empty string")
    if "\x00" in raw:
        raise path_refused(raw, "the path contains a NUL character")
    if raw.startswith("~"):
        raise path_refused(raw, "'~' is not expanded; send an absolute path")
    if "://" in raw or raw.startswith("file:"):
        raise path_refused(raw, "send a file system path, not a URI")
    if _PERCENT_ESCAPE.search(raw):
        # A client that decodes it would see another path than the one we check.
        raise path_refused(raw, "the path looks URL-encoded (%XX); send the decoded path")
    if not os.path.isabs(raw):
        raise path_refused(raw, "the path is not absolute")
    try:
        raw.encode("utf-8")
    except UnicodeEncodeError:
        raise path_refused(raw, "the path is not valid UTF-8") from None
    real = Path(os.path.realpath(raw))
    real_roots = [Path(os.path.realpath(r)) for r in roots]
    for root in real_roots:
        if real == root or root in real.parents:
            return real
    shown = ", ".join(str(r) for r in real_roots) or "none"
    raise path_refused(raw, f"it is outside the session's directories ({shown})")


def window(text: str, line: object, limit: object) -> str:
    """Lines `line` (1-based) .. `line+limit-1` of text, as fs/read_text_file asks."""
    if line is None and limit is None:
        return text
    if line is not None and (not isinstance(line, int) or isinstance(line, bool) or line < 1):
        raise invalid("line must be a positive integer (1-based)")
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 0):
        raise invalid("limit must be a non-negative integer")
    lines = text.splitlines(keepends=True)
    start = (line or 1) - 1
    end = len(lines) if limit is None else start + limit
    return "".join(lines[start:end])


def read_disk_text(path: Path) -> str:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise SidecarError(-32002, f"file not found: {path}") from None
    except IsADirectoryError:
        raise invalid(f"{path} is a directory") from None
    except OSError as exc:
        raise SidecarError(-32603, f"cannot read {path}: {exc.strerror or exc}") from None
    return data.decode("utf-8", errors="replace")


def atomic_write(path: Path, content: str) -> None:
    """Write via a temp file in the same directory, fsync, then rename over."""
    if not path.parent.is_dir():
        path.parent.mkdir(parents=True, exist_ok=True)
    mode = None
    with contextlib.suppress(FileNotFoundError):
        mode = path.stat().st_mode & 0o7777
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(content)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
