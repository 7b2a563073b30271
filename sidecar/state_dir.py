"""The state directory is private to the user: 0700 directories, 0600 files, whatever the umask.

It holds whole prompts (transcripts, the demo agent's sessions) and titles.
What the sidecar creates there is private from the first byte (created with
that mode, not chmod-ed afterwards); what an older version or another tool
left too open is tightened at start, and the caller is told what changed.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600
_OPEN_FLAGS = os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY
_MAX_ENTRIES = 20_000  # a start-up walk stays short; beyond this, the top directory's 0700 protects the rest


def ensure_private_dir(path: Path) -> str | None:
    """Create `path` (and missing parents, as mkdir -p would) with the directory itself 0700.

    An existing directory is tightened; the note says so.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.mkdir(path, PRIVATE_DIR)
    except FileExistsError:
        if not path.is_dir():
            raise NotADirectoryError(20, "it is not a directory", str(path)) from None
        return tighten(path)
    os.chmod(path, PRIVATE_DIR)  # exactly: a umask like 0o277 must not lock the user out
    return None


def create_private_file(path: Path) -> None:
    """Create `path` empty with mode 0600 unless it exists (then only tighten it)."""
    os.close(open_private(path))


def open_private(path: Path, flags: int = os.O_RDWR) -> int:
    """A descriptor of `path`, created 0600 when missing (for lock files and the like)."""
    try:
        fd = os.open(path, flags | os.O_CREAT | os.O_EXCL | _OPEN_FLAGS, PRIVATE_FILE)
        created = True
    except FileExistsError:
        fd = os.open(path, flags | _OPEN_FLAGS)
        created = False
    try:
        if created:
            os.fchmod(fd, PRIVATE_FILE)  # exactly, whatever the umask removed
        else:
            _tighten_fd(fd)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _tighten_fd(fd: int) -> bool:
    """Drop group and other permissions; True when there were some."""
    mode = stat.S_IMODE(os.fstat(fd).st_mode)
    if not mode & 0o077:
        return False
    os.fchmod(fd, mode & ~0o077)
    return True


def tighten(path: Path) -> str | None:
    """Tighten one entry without following a symlink: a note when it was too open, None otherwise
    (also when it does not exist)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(info.st_mode) or not info.st_mode & 0o077:
        return None
    if not (stat.S_ISDIR(info.st_mode) or stat.S_ISREG(info.st_mode)):
        return None
    was = stat.S_IMODE(info.st_mode)
    flags = os.O_RDONLY | (os.O_DIRECTORY if stat.S_ISDIR(info.st_mode) else 0)
    fd = os.open(path, flags | _OPEN_FLAGS)
    try:
        if not _tighten_fd(fd):
            return None
    finally:
        os.close(fd)
    return f"{path} was readable by others (mode {was:04o}); made it private ({was & ~0o077:04o})"


def secure_state_dir(path: Path) -> list[str]:
    """Create the state dir private, or tighten it and everything in it; notes on what changed.

    Never raises: a state dir that cannot be made private is reported in the
    notes (the title store then says whether it can be used at all).
    """
    notes: list[str] = []
    try:
        note = ensure_private_dir(path)
    except OSError as exc:
        return [f"the state directory {path} cannot be made private: {exc.strerror or exc}"]
    if note is not None:
        notes.append(note)
    seen = 0
    for top, dirs, files in os.walk(path):
        for name in [*dirs, *files]:
            seen += 1
            if seen > _MAX_ENTRIES:
                notes.append(f"{path} holds over {_MAX_ENTRIES} entries; only the first were checked")
                return notes
            entry = Path(top) / name
            try:
                note = tighten(entry)
            except OSError as exc:
                note = f"{entry} cannot be made private: {exc.strerror or exc}"
            if note is not None:
                notes.append(note)
    return notes
