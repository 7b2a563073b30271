"""What the renderer keeps per session between events: open messages, tool calls, compactions."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from sidecar.features.conversation.blocks import MarkdownEscaper
from sidecar.features.conversation.clean import TextCleaner, clean_text

JsonObj = dict[str, Any]

MAX_SUMMARY = 64 * 1024


class TextHash:
    """A hash of a message's text without its leading and trailing whitespace, fed in chunks, so
    that a live message and its replay match when only the whitespace around them differs."""

    def __init__(self) -> None:
        self._hash = hashlib.sha256()
        self._space = ""  # trailing whitespace seen but not hashed yet
        self._started = False

    def update(self, text: str) -> None:
        if not self._started:
            text = text.lstrip()
            if not text:
                return
            self._started = True
        body = text.rstrip()
        if body:
            self._hash.update((self._space + body).encode("utf-8", "surrogatepass"))
            self._space = text[len(body) :]
        else:
            self._space += text

    def hexdigest(self) -> str:
        return self._hash.hexdigest()[:24]


@dataclass
class MessageState:
    role: str  # agent | thought | user
    message_id: str | None
    # Given, not defaulted: an agent message's starts where the renderer says (a default one
    # would be built and thrown away for every message of a long replay).
    escaper: MarkdownEscaper
    cleaner: TextCleaner = field(default_factory=TextCleaner)
    hasher: TextHash = field(default_factory=TextHash)
    blocks: list[JsonObj] = field(default_factory=list)  # user messages: kept until they end
    chars: int = 0
    hidden: int = 0  # characters not shown (over the limit)
    meta: object = None


@dataclass
class ToolState:
    title: str
    status: str | None
    diffs: set[str] = field(default_factory=set)


@dataclass
class Compaction:
    """A context compaction: its summary gathers until it ends (shown once, then)."""

    parts: list[str] = field(default_factory=list)
    size: int = 0
    done: bool = False

    def absorb(self, update: JsonObj, is_status: bool) -> str | None:
        """Take a compaction_update or compaction_summary_chunk; the final status once it ends."""
        if self.done:
            return None
        if not is_status:
            content = update.get("content")
            text = content.get("text") if isinstance(content, dict) else None
            if isinstance(text, str) and self.size < MAX_SUMMARY:
                self.parts.append(text)
                self.size += len(text)
            return None
        if "summary" in update:  # a complete replacement (null or [] clear it)
            summary = update.get("summary")
            blocks = summary if isinstance(summary, list) else []
            self.parts = [b["text"] for b in blocks if isinstance(b, dict) and isinstance(b.get("text"), str)]
            self.size = sum(len(p) for p in self.parts)
        status = update.get("status")
        if status not in ("completed", "failed", "cancelled"):
            return None
        self.done = True
        return str(status)

    def summary(self) -> str:
        text = clean_text("".join(self.parts)[:MAX_SUMMARY]).strip("\n")
        return text if text.strip() else ""


def placeholder(content: JsonObj) -> str:
    """Non-text content in a message, as a short note."""
    kind = content.get("type")
    if kind == "resource_link":
        name = content.get("name") if isinstance(content.get("name"), str) else content.get("uri")
        return f"\n(link: {name})\n"
    if kind == "resource":
        resource = content.get("resource")
        uri = resource.get("uri") if isinstance(resource, dict) else None
        return f"\n(resource: {uri})\n"
    mime = content.get("mimeType")
    return f"\n({kind or 'content'}: {mime or 'unknown type'})\n"
