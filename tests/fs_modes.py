"""File mode helpers for tests: the umask a block (and the processes it starts) runs under, a mode."""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def umask(value: int) -> Iterator[None]:
    """Processes started in the block inherit this umask too."""
    old = os.umask(value)
    try:
        yield
    finally:
        os.umask(old)


def mode_of(path: Path) -> int:
    """The permission bits of `path` itself (a symlink is not followed)."""
    return stat.S_IMODE(path.lstat().st_mode)
