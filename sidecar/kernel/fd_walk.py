"""Use the object that was checked: open a real path one component at a time, never following a symlink.

The caller resolves and checks a path (`files.resolve_inside`); an agent can swap
any part of it for a symlink afterwards. Every use therefore walks the checked
real path from `/` with `O_NOFOLLOW`, holding a directory descriptor at each
step, and works relative to the last one (`dir_fd`): a component that became a
symlink is refused, and nothing is ever opened, created or renamed outside the
checked place. The opened descriptor's real path is verified against the
session's roots as well, before it is used.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path

from sidecar.kernel.errors import SidecarError, invalid, path_refused

# O_PATH needs no read permission on the directory (like path resolution itself).
_DIR_FLAGS = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC | os.O_NOFOLLOW
_PROC_FD = Path("/proc/self/fd")


def swapped(path: Path) -> SidecarError:
    return path_refused(str(path), "it changed while being used (a part of it became a symbolic link)")


def os_error(path: Path, action: str, exc: OSError) -> SidecarError:
    """A clear error for an OSError of a file operation."""
    if exc.errno == errno.ENOENT:
        return SidecarError(-32002, f"file not found: {path}")
    if exc.errno == errno.ELOOP:
        return swapped(path)
    if exc.errno == errno.ENOTDIR:
        return invalid(f"{path}: a part of the path is not a directory")
    if exc.errno == errno.EISDIR:
        return invalid(f"{path} is a directory")
    return SidecarError(-32603, f"cannot {action} {path}: {exc.strerror or exc}")


def kind_of(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    return "not a regular file"


def _components(path: Path) -> list[str]:
    if not path.is_absolute():
        raise invalid(f"{path} is not absolute")
    parts = [p for p in path.parts[1:] if p]
    if any(p in (".", "..") for p in parts):
        raise invalid(f"{path} is not a resolved path")
    return parts


@contextlib.contextmanager
def directory(path: Path, *, create: bool = False, readable: bool = False) -> Iterator[int]:
    """A descriptor of the directory at real path `path`, reached without following any symlink.

    `create` makes missing components (mode 0777 less the umask, as `mkdir -p`),
    each relative to the verified descriptor of its parent. `readable` opens the
    last one O_RDONLY (needed for fsync) instead of O_PATH.
    """
    fd = os.open("/", _DIR_FLAGS)
    try:
        parts = _components(path)
        for index, name in enumerate(parts):
            flags = _DIR_FLAGS
            if readable and index == len(parts) - 1:
                flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
            try:
                child = _open_step(fd, name, flags, path)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):  # made meanwhile: the open below checks it
                    os.mkdir(name, 0o777, dir_fd=fd)
                child = _open_step(fd, name, flags, path)
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


def _open_step(parent: int, name: str, flags: int, path: Path) -> int:
    try:
        return os.open(name, flags, dir_fd=parent)
    except PermissionError:
        if flags == _DIR_FLAGS:
            raise
        return os.open(name, _DIR_FLAGS, dir_fd=parent)  # no read permission: no fsync, still usable
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
            raise
        try:
            now = os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode
        except OSError:
            raise swapped(path) from None
        if stat.S_ISLNK(now) or stat.S_ISDIR(now):  # a symlink, or one a moment ago
            raise swapped(path) from None
        raise invalid(f"{path}: a part of the path is not a directory") from None


def real_path_of(fd: int) -> str | None:
    """Where an open descriptor really is (None where /proc is unavailable)."""
    try:
        return os.readlink(_PROC_FD / str(fd))
    except OSError:
        return None


def verify_inside(fd: int, roots: Sequence[str], shown: Path) -> None:
    """Refuse unless the descriptor's real path lies inside one of the roots' real paths."""
    if not roots:
        return
    real = real_path_of(fd)
    if real is None:
        return  # no /proc: the no-follow walk is the guarantee
    for root in roots:
        base = os.path.realpath(root)
        if real == base or real.startswith(base.rstrip("/") + "/"):
            return
    raise path_refused(str(shown), "it is outside the session's directories")


def open_regular(path: Path, roots: Sequence[str]) -> tuple[int, os.stat_result]:
    """Open a regular file for reading without blocking and without following symlinks.

    A named pipe, socket or device is refused before anything is read from it.
    """
    with directory(path.parent) as parent:
        try:
            fd = os.open(path.name, READ_FLAGS, dir_fd=parent)
        except OSError as exc:
            try:
                mode = os.stat(path.name, dir_fd=parent, follow_symlinks=False).st_mode
            except OSError:
                raise exc from None
            if stat.S_ISLNK(mode):
                raise swapped(path) from None
            if not stat.S_ISREG(mode):  # e.g. a socket: ENXIO
                raise path_refused(str(path), f"it is {kind_of(mode)}; only regular files are read") from None
            raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise path_refused(str(path), f"it is {kind_of(info.st_mode)}; only regular files are read")
        verify_inside(fd, roots, path)
    except BaseException:
        os.close(fd)
        raise
    return fd, info
