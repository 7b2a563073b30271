"""Process helpers for tests: who descends from whom, who is still alive (from /proc)."""

from __future__ import annotations

import os
import time

from sidecar.acp import reaper


def descendants(pid: int) -> set[int]:
    """Live (not zombie) descendants of `pid`: the sidecar's own walk, which its reaper uses."""
    return set(reaper.descendants(pid))


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_gone(pids: set[int], timeout: float = 10.0) -> set[int]:
    """The pids still alive after waiting up to `timeout` seconds."""
    deadline = time.monotonic() + timeout
    left = {p for p in pids if alive(p)}
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = {p for p in left if alive(p)}
    return left


def marked_processes(marker: str, token: str) -> set[int]:
    """Live processes whose environment carries `marker=token` (a test harness tags what it starts)."""
    needle = f"{marker}={token}".encode()
    found: set[int] = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                environ = fh.read()
            with open(f"/proc/{entry}/stat") as fh:
                state = fh.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and needle in environ.split(b"\0"):
            found.add(int(entry))
    return found
