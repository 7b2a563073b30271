"""File access rules for the agent: roots, symlinks, line windows, UTF-8, atomic writes.

Checking a path and using it are one operation: `resolve_inside` checks the
real path, and every read or write walks exactly that real path without
following a symlink (`fd_walk`), so a part swapped for a symlink afterwards is
refused instead of followed. Reads stream only the lines asked for; writes go
through a temp file created next to the target and renamed over it, all
relative to one verified directory descriptor.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path

from sidecar.kernel import fd_walk
from sidecar.kernel.errors import SidecarError, invalid, path_refused

_PERCENT_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")

MAX_ANSWER_BYTES = 16 * 1024 * 1024
"""The most one fs/read_text_file answer carries (docs/protocol.md)."""

_CHUNK = 256 * 1024


def resolve_inside(raw: object, roots: Iterable[str]) -> Path:
    """The real path of `raw` if it lies inside one of `roots`, else a clear error.

    Symlinks are resolved first (also for a file that does not exist yet: its
    existing parent is resolved), so a link inside the workspace pointing out
    of it is refused. Use the result with `read_text`/`write_text`, which
    refuse it if any part of it has become a symlink since.
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
    try:
        real = Path(os.path.realpath(raw))
    except OSError as exc:  # e.g. a part swapped between realpath's lstat and readlink
        raise path_refused(raw, f"it cannot be resolved ({exc.strerror or exc}); try again") from None
    real_roots = [Path(os.path.realpath(r)) for r in roots]
    for root in real_roots:
        if real == root or root in real.parents:
            return real
    shown = ", ".join(str(r) for r in real_roots) or "none"
    raise path_refused(raw, f"it is outside the session's directories ({shown})")


# ---------------------------------------------------------------------- reading


def _window_args(line: object, limit: object) -> tuple[int, int | None]:
    """(lines to skip, lines to take or None for all), from fs/read_text_file's `line`/`limit`."""
    if line is not None and (not isinstance(line, int) or isinstance(line, bool) or line < 1):
        raise invalid("line must be a positive integer (1-based)")
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 0):
        raise invalid("limit must be a non-negative integer")
    return (line or 1) - 1, limit


def _too_big(what: str, max_bytes: int) -> SidecarError:
    return invalid(
        f"{what} is over {max_bytes // (1024 * 1024)} MiB, the most one answer carries; "
        "ask for fewer lines with line/limit"
    )


def _after_newlines(text: str, count: int, start: int = 0) -> int:
    """The offset just after the `count`-th "\\n" from `start` (the end when there are fewer)."""
    pos = start
    for _ in range(count):
        found = text.find("\n", pos)
        if found < 0:
            return len(text)
        pos = found + 1
    return pos


def window(text: str, line: object, limit: object, *, max_bytes: int = MAX_ANSWER_BYTES) -> str:
    """Lines `line` (1-based) .. `line+limit-1` of text, as fs/read_text_file asks.

    Lines end at "\\n" only ("\\r\\n" stays inside the line; form feed, U+2028
    and the other separators of `str.splitlines` are text).
    """
    skip, take = _window_args(line, limit)
    start = _after_newlines(text, skip)
    end = len(text) if take is None else _after_newlines(text, take, start)
    part = text if start == 0 and end == len(text) else text[start:end]
    if len(part) > max_bytes // 4 and len(part.encode("utf-8", "surrogatepass")) > max_bytes:
        raise _too_big("the requested text", max_bytes)
    return part


def _stream_window(fd: int, skip: int, take: int | None, max_bytes: int, path: Path) -> tuple[bytes, int]:
    """Read only the bytes of the window: (its bytes, its offset in the file)."""
    offset = 0
    data = b""
    while skip:
        data = os.read(fd, _CHUNK)
        if not data:
            return b"", offset
        found = data.count(b"\n")
        if found < skip:
            skip -= found
            offset += len(data)
            continue
        pos = -1
        for _ in range(skip):
            pos = data.index(b"\n", pos + 1)
        offset += pos + 1
        data = data[pos + 1 :]
        skip = 0
    pieces: list[bytes] = []
    size = 0
    while True:
        if not data:
            data = os.read(fd, _CHUNK)
            if not data:
                break
        if take is not None:
            found = data.count(b"\n")
            if found >= take:
                pos = -1
                for _ in range(take):
                    pos = data.index(b"\n", pos + 1)
                data = data[: pos + 1]
                take = 0
            else:
                take -= found
        size += len(data)
        if size > max_bytes:
            raise _too_big(f"the requested part of {path}", max_bytes)
        pieces.append(data)
        data = b""
        if take == 0:
            break
    return b"".join(pieces), offset


def _decode(data: bytes, offset: int, path: Path) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad = data[exc.start : exc.start + 1].hex()
        raise invalid(
            f"{path} is not UTF-8 text (byte 0x{bad} at offset {offset + exc.start}); "
            "the agent can read only UTF-8 files"
        ) from None


