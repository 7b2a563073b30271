"""Private state files that several processes share: modes, locks, atomic replacement,
durability, and safe file names for untrusted ids. The conversation documents and the edits'
change store both keep their files this way."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path

from sidecar.state_dir import refuse_foreign

__all__ = [
    "MAX_NAME",
    "Locked",
    "locked_file",
    "private_dir",
    "read_all",
    "read_shared",
    "remove_stale_temp",
    "safe_name",
    "write_all",
]

DIR_MODE = 0o700
FILE_MODE = 0o600
# O_NONBLOCK: a FIFO (or a device) put in a document's place must never make us wait; the
# fstat that follows refuses anything but a regular file.
_OPEN_FLAGS = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK


def private_dir(path: Path, root: Path) -> None:
    """Create `path` and its parents up to `root`'s parent as 0700 directories (any umask);
    fix the mode of those that exist."""
    chain = []
    current = path
    while True:
        chain.append(current)
        if current == root or current.parent == current:
            break
        current = current.parent
    for directory in reversed(chain):
        with contextlib.suppress(FileExistsError):
            os.mkdir(directory, DIR_MODE)
        info = os.lstat(directory)
        if not stat.S_ISDIR(info.st_mode):
            raise NotADirectoryError(errno.ENOTDIR, "not a directory", str(directory))
        refuse_foreign(directory, info)  # another user's: never tightened, never used
        if stat.S_IMODE(info.st_mode) != DIR_MODE:
            os.chmod(directory, DIR_MODE)


def _open_private(path: Path) -> int:
    fd = os.open(path, _OPEN_FLAGS, FILE_MODE)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        if stat.S_IMODE(info.st_mode) != FILE_MODE:
            os.fchmod(fd, FILE_MODE)
    except BaseException:
        os.close(fd)
        raise
    return fd


def temp_path(path: Path) -> Path:
    """Where a whole rewrite of `path` is prepared: one fixed name, so a leftover of a killed
    writer is found without listing the directory (it holds every session's documents)."""
    return path.with_name(f".{path.name}.tmp")


def remove_stale_temp(path: Path) -> None:
    """Remove a killed writer's temp file of `path`. Call it under the document's lock: no
    rewrite of it is under way then, so a temp file there is such a leftover."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(temp_path(path))


class Locked:
    """A document open under an exclusive lock; see :func:`locked_file`."""

    def __init__(self, path: Path, fd: int, durable: bool) -> None:
        self.path = path
        self.fd = fd
        self.durable = durable
        self._held = [fd]

    def replace(self, data: bytes) -> None:
        """Replace the file atomically by a new one (temp file + rename) and keep holding the lock,
        now on the new file too: whoever opens the path next waits for us."""
        temp = temp_path(self.path)
        remove_stale_temp(self.path)
        fd = os.open(temp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, FILE_MODE)
        try:
            os.fchmod(fd, FILE_MODE)
            fcntl.flock(fd, fcntl.LOCK_EX)  # nobody else knows the file yet: never blocks
            write_all(fd, data, 0)
            if self.durable:
                os.fsync(fd)
            os.replace(temp, self.path)
        except BaseException:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise
        self._held.append(fd)
        self.fd = fd
        if self.durable:
            fsync_dir(self.path.parent)

    def close(self) -> None:
        for fd in self._held:
            os.close(fd)  # releases its lock
        self._held.clear()


@contextlib.contextmanager
def locked_file(path: Path, durable: bool = True) -> Iterator[Locked]:
    """The file (created empty and private if missing), open read-write under an exclusive lock.

    The lock is on the file itself; a writer that replaced the file (atomic rewrite) while we
    waited leaves us holding a lock on the old inode, so we check and open again."""
    while True:
        fd = _open_private(path)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                current = os.stat(path, follow_symlinks=False)
            except FileNotFoundError:
                current = None
            mine = os.fstat(fd)
            if current is not None and (current.st_ino, current.st_dev) == (mine.st_ino, mine.st_dev):
                break
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
    locked = Locked(path, fd, durable)
    try:
        yield locked
    finally:
        locked.close()


def read_shared(path: Path) -> bytes | None:
    """The file's bytes under a shared lock (None: no file). An append rewrites the end of the
    file in place under the exclusive lock: a plain read could see half of it."""
    while True:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
        except FileNotFoundError:
            return None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise OSError(errno.EINVAL, "not a regular file", str(path))
            fcntl.flock(fd, fcntl.LOCK_SH)
            try:
                current = os.stat(path, follow_symlinks=False)
            except FileNotFoundError:
                return None
            mine = os.fstat(fd)
            if (current.st_ino, current.st_dev) == (mine.st_ino, mine.st_dev):
                return read_all(fd)
            # Replaced (an atomic rewrite) while we waited: read the new file.
        finally:
            os.close(fd)


def read_all(fd: int, start: int = 0) -> bytes:
    size = os.fstat(fd).st_size
    chunks = []
    position = start
    while position < size:
        chunk = os.pread(fd, min(size - position, 1 << 20), position)
        if not chunk:
            break
        chunks.append(chunk)
        position += len(chunk)
    return b"".join(chunks)


def write_all(fd: int, data: bytes, position: int) -> None:
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, position)
        view = view[written:]
        position += written


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# ---------------------------------------------------------------------- names
MAX_NAME = 80  # characters before the hash; file names stay far below the usual 255-byte limit
_HASH_CHARS = 12
# The identity line names ids exactly (percent-encoded): long ids make it long.
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
# A name that already looks like "something-<hash>" gets a hash too: the mapping stays one to one.
_LOOKS_HASHED = re.compile(rf"-[0-9a-f]{{{_HASH_CHARS}}}\Z")


def safe_name(raw: str) -> str:
    """A file name (without suffix) for an untrusted id; see the module doc."""
    name = _UNSAFE.sub("_", raw)
    if name.startswith("."):
        name = "_" + name[1:]
    changed = name != raw or not name or _LOOKS_HASHED.search(name) is not None
    if len(name) > MAX_NAME:
        name = name[:MAX_NAME]
        changed = True
    if changed:
        digest = hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_CHARS]
        name = f"{name}-{digest}" if name else digest
    return name
