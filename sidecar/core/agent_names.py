"""Remembers which agent identity a command line had, so cached titles show while it is down."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from ..state_dir import ensure_private_dir
from .errors import SidecarError
from .files import write_private

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
