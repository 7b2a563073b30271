"""System packages from Debian: placeholder until the infrastructure work fills it in."""

from __future__ import annotations

import shutil
from pathlib import Path

NAME = "system"
COMMANDS = ("luacheck",)


def problem(cache: Path) -> str | None:
    missing = [c for c in COMMANDS if shutil.which(c) is None]
    return f"missing commands: {', '.join(missing)}" if missing else None


def ensure(cache: Path) -> None:
    return None
