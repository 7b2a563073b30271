"""The LSP traffic Helix records with `hx -v --log FILE`, parsed.

Helix logs each message it sends or receives on one line:

    2026-12-01T04:23:12.558 helix_lsp::transport [INFO] acp-sidecar -> {"jsonrpc": ...}
    2026-12-01T04:23:13.279 helix_lsp::transport [INFO] acp-sidecar <- {"id": 0, ...}

`->` goes to the server, `<-` comes from it; the server is named as in languages.toml.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_LINE = re.compile(
    r"^(?P<time>\S+) helix_lsp::transport \[\w+\] (?P<server>\S+) (?P<dir>->|<-) (?P<body>\{.*)$"
)


@dataclass(frozen=True)
class LspMessage:
    time: str
    server: str
    to_server: bool
    body: dict[str, Any]

    @property
    def method(self) -> str | None:
        method = self.body.get("method")
        return method if isinstance(method, str) else None

    @property
    def params(self) -> Any:
        return self.body.get("params")

    @property
    def is_request(self) -> bool:
        return "method" in self.body and "id" in self.body

    @property
    def is_response(self) -> bool:
        return "method" not in self.body and "id" in self.body


class LspLog:
    def __init__(self, messages: list[LspMessage]) -> None:
        self.messages = messages

    @classmethod
    def read(cls, path: Path) -> LspLog:
        messages: list[LspMessage] = []
        if not path.exists():
            return cls(messages)
        for line in path.read_text(errors="replace").splitlines():
            match = _LINE.match(line)
            if match is None:
                continue
            try:
                body = json.loads(match["body"])
            except json.JSONDecodeError:
                continue  # a line cut by a concurrent write: the next read sees it whole
            if isinstance(body, dict):
                messages.append(LspMessage(match["time"], match["server"], match["dir"] == "->", body))
        return cls(messages)

    def servers_started(self) -> list[str]:
        return sorted({m.server for m in self.messages if m.method == "initialize" and m.to_server})

    def of(self, server: str, method: str, *, to_server: bool | None = None) -> list[LspMessage]:
        return [
            m
            for m in self.messages
            if m.server == server and m.method == method and (to_server is None or m.to_server == to_server)
        ]

    def initialize_params(self, server: str) -> dict[str, Any] | None:
        sent = self.of(server, "initialize", to_server=True)
        return sent[0].params if sent else None

    def response_to(self, request: LspMessage) -> LspMessage | None:
        """The answer to `request` (Helix answers the server's requests; servers answer Helix's)."""
        for m in self.messages:
            same_id = m.body.get("id") == request.body.get("id")
            if m.server == request.server and m.is_response and same_id and m.to_server != request.to_server:
                return m
        return None

    def show_messages(self, server: str) -> list[str]:
        return [str(m.params.get("message")) for m in self.of(server, "window/showMessage", to_server=False)]

    def session_text(self, server: str, kind: str = "agent_message_chunk") -> str:
        """The text of every `acp/sessionUpdate` of `kind` (the answer Helix does not display)."""
        parts: list[str] = []
        for m in self.of(server, "acp/sessionUpdate", to_server=False):
            update = m.params.get("update", {})
            content = update.get("content")
            if update.get("sessionUpdate") == kind and isinstance(content, dict):
                text = content.get("text")
                if isinstance(text, str):
                    parts.append(text)
        return "".join(parts)
