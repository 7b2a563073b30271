"""Sessions on disk: one JSON file per session under ``<state>/sessions/``.

Each file is written atomically (temp file, fsync, ``os.replace``), so a
killed agent leaves either the old or the new version, never half a file.
The history holds every ``session/update`` sent for the session, coalesced so
that a replay is short and shows final states: consecutive text chunks of one
message (or of one compaction summary) become one chunk,
``tool_call_update``s merge into their ``tool_call``, and a turn's plan is
kept once with its last statuses.

Everything here is private to the user whatever the umask (the files hold
whole prompts): directories the store creates are 0700, the sessions
directory is made 0700 if it already exists, files are written 0600.
"""

from __future__ import annotations

import contextlib
import copy
import datetime as dt
import hashlib
import io
import json
import os
import re
import stat
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

JsonObject = dict[str, Any]

HISTORY_LIMIT = 2000
FORMAT_VERSION = 1
DEFAULT_CONFIG = {"model": "demo-fast", "verbosity": "normal"}
DEFAULT_MODE = "ask"
_SAFE_ID = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9_.-]{0,127}\Z")
# Chunk kinds that coalesce, and the field naming what they belong to.
_CHUNK_KINDS = {
    "user_message_chunk": "messageId",
    "agent_message_chunk": "messageId",
    "agent_thought_chunk": "messageId",
    "compaction_summary_chunk": "compactionId",
}
PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600

_last_stamp: dt.datetime | None = None


