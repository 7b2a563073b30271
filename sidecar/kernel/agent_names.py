"""The agent's identity, and which one a command line had, so cached titles show while it is down."""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

from sidecar.kernel.errors import SidecarError
from sidecar.kernel.files import write_private
from sidecar.state_dir import ensure_private_dir

log = logging.getLogger(__name__)


class AgentNames:
    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / "agents.json"

    def _load(self) -> dict[str, str]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return (
            {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)}
            if isinstance(data, dict)
            else {}
        )

    def lookup(self, command: list[str]) -> str | None:
        return self._load().get(json.dumps(command))

    def remember(self, command: list[str], name: str) -> None:
        names = self._load()
        key = json.dumps(command)
        if names.get(key) == name:
            return
        names[key] = name
        try:
            ensure_private_dir(self.path.parent)  # another user's state dir is refused
            write_private(self.path, json.dumps(names, indent=1))
        except (OSError, SidecarError) as exc:
            log.warning("cannot remember the agent's name in %s: %s", self.path, exc)


class AgentIdentity:
    """Who the agent is, as titles and conversations are stored: its name once it initialized, else
    the name it had last time with this command line (so cached titles show while it is down),
    else the command's name."""

    def __init__(self, state_dir: Path, command: list[str], configured: str | None = None) -> None:
        self._names = AgentNames(state_dir)
        self._command = command
        self._program = Path(command[0]).name  # the key until the agent names itself (read per title)
        # A configured agent's name (`initializationOptions.agents`): remembered with its command,
        # so two entries that run one program with different settings keep their own names.
        self._remember_as = command if configured is None else [f"agents.{configured}", *command]
        self.name: str | None = None  # what the running agent calls itself (initialize)
        self._known: str | None = None

    @property
    def key(self) -> str:
        if self.name is not None:
            return bounded_key(self.name)
        if self._known is None:
            self._known = self._names.lookup(self._remember_as) or self._names.lookup(self._command) or ""
        return self._known or self._program

    def remembered(self) -> str | None:
        """The name this command line's agent had last time (agents.json), if any."""
        self.key  # noqa: B018 (looks it up once)
        return self._known or None

    def remember(self) -> None:
        """Keep the running agent's name for this command line (blocking: it writes a file)."""
        self._names.remember(self._remember_as, self.key)


MAX_KEY_CHARS = 200


def bounded_key(name: str) -> str:
    """An agent's name as the key its titles and conversations are stored under: as it is, or for a
    name over MAX_KEY_CHARS (a hostile agent's), its start and a hash of the whole (still one key
    per name, and a conversation document's header that stays small)."""
    if len(name) <= MAX_KEY_CHARS:
        return name
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{name[: MAX_KEY_CHARS - 17]}-{digest}"
