"""The private index of the items a conversation document holds (``.SESSION.keys`` next to it), so
that a replayed history is merged with the document instead of added twice.

One key per line, appended once the item's text is in the document. The index is only ever
opened as a regular file, without waiting (``O_NONBLOCK``, no symlinks, checked with ``fstat``):
a FIFO, socket, device or symbolic link found in its place (another local process put it there)
is moved aside and a new index started with what this process knows. A write the disk refuses
(full, read-only, a directory in the way) loses nothing and repeats nothing: the keys wait in
memory and the next write adds exactly those, once.

Not thread-safe per path: the store calls it under the document's lock.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import re
import stat
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["MAX_KEYS_BYTES", "ItemIndex"]

log = logging.getLogger(__name__)

MAX_KEYS_BYTES = 8 * 1024 * 1024
_KEY = re.compile(rb"\A[a-zA-Z]{1,3}:[0-9a-f]{8,64}\Z")
_OPEN = os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass
class _Entry:
    """What this process knows of one index."""

    counts: Counter[str] = field(default_factory=Counter)  # the file's keys and the pending ones
    size: int = 0  # bytes of the file read so far (complete lines)
    ino: int | None = None  # the file they were read from (None: no file read)
    pending: list[str] = field(default_factory=list)  # in the document, not in the file yet
    failing: bool = False  # the last write was refused (said once, and once when it works again)


class ItemIndex:
    """The indexes of a store's documents (see the module doc)."""

    def __init__(self, durable: bool = True) -> None:
        self.durable = durable
        self._entries: dict[Path, _Entry] = {}
        self._notices: list[str] = []

    def take_notices(self) -> list[str]:
        """What went wrong (or right again) since the last call, for the user's log."""
        notices, self._notices = self._notices, []
        return notices

    def counts(self, path: Path) -> Counter[str]:
        """The keys the document holds (or held before a trim), with their counts."""
        entry = self._entries.setdefault(path, _Entry())
        try:
            self._refresh(path, entry)
        except OSError as exc:
            self._refused(path, entry, f"cannot read it: {_reason(exc)}")
        return entry.counts

    def forget(self, path: Path) -> None:
        """The index file was removed (its document deleted)."""
        self._entries.pop(path, None)

    def add(self, path: Path, keys: list[str]) -> None:
        """Record `keys` (their items are in the document now); never raises for the disk."""
        entry = self._entries.setdefault(path, _Entry())
        self.counts(path)  # the file's keys first: a grown file is read before we append
        entry.pending.extend(keys)
        entry.counts.update(keys)
        if not entry.pending:
            return
        try:
            self._write_pending(path, entry)
        except OSError as exc:
            self._refused(path, entry, f"cannot save it: {_reason(exc)}; kept in memory, saved once it works")
            return
        if entry.failing:
            entry.failing = False
            self._notice(f"the document's index {path} is saved again")

    # ------------------------------------------------------------------ machinery

    def _refresh(self, path: Path, entry: _Entry) -> None:
        """Read what the file gained since we last read it (all of it when it is another file)."""
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            self._forget_file(entry)
            return
        if _special(info.st_mode):
            self._move_aside(path, entry, info.st_mode)
            return
        if entry.ino == info.st_ino and entry.size == info.st_size:
            return
        fd = os.open(path, os.O_RDONLY | _OPEN)
        try:
            opened = os.fstat(fd)
            if not stat.S_ISREG(opened.st_mode):
                raise OSError(errno.EINVAL, "not a regular file", str(path))
            grown = entry.ino == opened.st_ino and entry.size <= opened.st_size
            if not grown:
                self._forget_file(entry)
            start = entry.size
            data = os.pread(fd, max(opened.st_size - start, 0), start)
        finally:
            os.close(fd)
        complete = data[: data.rfind(b"\n") + 1]  # a torn last line is not a key yet
        for line in complete.split(b"\n"):
            if _KEY.match(line):
                entry.counts[line.decode()] += 1
        entry.size = start + len(complete)
        entry.ino = opened.st_ino

    def _forget_file(self, entry: _Entry) -> None:
        """The file is gone or is another one: what we know is only the pending keys."""
        entry.counts = Counter(entry.pending)
        entry.size = 0
        entry.ino = None

    def _write_pending(self, path: Path, entry: _Entry) -> None:
        if entry.size > MAX_KEYS_BYTES:
            entry.pending.clear()  # a huge history: later replays may repeat its oldest items, nothing worse
            return
        fd = self._open_for_append(path, entry)
        try:
            info = os.fstat(fd)
            if stat.S_IMODE(info.st_mode) != 0o600:
                os.fchmod(fd, 0o600)
            data = ("\n".join(entry.pending) + "\n").encode() if entry.pending else b""
            before = info.st_size
            try:
                written = 0
                while written < len(data):
                    written += os.write(fd, data[written:])
                if self.durable:
                    os.fsync(fd)
            except OSError:
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, before)  # no torn line: the retry writes them all again
                raise
        finally:
            os.close(fd)
        if entry.ino == info.st_ino and entry.size == before:
            entry.size += len(data)
        elif entry.ino is None and entry.size == 0 and before == 0:
            # A new (or empty) file: it holds what we wrote, which our counts hold already; it is
            # not read back (a long replay's first flush writes tens of thousands of keys).
            entry.ino, entry.size = info.st_ino, len(data)
        else:
            entry.ino = None  # not the file we read (or not read yet): read it whole next time
        entry.pending.clear()

    def _open_for_append(self, path: Path, entry: _Entry) -> int:
        for _ in range(3):
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | _OPEN, 0o600)
            except OSError:
                found = _lstat_mode(path)
                if found is None or not _special(found):
                    raise
                self._move_aside(path, entry, found)
                continue
            mode = os.fstat(fd).st_mode
            if stat.S_ISREG(mode):
                return fd
            os.close(fd)
            self._move_aside(path, entry, mode)
        raise OSError(errno.EINVAL, "not a regular file (replaced again and again)", str(path))

    def _move_aside(self, path: Path, entry: _Entry, mode: int) -> None:
        """Move a special file out of the index's place; the next write starts a new index with
        every key this process knows."""
        aside = path.with_name(f"{path.name}.moved-{time.time_ns()}")
        try:
            os.rename(path, aside)
        except FileNotFoundError:
            pass
        except OSError as exc:
            why = f"{_kind(mode)} is in its place and cannot be moved aside: {exc.strerror}"
            raise OSError(exc.errno, why, str(path)) from None
        else:
            self._notice(
                f"the document's index {path} was not a regular file but {_kind(mode)}: "
                f"moved it aside to {aside.name} and started a new one"
            )
        known = list(entry.counts.elements())
        entry.counts = Counter(known)
        entry.pending = known
        entry.size = 0
        entry.ino = None

    def _refused(self, path: Path, entry: _Entry, what: str) -> None:
        if not entry.failing:
            entry.failing = True
            self._notice(f"the document's index {path}: {what}")

    def _notice(self, message: str) -> None:
        log.warning("%s", message)
        self._notices.append(message)


def _special(mode: int) -> bool:
    """Never opened: it could block (a FIFO), or not be ours to write (a link, a device)."""
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _lstat_mode(path: Path) -> int | None:
    try:
        return os.lstat(path).st_mode
    except OSError:
        return None


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISDIR(mode):
        return "a directory"
    return "not a regular file"


def _reason(exc: OSError) -> str:
    return exc.strerror or repr(exc)
