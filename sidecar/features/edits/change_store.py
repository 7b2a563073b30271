"""The agent's changes kept with their session: `STATE/changes/AGENT/SESSION.json`, private.

Saved a moment after they change (off the event loop) and at shutdown; read back when the engine
starts, each file's hunks checked against the file as it is now (the editor's buffer first, else
the disk): only those that still hold the agent's lines come back.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
from collections.abc import Callable
from pathlib import Path

from sidecar.features.edits.agent_changes import AgentChanges, Hunk, lines_of
from sidecar.kernel.files import read_text_if_exists
from sidecar.kernel.state_files import locked_file, private_dir, read_shared, safe_name

log = logging.getLogger(__name__)

SAVE_DELAY = 0.5  # seconds: a burst of keystrokes that moves the hunks is saved once
MAX_FILES = 2000  # session files read at start
MAX_FILE_BYTES = 32 << 20
MAX_SHOWN = 20  # read-only copies of a file before a hunk, for "Show the agent's change"
FORMAT = 1


class AgentChangeStore:
    """One private JSON file per (agent, session); blocking: call it off the loop."""

    def __init__(self, state_dir: Path) -> None:
        self.root = Path(os.path.abspath(state_dir)) / "changes"

    def path(self, agent_key: str, session_id: str) -> Path:
        return self.root / safe_name(agent_key) / (safe_name(session_id) + ".json")

    def save(self, agent_key: str, session_id: str, hunks: list[Hunk]) -> None:
        path = self.path(agent_key, session_id)
        if not hunks:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
            return
        private_dir(path.parent, self.root)
        data = {"format": FORMAT, "agent": agent_key, "sessionId": session_id}
        data["hunks"] = [h.to_json() for h in hunks]
        with locked_file(path, durable=False) as locked:
            locked.replace(json.dumps(data, ensure_ascii=False).encode("utf-8"))

    def write_shown(self, original: str, hunk_id: str, text: str) -> Path:
        """A read-only private copy of `original` as it was before one hunk, named after it (its
        extension kept, for the editor's highlighting); only the newest few are kept."""
        shown = self.root / "shown"
        private_dir(shown, self.root)
        name = Path(original).name
        stem, suffix = os.path.splitext(name)
        suffix = suffix if re.fullmatch(r"\.[A-Za-z0-9]{1,16}", suffix) else ""
        path = shown / f"{safe_name(stem)}.before-{safe_name(hunk_id)}{suffix}"
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o400)
        try:
            os.fchmod(fd, 0o400)
            os.write(fd, text.encode("utf-8"))
        finally:
            os.close(fd)
        copies = sorted(shown.iterdir(), key=lambda p: p.stat().st_mtime_ns)
        for old in copies[: max(len(copies) - MAX_SHOWN, 0)]:
            with contextlib.suppress(OSError):
                os.unlink(old)
        return path

    def load_all(self) -> list[tuple[str, list[Hunk]]]:
        """(agent key, hunks) of every session file; unreadable ones are skipped (and logged)."""
        found: list[tuple[str, list[Hunk]]] = []
        try:
            agents = sorted(p for p in self.root.iterdir() if p.is_dir() and not p.is_symlink())
        except FileNotFoundError:
            return found
        for directory in agents:
            for path in sorted(directory.glob("*.json"))[:MAX_FILES]:
                if len(found) >= MAX_FILES:
                    return found
                try:
                    if path.stat().st_size > MAX_FILE_BYTES:
                        continue
                    raw = read_shared(path)
                    data = json.loads(raw) if raw else None
                except (OSError, ValueError) as exc:
                    log.warning("agent changes: skipping %s: %r", path, exc)
                    continue
                if not isinstance(data, dict) or not isinstance(data.get("hunks"), list):
                    continue
                hunks = [h for h in map(Hunk.from_json, data["hunks"]) if h is not None]
                found.append((str(data.get("agent") or directory.name), hunks))
        return found


class ChangePersistence:
    """Keeps `AgentChanges` saved per session and reads it back at start."""

    def __init__(
        self,
        changes: AgentChanges,
        store: AgentChangeStore,
        agent_key: Callable[[str], str],
        buffer_text: Callable[[Path], str | None],
    ) -> None:
        self.changes = changes
        self.store = store
        self._agent_key = agent_key
        self._buffer_text = buffer_text
        self._keys: dict[str, str] = {}  # session -> the agent key its file was read under
        self._dirty: set[str] = set()
        self._timer: asyncio.TimerHandle | None = None
        self._saving: asyncio.Future[None] | None = None
        changes.listen_sessions(self._changed)

    def _changed(self, session_ids: set[str]) -> None:
        self._dirty |= session_ids
        if self._timer is None:
            with contextlib.suppress(RuntimeError):
                self._timer = asyncio.get_running_loop().call_later(SAVE_DELAY, self._start_save)

    def _start_save(self) -> None:
        self._timer = None
        if self._saving is None or self._saving.done():
            self._saving = asyncio.ensure_future(self.save())
        else:
            self._saving.add_done_callback(lambda _f: self._changed(set()))

    async def save(self) -> None:
        """Write every session whose hunks changed since the last save."""
        while self._dirty:
            dirty, self._dirty = self._dirty, set()
            batch = [
                (self._keys.get(sid) or self._agent_key(sid), sid, self.changes.of_session(sid))
                for sid in sorted(dirty)
            ]
            try:
                await asyncio.to_thread(self._write, batch)
            except Exception:
                log.exception("agent changes: saving failed")

    def _write(self, batch: list[tuple[str, str, list[Hunk]]]) -> None:
        for key, session_id, hunks in batch:
            try:
                self.store.save(key, session_id, hunks)
            except OSError as exc:
                log.warning("agent changes: cannot save session %s: %r", session_id, exc)

    async def flush(self) -> None:
        """Shutdown: what changed is saved now."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._saving is not None and not self._saving.done():
            await self._saving
        await self.save()

    async def restore(self) -> None:
        loaded = await asyncio.to_thread(self.store.load_all)
        hunks: list[Hunk] = []
        for key, found in loaded:
            for hunk in found:
                self._keys.setdefault(hunk.session_id, key)
            hunks.extend(found)
        paths = sorted({h.path for h in hunks})
        texts: dict[str, str | None] = {}
        for path in paths:
            text = self._buffer_text(Path(path))
            texts[path] = text if text is not None else await asyncio.to_thread(_disk_text, path)
        kept = [h for h in hunks if (t := texts[h.path]) is not None and h.holds_agent_text(lines_of(t))]
        self.changes.restore(kept)
        if len(kept) < len(hunks):  # their files say so from now on
            self._changed({h.session_id for h in hunks})


def _disk_text(path: str) -> str | None:
    try:
        return read_text_if_exists(Path(os.path.realpath(path)))
    except Exception:
        return None