def now_iso() -> str:
    """UTC now, ISO 8601 with milliseconds; strictly increasing in one process
    so that "most recently updated" is never a tie between our own writes."""
    global _last_stamp
    stamp = dt.datetime.now(dt.UTC)
    stamp = stamp.replace(microsecond=stamp.microsecond // 1000 * 1000)
    if _last_stamp is not None and stamp <= _last_stamp:
        stamp = _last_stamp + dt.timedelta(milliseconds=1)
    _last_stamp = stamp
    return format_time(stamp)


def format_time(stamp: dt.datetime) -> str:
    return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_time(value: Any) -> float:
    """Sort key for an ``updatedAt``; unparsable values sort as oldest."""
    if isinstance(value, str):
        try:
            stamp = dt.datetime.fromisoformat(value)
        except ValueError:
            return 0.0
        if stamp.tzinfo is None:
            stamp = stamp.replace(tzinfo=dt.UTC)
        return stamp.timestamp()
    return 0.0


def valid_session_id(session_id: str) -> bool:
    # Ids become file names: refuse anything that could escape the directory.
    return bool(_SAFE_ID.match(session_id))


def merge_meta(old: Any, patch: Any) -> Any:
    """Recursive merge as the session-info RFD describes: null deletes a key."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result: JsonObject = dict(old) if isinstance(old, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = merge_meta(result[key], value)
        else:
            result[key] = copy.deepcopy(value)
    return result


class History:
    """A session's stored updates, bounded and coalesced (see module doc)."""

    def __init__(self, updates: list[JsonObject] | None = None, limit: int = HISTORY_LIMIT):
        self._items: deque[JsonObject] = deque(updates or [], maxlen=limit)
        self._open_chunk: JsonObject | None = None
        self._open_key: tuple[str, str] | None = None
        # StringIO: appending a million small chunks must stay linear.
        self._open_text: io.StringIO | None = None
        self._tools: dict[str, JsonObject] = {}
        self._plan: JsonObject | None = None

    def begin_turn(self) -> None:
        self._flush()
        self._tools.clear()
        self._plan = None

    def append(self, update: JsonObject) -> None:
        kind = update.get("sessionUpdate")
        key = self._chunk_key(update)
        if key is not None:
            if self._open_text is not None and self._open_key == key:
                self._open_text.write(update["content"]["text"])
                return
            self._flush()
            stored = copy.deepcopy(update)
            self._items.append(stored)
            self._open_chunk = stored
            self._open_key = key
            self._open_text = io.StringIO()
            self._open_text.write(update["content"]["text"])
            return
        self._flush()
        if kind == "tool_call_update":
            target = self._tools.get(str(update.get("toolCallId")))
            if target is not None:
                for field_name, value in update.items():
                    if field_name != "sessionUpdate":
                        target[field_name] = copy.deepcopy(value)
                return
        if kind == "plan" and self._plan is not None:
            self._plan["entries"] = copy.deepcopy(update.get("entries"))
            return
        stored = copy.deepcopy(update)
        self._items.append(stored)
        if kind == "tool_call":
            self._tools[str(update.get("toolCallId"))] = stored
        elif kind == "plan":
            self._plan = stored

    def append_text(self, kind: str, message_id: str, text: str) -> None:
        """Append one text chunk without building its update (chunk floods)."""
        if self._open_text is not None and self._open_key == (kind, message_id):
            self._open_text.write(text)
            return
        self.append(
            {
                "sessionUpdate": kind,
                "content": {"type": "text", "text": text},
                "messageId": message_id,
            }
        )

    def drop_last(self) -> None:
        """Forget the last update appended (one whose effect could not be saved)."""
        self._flush()
        if self._items:
            dropped = self._items.pop()
            if dropped is self._plan:
                self._plan = None
            self._tools = {k: v for k, v in self._tools.items() if v is not dropped}

    @staticmethod
    def _chunk_key(update: JsonObject) -> tuple[str, str] | None:
        """(kind, id) for a plain text chunk that may join its neighbours, else None."""
        kind = update.get("sessionUpdate")
        id_field = _CHUNK_KINDS.get(kind) if isinstance(kind, str) else None
        if id_field is None:
            return None
        owner = update.get(id_field)
        content = update.get("content")
        if (
            isinstance(owner, str)
            and set(update) <= {"sessionUpdate", "content", id_field}
            and isinstance(content, dict)
            and set(content) == {"type", "text"}
            and content.get("type") == "text"
            and isinstance(content.get("text"), str)
        ):
            return (str(kind), owner)
        return None

    def _flush(self) -> None:
        if self._open_chunk is not None and self._open_text is not None:
            self._open_chunk["content"]["text"] = self._open_text.getvalue()
        self._open_chunk = None
        self._open_key = None
        self._open_text = None

    def snapshot(self) -> list[JsonObject]:
        if self._open_chunk is not None and self._open_text is not None:
            self._open_chunk["content"]["text"] = self._open_text.getvalue()
        return list(self._items)

    def __len__(self) -> int:
        return len(self._items)


@dataclass
class SessionRecord:
    session_id: str
    cwd: str
    additional_directories: list[str] = field(default_factory=list)
    title: str | None = None
    updated_at: str = ""
    mode_id: str = DEFAULT_MODE
    config: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_CONFIG))
    meta: JsonObject | None = None
    prompt_count: int = 0
    # Prompt count at the last completed compaction (usage counts from there).
    compacted_prompts: int = 0
    # Cumulative cost of the session's turns, in USD.
    cost: float = 0.0
    history: History = field(default_factory=History)

    def to_json(self) -> JsonObject:
        return {
            "version": FORMAT_VERSION,
            "sessionId": self.session_id,
            "cwd": self.cwd,
            "additionalDirectories": self.additional_directories,
            "title": self.title,
            "updatedAt": self.updated_at,
            "modeId": self.mode_id,
            "config": self.config,
            "meta": self.meta,
            "promptCount": self.prompt_count,
            "compactedPrompts": self.compacted_prompts,
            "cost": self.cost,
            "history": self.history.snapshot(),
        }

    @classmethod
    def from_json(cls, data: JsonObject) -> SessionRecord:
        config = dict(DEFAULT_CONFIG)
        if isinstance(data.get("config"), dict):
            config.update({k: v for k, v in data["config"].items() if isinstance(v, str)})
        history = data.get("history")
        title = data.get("title")
        meta = data.get("meta")
        dirs = data.get("additionalDirectories")
        cost = data.get("cost")
        return cls(
            session_id=str(data["sessionId"]),
            cwd=str(data["cwd"]),
            additional_directories=[d for d in dirs if isinstance(d, str)] if isinstance(dirs, list) else [],
            title=title if isinstance(title, str) else None,
            updated_at=str(data.get("updatedAt") or ""),
            mode_id=str(data.get("modeId") or DEFAULT_MODE),
            config=config,
            meta=meta if isinstance(meta, dict) else None,
            prompt_count=int(data.get("promptCount") or 0),
            compacted_prompts=int(data.get("compactedPrompts") or 0),
            cost=float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else 0.0,
            history=History([u for u in history if isinstance(u, dict)])
            if isinstance(history, list)
            else History(),
        )

    def info(self) -> JsonObject:
        """This session as a ``SessionInfo`` of ``session/list``."""
        entry: JsonObject = {"sessionId": self.session_id, "cwd": self.cwd}
        if self.additional_directories:
            entry["additionalDirectories"] = list(self.additional_directories)
        if self.title is not None:
            entry["title"] = self.title
        if self.updated_at:
            entry["updatedAt"] = self.updated_at
        if self.meta:
            entry["_meta"] = copy.deepcopy(self.meta)
        return entry


def make_private_dirs(path: Path, *, tighten: bool) -> bool:
    """``mkdir -p`` whose new directories are 0700 whatever the umask. With ``tighten``, ``path``
    ends 0700 even when it existed (best effort). Directories that existed are otherwise left
    alone: a state dir given by the user may be shared, like /tmp. True when ``tighten`` had to
    change the mode of an existing ``path``."""
    missing: list[Path] = []
    probe = path
    while not probe.is_dir():
        missing.append(probe)
        if probe.parent == probe:
            break
        probe = probe.parent
    for directory in reversed(missing):
        with contextlib.suppress(FileExistsError):  # another process made it meanwhile
            os.mkdir(directory, PRIVATE_DIR)
        os.chmod(directory, PRIVATE_DIR)
    if missing or not tighten:
        return False
    try:
        if stat.S_IMODE(path.stat().st_mode) == PRIVATE_DIR:
            return False
        os.chmod(path, PRIVATE_DIR)
    except OSError:
        return False
    return True


