"""A hostile process for tests: swaps a workspace path for a symlink to outside, as fast as it can.

    python tests/swapper.py PATH LINK_TARGET [PAUSE_MICROSECONDS]

PATH (a file or a directory) and a symlink to LINK_TARGET trade places with
one atomic renameat2(RENAME_EXCHANGE), over and over, until the process is
killed: at every instant PATH is either the real thing or a link out of the
workspace, never missing. With a pause, each state lasts a random 0..PAUSE
microseconds, so that more checks pass and the swap lands between check and
use. Prints "swapping" once it has started. Tests use it through `swapping()`.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def exchange(libc: ctypes.CDLL, a: bytes, b: bytes) -> None:
    if libc.renameat2(_AT_FDCWD, a, _AT_FDCWD, b, _RENAME_EXCHANGE) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


@contextlib.contextmanager
def swapping(path: Path, target: Path, pause_us: int = 0) -> Iterator[None]:
    """A swapper process trading `path` and a symlink to `target` while the block runs."""
    command = [sys.executable, __file__, str(path), str(target), str(pause_us)]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == b"swapping\n"
        yield
    finally:
        proc.kill()
        proc.wait()


def main() -> None:
    path, target = sys.argv[1], sys.argv[2]
    pause = float(sys.argv[3]) / 1e6 if len(sys.argv) > 3 else 0.0
    decoy = os.path.join(os.path.dirname(path), f".swap-{os.path.basename(path)}")
    os.symlink(target, decoy)
    libc = ctypes.CDLL(None, use_errno=True)
    a, b = os.fsencode(path), os.fsencode(decoy)
    exchange(libc, a, b)
    exchange(libc, a, b)
    print("swapping", flush=True)
    while True:
        exchange(libc, a, b)
        if pause:
            time.sleep(random.uniform(0, pause))


if __name__ == "__main__":
    main()
