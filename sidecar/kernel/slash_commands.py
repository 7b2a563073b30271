"""The agent's `/` commands (`available_commands_update`), kept per session for completion.

Untrusted input: at most `MAX_COMMANDS` commands are kept, each name one clean word and each
description and input hint one clean line, so a hostile list cannot flood the completion menu.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sidecar.text_safety import sanitize_text

MAX_COMMANDS = 200
NAME_LIMIT = 64
TEXT_LIMIT = 300


@dataclass(frozen=True)
class AgentCommand:
    name: str  # without the leading "/"
    description: str
    hint: str | None  # the agent's `input.hint`: what to type after the command


def parse_commands(update: dict[str, Any]) -> tuple[AgentCommand, ...]:
    """The commands of one `available_commands_update`; malformed entries are left out."""
    raw = update.get("availableCommands")
    if not isinstance(raw, list):
        return ()
    found: dict[str, AgentCommand] = {}
    for entry in raw:
        if len(found) >= MAX_COMMANDS:
            break
        if not isinstance(entry, dict):
            continue
        name = entry.get("name")
        if not isinstance(name, str):
            continue
        name = sanitize_text(name.lstrip("/"), NAME_LIMIT)
        if not name or " " in name or name in found:
            continue
        description = entry.get("description")
        given = entry.get("input")
        hint = given.get("hint") if isinstance(given, dict) else None
        found[name] = AgentCommand(
            name=name,
            description=sanitize_text(description, TEXT_LIMIT) if isinstance(description, str) else "",
            hint=(sanitize_text(hint, TEXT_LIMIT) or None) if isinstance(hint, str) else None,
        )
    return tuple(found.values())
