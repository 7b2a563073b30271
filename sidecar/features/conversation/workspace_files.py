"""The files of a workspace folder, for `@` completion: what `git` tracks or would track
(`.gitignore` respected) in a repository, else a walk that leaves out hidden and build
directories. Bounded in count and time, and cached for a few seconds per folder, so typing
`@src/` on a 100 000-file tree lists once and then filters in memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from dataclasses import dataclass

log = logging.getLogger(__name__)

MAX_FILES = 200_000
LIST_TIMEOUT = 5.0  # seconds for one listing (git, or the walk)
CACHE_SECONDS = 10.0
SKIPPED_DIRS = frozenset({"node_modules", "__pycache__", "target", "dist", "build", "venv"})


@dataclass
class _Listing:
    files: list[str]  # relative to the folder, "/"-separated
    at: float


class WorkspaceFiles:
    def __init__(self) -> None:
        self._cache: dict[str, _Listing] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    async def files(self, folder: str) -> list[str]:
        lock = self._locks.setdefault(folder, asyncio.Lock())
        async with lock:  # one listing per folder at a time: keystrokes share it
            cached = self._cache.get(folder)
            if cached is not None and time.monotonic() - cached.at < CACHE_SECONDS:
                return cached.files
            files = await _git_files(folder)
            if files is None:
                files = await asyncio.to_thread(_walk, folder, time.monotonic() + LIST_TIMEOUT)
            if len(self._cache) > 16:
                self._cache.clear()
            self._cache[folder] = _Listing(files, time.monotonic())
            return files


async def _git_files(folder: str) -> list[str] | None:
    """What git lists (tracked, and untracked but not ignored); None when not a repository."""
    if not await asyncio.to_thread(os.path.exists, os.path.join(folder, ".git")):
        return None
    try:
        proc = await asyncio.create_subprocess_exec(
            "git",
            "-C",
            folder,
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
    except OSError:
        return None  # no git here
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), LIST_TIMEOUT)
    except TimeoutError:
        log.warning("git ls-files in %s took over %g s; walking the folder instead", folder, LIST_TIMEOUT)
        return None
    finally:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
    if proc.returncode != 0:
        return None
    names = out.decode("utf-8", "replace").split("\0")
    return sorted({n for n in names[:MAX_FILES] if n})


def _walk(folder: str, deadline: float) -> list[str]:
    found: list[str] = []
    stack = [""]
    while stack and len(found) < MAX_FILES and time.monotonic() < deadline:
        rel = stack.pop()
        try:
            with os.scandir(os.path.join(folder, rel)) as entries:
                for entry in entries:
                    name = rel + entry.name
                    if entry.is_dir(follow_symlinks=False):
                        if not entry.name.startswith(".") and entry.name not in SKIPPED_DIRS:
                            stack.append(name + "/")
                    elif entry.is_file(follow_symlinks=False):
                        found.append(name)
        except OSError:
            continue
    return sorted(found)


def rank(files: list[str], query: str, limit: int) -> tuple[list[str], bool]:
    """The files matching `query` (case-insensitive, in order of the path), best first: the file
    name starting with it, then the path starting with it, then containing it. (matches, more?)"""
    q = query.lower()
    starts_name: list[str] = []
    starts_path: list[str] = []
    contains: list[str] = []
    for path in files:
        low = path.lower()
        if q not in low:
            continue
        if low.rsplit("/", 1)[-1].startswith(q):
            starts_name.append(path)
        elif low.startswith(q):
            starts_path.append(path)
        else:
            contains.append(path)
    ordered = starts_name + starts_path + contains
    return ordered[:limit], len(ordered) > limit
