"""The state directory is private to the user: 0700 directories, 0600 files, whatever the umask.

It holds whole prompts (the conversation documents, the demo agent's sessions) and titles.
What the sidecar creates there is private from the first byte (created with
that mode, not chmod-ed afterwards); what an older version or another tool
left too open is tightened at start, and the caller is told what changed.
Missing parents are made 0700 too (a umask of 000 must not leave a world-writable
~/.local/state in which anyone could swap the state dir). A state dir that
belongs to another user is refused, never tightened: it is theirs, and whatever
it holds (or will hold) is theirs to read; the sidecar then keeps nothing on disk.
"""

from __future__ import annotations

import errno
import os
import pwd
import stat
from pathlib import Path

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600
_OPEN_FLAGS = os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY
_MAX_ENTRIES = 20_000  # a start-up walk stays short; beyond this, the top directory's 0700 protects the rest


class ForeignOwner(PermissionError):
    """A directory the sidecar would keep its state in belongs to another user."""

    def __init__(self, path: Path, owner: int) -> None:
        super().__init__(
            errno.EPERM,
            f"{path} belongs to {_user(owner)}, not to {_user(os.geteuid())}; it is not used",
            str(path),
        )
        self.owner = owner


def _user(uid: int) -> str:
    try:
        return f"user {pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def refuse_foreign(path: Path, info: os.stat_result) -> None:
    """Raise `ForeignOwner` when `info` (of `path`) is not the effective user's."""
    if info.st_uid != os.geteuid():
        raise ForeignOwner(path, info.st_uid)


def make_private_dir(path: Path) -> bool:
    """mkdir `path` 0700 exactly (a umask like 0o277 must not lock the user out); False: it exists."""
    try:
        os.mkdir(path, PRIVATE_DIR)
    except FileExistsError:
        return False
    os.chmod(path, PRIVATE_DIR)
    return True


def _make_parents(path: Path) -> None:
    """mkdir -p, each directory it creates 0700 whatever the umask; existing ones are left as
    they are (a home directory is not ours to change)."""
    missing = []
    current = path
    while not os.path.isdir(current) and current.parent != current:
        missing.append(current)
        current = current.parent
    for directory in reversed(missing):
        make_private_dir(directory)


def ensure_private_dir(path: Path) -> str | None:
    """Create `path` (and missing parents, as mkdir -p would, those 0700 too) as a 0700 directory.

    An existing directory is tightened; the note says so. One that belongs to another user
    raises `ForeignOwner` (never tightened).
    """
    _make_parents(path.parent)
    if make_private_dir(path):
        return None
    try:
        info = os.stat(path)  # a symlinked state dir (under a symlinked home) is followed
    except FileNotFoundError:
        raise NotADirectoryError(errno.ENOTDIR, "it is a dangling symlink", str(path)) from None
    if not stat.S_ISDIR(info.st_mode):
        raise NotADirectoryError(errno.ENOTDIR, "it is not a directory", str(path))
    refuse_foreign(path, info)
    return tighten(path)


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
    if info.st_uid != os.geteuid():
        return f"{path} belongs to {_user(info.st_uid)} and is readable by others; left as it is"
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
    except ForeignOwner as exc:
        return [f"the state directory {exc.strerror}: nothing is kept after the sidecar exits"]
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