def read_text(
    path: Path,
    roots: Sequence[str] = (),
    line: object = None,
    limit: object = None,
    *,
    max_bytes: int = MAX_ANSWER_BYTES,
) -> str:
    """The lines `line`..`line+limit-1` of the regular file at real path `path`, as UTF-8 text.

    `path` comes from `resolve_inside`; it is opened without following a
    symlink (a part swapped for one is refused), without blocking (a named
    pipe, socket or device is refused), and verified to lie inside `roots`.
    Only the window is read and kept; it may be at most `max_bytes`.
    """
    skip, take = _window_args(line, limit)
    try:
        fd, _info = fd_walk.open_regular(path, roots)
    except OSError as exc:
        raise fd_walk.os_error(path, "read", exc) from None
    try:
        data, offset = _stream_window(fd, skip, take, max_bytes, path)
    except OSError as exc:
        raise fd_walk.os_error(path, "read", exc) from None
    finally:
        os.close(fd)
    return _decode(data, offset, path)


def read_disk_text(path: Path) -> str:
    """The whole file at real path `path` (at most 16 MiB); prefer `read_text` with the window."""
    return read_text(path)


def read_text_if_exists(path: Path, roots: Sequence[str] = ()) -> str | None:
    """The whole file as `read_text` reads it, or None when there is no file at `path`."""
    try:
        return read_text(path, roots)
    except SidecarError as exc:
        if exc.code == -32002:
            return None
        raise


# ---------------------------------------------------------------------- writing


def _may_write(name: str, parent: int, info: os.stat_result) -> bool:
    """Whether the user may write the existing file: its permissions, not root's override."""
    if not os.access(name, os.W_OK, dir_fd=parent, follow_symlinks=False):
        return False
    # root may write anything; a file without any write bit is still read-only to the user.
    return os.geteuid() != 0 or bool(info.st_mode & 0o222)


def _existing(name: str, parent: int, path: Path) -> os.stat_result | None:
    try:
        info = os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(info.st_mode):
        raise fd_walk.swapped(path)
    if not stat.S_ISREG(info.st_mode):
        kind = fd_walk.kind_of(info.st_mode)
        raise path_refused(str(path), f"it is {kind}; only regular files are written")
    if not _may_write(name, parent, info):
        raise path_refused(str(path), "the file is read-only")
    return info


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def write_text(path: Path, content: str, roots: Sequence[str] = (), *, mode: int | None = None) -> None:
    """Write `content` to the real path `path` atomically: temp file, fsync, rename over.

    Every step is relative to the parent's descriptor, reached without following
    a symlink (missing parents are made the same way) and verified inside
    `roots`: nothing lands outside, and no temp file is left behind on failure.
    An existing file keeps its mode (and owner, where we may set it); a file the
    user cannot write is refused. A new file gets `mode`, else 0666 less the
    umask, as `open()` would.
    """
    try:
        data = content.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise invalid(f"content is not valid Unicode text (at character {exc.start})") from None
    if not path.name:
        raise invalid(f"{path} is a directory")
    try:
        with fd_walk.directory(path.parent, create=True, readable=True) as parent:
            fd_walk.verify_inside(parent, roots, path)
            _replace_in(parent, path, data, mode)
    except OSError as exc:
        raise fd_walk.os_error(path, "write", exc) from None


def _replace_in(parent: int, path: Path, data: bytes, mode: int | None) -> None:
    old = _existing(path.name, parent, path)
    tmp = f".{path.name[:100]}.{secrets.token_hex(4)}.tmp"
    # A new file is created as open() would (the kernel applies the umask and
    # default ACLs); otherwise nobody else may read the temp file meanwhile.
    create_mode = 0o666 if old is None and mode is None else 0o600
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(tmp, flags, create_mode, dir_fd=parent)
    try:
        try:
            if old is not None and (old.st_uid, old.st_gid) != (os.geteuid(), os.getegid()):
                with contextlib.suppress(OSError):
                    os.fchown(fd, old.st_uid, old.st_gid)
            if mode is not None:
                os.fchmod(fd, mode)
            elif old is not None:
                os.fchmod(fd, stat.S_IMODE(old.st_mode))
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path.name, src_dir_fd=parent, dst_dir_fd=parent)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=parent)
        raise
    with contextlib.suppress(OSError):
        os.fsync(parent)  # the rename itself survives a crash


def replace_exactly(path: Path, expected: str | None, content: str, roots: Sequence[str] = ()) -> str | None:
    """Write `content` over the file only if it holds exactly `expected`; the file as found
    (None: no file). Read and write follow each other at once, so the window in which another
    program's change could be lost is as short as it can be without locks."""
    found = read_text_if_exists(path, roots)
    if found == expected:
        write_text(path, content, roots)
    return found


def atomic_write(path: Path, content: str) -> None:
    """`write_text` without roots (the no-follow walk of the checked path still applies)."""
    write_text(path, content)


def write_private(path: Path, content: str) -> None:
    """A state file: written atomically, mode 0600 whatever the umask (also when it existed).

    `path` need not be a real path (a state dir under a symlinked home): its
    directory is resolved first; the agent cannot reach the state dir anyway.
    """
    write_text(Path(os.path.realpath(path.parent)) / path.name, content, mode=0o600)


__all__ = [
    "MAX_ANSWER_BYTES",
    "atomic_write",
    "read_disk_text",
    "read_text",
    "read_text_if_exists",
    "resolve_inside",
    "window",
    "write_private",
    "write_text",
]