class Store:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.sessions_dir = root / "sessions"
        # Listing parses every file; skip the ones unchanged since last time.
        self._info_cache: dict[str, tuple[tuple[int, int], SessionRecord]] = {}
        self._dirs_ready = False

    def _path(self, session_id: str) -> Path:
        return self.sessions_dir / f"{session_id}.json"

    def delete(self, session_id: str) -> bool:
        """Remove a stored session; False when there was none."""
        if not valid_session_id(session_id):
            return False
        self._info_cache.pop(session_id, None)
        try:
            self._path(session_id).unlink()
        except FileNotFoundError:
            return False
        return True

    def exists(self, session_id: str) -> bool:
        return valid_session_id(session_id) and self._path(session_id).is_file()

    def load(self, session_id: str) -> SessionRecord | None:
        if not valid_session_id(session_id):
            return None
        try:
            data = json.loads(self._path(session_id).read_text(encoding="utf-8"))
            return SessionRecord.from_json(data)
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _ensure_dirs(self) -> None:
        """The state and sessions directories, private: created 0700; the sessions directory is
        tightened if it exists, and the session files an older version left readable with it."""
        if self._dirs_ready:
            return
        make_private_dirs(self.root, tighten=False)
        if make_private_dirs(self.sessions_dir, tighten=True):
            with contextlib.suppress(OSError):
                for entry in os.scandir(self.sessions_dir):
                    if entry.is_file(follow_symlinks=False):
                        os.chmod(entry.path, PRIVATE_FILE)
        self._dirs_ready = True

    def save(self, record: SessionRecord, *, durable: bool = True) -> None:
        self._ensure_dirs()
        target = self._path(record.session_id)
        tmp = target.with_name(f".{record.session_id}.{os.getpid()}.tmp")
        data = json.dumps(record.to_json(), ensure_ascii=False, separators=(",", ":"))
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, PRIVATE_FILE)
        with open(fd, "w", encoding="utf-8", errors="surrogatepass") as handle:
            os.fchmod(fd, PRIVATE_FILE)  # the umask may have taken bits away, or the file was older
            handle.write(data)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.replace(tmp, target)
        if not durable:
            return
        with contextlib.suppress(OSError):
            # Make the rename itself durable; not possible on every platform.
            dir_fd = os.open(self.sessions_dir, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)

    def list_records(self) -> list[SessionRecord]:
        """Every saved session, without its history (for ``session/list``)."""
        records: list[SessionRecord] = []
        try:
            entries = list(os.scandir(self.sessions_dir))
        except OSError:
            return records
        seen: set[str] = set()
        for entry in entries:
            name = entry.name
            if not name.endswith(".json") or name.startswith("."):
                continue
            session_id = name[: -len(".json")]
            try:
                info = entry.stat()
            except OSError:
                continue
            key = (info.st_mtime_ns, info.st_size)
            cached = self._info_cache.get(session_id)
            if cached is not None and cached[0] == key:
                record: SessionRecord | None = cached[1]
            else:
                record = self.load(session_id)
                if record is not None:
                    record.history = History()  # only the metadata is cached
                    self._info_cache[session_id] = (key, record)
            if record is not None:
                seen.add(session_id)
                records.append(record)
        for stale in set(self._info_cache) - seen:
            del self._info_cache[stale]
        return records


SEED_EPOCH = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)


def seed_id(cwd: str, index: int) -> str:
    digest = hashlib.sha256(cwd.encode()).hexdigest()[:6]
    return f"demo-seed-{digest}-{index:05d}"


def seed(store: Store, cwd: str, count: int, titled: int) -> list[str]:
    """Write ``count`` synthetic saved sessions for ``cwd``; the first ``titled``
    have a title. Ids and ``updatedAt`` are deterministic: session i was
    updated i minutes after 2025-01-01T00:00Z."""
    ids: list[str] = []
    for index in range(count):
        session_id = seed_id(cwd, index)
        updated = format_time(SEED_EPOCH + dt.timedelta(minutes=index))
        title = f"Seeded session {index}" if index < titled else None
        history = History()
        history.append(
            {
                "sessionUpdate": "user_message_chunk",
                "content": {"type": "text", "text": f"Seeded prompt {index}"},
                "messageId": f"seed-user-{index}",
            }
        )
        history.append(
            {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": f"Seeded answer {index}"},
                "messageId": f"seed-agent-{index}",
            }
        )
        if title is not None:
            history.append({"sessionUpdate": "session_info_update", "title": title, "updatedAt": updated})
        store.save(
            SessionRecord(
                session_id=session_id,
                cwd=cwd,
                title=title,
                updated_at=updated,
                prompt_count=1,
                history=history,
            ),
            durable=False,  # test fixtures: speed over crash safety
        )
        ids.append(session_id)
    return ids
