"""The agent's stdin, for a `JsonRpcConnection` run in-process: what the client writes to it."""

from __future__ import annotations

import json
from typing import Any


class AgentStdin:
    """Stands for the writer of the agent's stdin: keeps every frame written, parsed."""

    def __init__(self) -> None:
        self.frames: list[dict[str, Any]] = []

    def write(self, data: bytes) -> None:
        for line in data.splitlines():
            self.frames.append(json.loads(line))

    async def drain(self) -> None:
        return None

    def close(self) -> None:
        return None

    def is_closing(self) -> bool:
        return False
