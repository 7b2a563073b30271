"""What the mock model says, independent of any provider's wire format.

A request from an agent's main loop (one that offers tools) is scripted by the marker in its latest
user text; side requests (title generation, checks) get `GENERIC_REPLY`:

- `[mock:text]`  `TEXT_CHUNKS`, streamed: the exact text a test expects back;
- `[mock:read]`  a call of the agent's read tool on `Script.read_path`, then, once the tool result
                 comes back, `read_reply()` naming the `TOKEN-...` words that result held;
- `[mock:edit]`  a read of `Script.edit_path` (claude-agent-acp refuses to edit a file it has not
                 read), then a call of the agent's edit tool replacing `Script.edit_old` (a whole
                 line) by `edit_new` in it, then `EDIT_REPLY` (or `EDIT_FAILED_REPLY` when the
                 edit's result reads like an error);
- `[mock:slow]`  `SLOW_CHUNK` every `SLOW_INTERVAL` s until the client goes away or the mock stops;
- `[mock:shell]` a call of the agent's shell tool running `Script.shell_command`, then
                 `shell_reply()` naming the `TOKEN-...` words its output held;
- `[mock:ask]`   a call of the agent's tool that asks the user a question (codex's
                 `request_user_input`), then `ASK_REPLY` and what the tool returned.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TEXT_CHUNKS = ("Hello from the mock model. ", "This reply is streamed ", "in four chunks, ", "exactly.")
TEXT_REPLY = "".join(TEXT_CHUNKS)
EDIT_REPLY = "The edit is done."
EDIT_FAILED_REPLY = "The edit failed."
GENERIC_REPLY = "Mock title"
SLOW_CHUNK = "tick "
SLOW_INTERVAL = 0.2
SLOW_CHUNKS = 300  # 60 s at most: a slow stream always ends by itself
TOKEN = re.compile(r"TOKEN-[0-9a-f]{8}")
MARKER = re.compile(r"\[mock:(text|read|edit|slow|shell|ask)\]")
FAILURE_WORDS = ("error", "failed", "rejected", "refused", "denied", "not allowed", "cancel", "declined")


def read_reply(tokens: list[str]) -> str:
    return f"The file mentions {' '.join(tokens)}." if tokens else "The read returned no token."


def shell_reply(tokens: list[str]) -> str:
    return f"The command printed {' '.join(tokens)}." if tokens else "The command printed no token."


ASK_REPLY = "The user answered:"


def marker_of(text: str) -> str:
    """The scenario named by the last marker in `text`, or ""."""
    found = MARKER.findall(text)
    return str(found[-1]) if found else ""


@dataclass
class Request:
    """One request the mock received, for assertions."""

    provider: str  # gemini, openai, anthropic, probe (a server-type probe), proxy, unknown
    method: str
    path: str
    body: Any
    scenario: str = ""  # text, read, edit, slow; "" for side requests
    tool_results: list[str] = field(default_factory=list)  # texts of the tool results it carried
    prompt: str = ""  # the latest user text of a main-loop request


@dataclass
class ToolCall:
    """A tool call in provider-neutral terms; each provider maps it to its agent's tool."""

    action: str  # "read", "edit", "shell" or "ask"
    path: str = ""
    old: str = ""
    new: str = ""
    text: str = ""  # an edit's whole new text, for agents that only write whole files
    command: str = ""  # "shell": the command line


@dataclass
class Step:
    """One model answer: text chunks, or a tool call, or a slow stream."""

    chunks: list[str] = field(default_factory=list)
    tool: ToolCall | None = None
    slow: bool = False


class Script:
    """The per-test settings of the scenarios, and the slow stream's clock."""

    def __init__(self) -> None:
        self.read_path: Path | None = None
        self.edit_path: Path | None = None
        self.edit_old = ""
        self.edit_new = ""
        self.shell_command = ""
        self.stopping = threading.Event()
        self.slow_started = threading.Event()

    def step(self, scenario: str, tool_results: list[str]) -> Step:
        if scenario == "text":
            return Step(chunks=list(TEXT_CHUNKS))
        if scenario == "slow":
            return Step(slow=True)
        if scenario == "read":
            if not tool_results:
                assert self.read_path is not None, "set Script.read_path for [mock:read]"
                return Step(tool=ToolCall("read", str(self.read_path)))
            tokens = sorted(set(TOKEN.findall("\n".join(tool_results))))
            return Step(chunks=[read_reply(tokens)])
        if scenario == "edit":
            assert self.edit_path is not None, "set Script.edit_path for [mock:edit]"
            if not tool_results:
                return Step(tool=ToolCall("read", str(self.edit_path)))
            if len(tool_results) == 1:
                # The whole new text, from what the read returned (right where it is the file's text).
                text = tool_results[0].replace(self.edit_old, self.edit_new, 1)
                return Step(tool=ToolCall("edit", str(self.edit_path), self.edit_old, self.edit_new, text))
            failed = any(word in tool_results[-1].lower() for word in FAILURE_WORDS)
            return Step(chunks=[EDIT_FAILED_REPLY if failed else EDIT_REPLY])
        if scenario == "shell":
            if not tool_results:
                assert self.shell_command, "set Script.shell_command for [mock:shell]"
                return Step(tool=ToolCall("shell", command=self.shell_command))
            return Step(chunks=[shell_reply(sorted(set(TOKEN.findall("\n".join(tool_results)))))])
        if scenario == "ask":
            if not tool_results:
                return Step(tool=ToolCall("ask"))
            return Step(chunks=[f"{ASK_REPLY} {tool_results[-1]}"])
        return Step(chunks=[GENERIC_REPLY])

    def slow_chunks(self) -> Iterator[str]:
        self.slow_started.set()
        for _ in range(SLOW_CHUNKS):
            if self.stopping.is_set():
                return
            yield SLOW_CHUNK
            time.sleep(SLOW_INTERVAL)
