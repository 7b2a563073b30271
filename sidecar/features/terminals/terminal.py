"""One client terminal as the sidecar keeps it: its process, its bounded output (cut at a UTF-8
character boundary when it overflows) and what of it the conversation document has shown."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from dataclasses import dataclass, field
from typing import Any

from sidecar.acp.process import signal_name
from sidecar.tasks import OwnedTasks

JsonObj = dict[str, Any]


def _is_continuation(byte: int) -> bool:
    return byte & 0xC0 == 0x80


class OutputBuffer:
    """A terminal's output: the last `limit` bytes, cut at a character boundary."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._data = bytearray()
        self.start = 0  # offset in the whole stream of the first byte kept
        self.truncated = False

    @property
    def end(self) -> int:
        """Bytes received so far."""
        return self.start + len(self._data)

    def append(self, chunk: bytes) -> None:
        self._data += chunk
        excess = len(self._data) - self.limit
        if excess <= 0:
            return
        # Never start inside a character: skip its continuation bytes too (at most 3).
        while excess < len(self._data) and _is_continuation(self._data[excess]):
            excess += 1
        del self._data[:excess]
        self.start += excess
        self.truncated = True

    def since(self, offset: int) -> tuple[bytes, int]:
        """The bytes from stream offset `offset` (or from the first kept), and how many were dropped."""
        skipped = max(0, self.start - offset)
        return bytes(self._data[max(0, offset - self.start) :]), skipped

    def text(self, complete: bool) -> str:
        """The output as text. While the command runs (`complete` False) a character still
        arriving is left out; invalid UTF-8 becomes U+FFFD. Never more than `limit` bytes."""
        data = bytes(self._data)
        if not complete:
            data = data[: complete_prefix(data)]
        text = data.decode("utf-8", "replace")
        encoded = text.encode("utf-8")
        if len(encoded) > self.limit:  # replacement characters are longer than the bytes they replace
            cut = len(encoded) - self.limit
            while cut < len(encoded) and _is_continuation(encoded[cut]):
                cut += 1
            text = encoded[cut:].decode("utf-8")
        return text


def complete_prefix(data: bytes) -> int:
    """Length of `data` without a UTF-8 sequence cut at its end."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if not _is_continuation(byte):
            if byte >= 0xC0:
                needed = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
                if back < needed:
                    return len(data) - back
            return len(data)
    return len(data)


@dataclass
class Shown:
    """Where a terminal embedded in a tool call stands in the transcript."""

    tool_call_id: str
    offset: int = 0  # stream bytes already written
    chars: int = 0  # characters written
    capped: bool = False  # DOC_MAX_CHARS reached: only the tail is written, at the end
    began: bool = False
    final: bool = False
    last_line: str = ""


@dataclass
class Terminal:
    terminal_id: str
    session_id: str
    command: str
    args: list[str]
    cwd: str
    output: OutputBuffer
    process: asyncio.subprocess.Process | None = None
    lifeline: socket.socket | None = None
    exit_status: JsonObj | None = None
    exited: asyncio.Event = field(default_factory=asyncio.Event)
    tasks: OwnedTasks = field(default_factory=lambda: OwnedTasks("terminal"))
    shown: Shown | None = None
    released: bool = False

    @property
    def label(self) -> str:
        return " ".join([self.command, *self.args])

    @property
    def running(self) -> bool:
        return self.exit_status is None

    def tell(self, word: bytes) -> None:
        """Ask the reaper to signal every descendant (also those that left the group)."""
        if self.lifeline is not None:
            with contextlib.suppress(OSError):
                self.lifeline.send(word + b"\n")

    def close_lifeline(self) -> None:
        if self.lifeline is not None:
            self.lifeline.close()
            self.lifeline = None


def exit_status_of(returncode: int) -> JsonObj:
    """`TerminalExitStatus` from the reaper's status (it exits like the command did)."""
    if returncode < 0:
        return {"exitCode": None, "signal": signal_name(-returncode)}
    return {"exitCode": returncode, "signal": None}
