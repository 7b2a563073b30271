"""What a turn sends the agent: prompt blocks from text and editor context, the rename prompt."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sidecar.features.conversation.api import context_meta
from sidecar.features.conversation.api import rename_prompt as transcript_rename_prompt

JsonObj = dict[str, Any]


@dataclass
class PromptContext:
    """Editor context for a prompt: a document (or a part of it)."""

    uri: str
    text: str
    label: str | None = None  # e.g. "lines 3-7"
    mime_type: str = "text/plain"


def prompt_blocks(text: str, contexts: Sequence[PromptContext], embed_context: bool) -> list[JsonObj]:
    """The user's text, then each context: embedded when the agent offers it, else a link and text."""
    blocks: list[JsonObj] = [{"type": "text", "text": text}]
    for context in contexts:
        blocks.extend(_context_blocks(context, embed_context))
    return blocks


def _context_blocks(context: PromptContext, embed_context: bool) -> list[JsonObj]:
    blocks: list[JsonObj] = []
    name = context.uri.rsplit("/", 1)[-1] or context.uri
    if embed_context:
        block: JsonObj = {
            "type": "resource",
            "resource": {"uri": context.uri, "text": context.text, "mimeType": context.mime_type},
        }
        if context.label:
            block["_meta"] = context_meta(context.label)  # so a replayed transcript names the range too
        blocks.append(block)
    else:
        # Every agent accepts resource_link and text.
        blocks.append({"type": "resource_link", "uri": context.uri, "name": name})
        where = f" ({context.label})" if context.label else ""
        blocks.append({"type": "text", "text": f"Context from {name}{where}:\n```\n{context.text}\n```"})
    return blocks


def rename_prompt(requested: str) -> tuple[list[JsonObj], JsonObj]:
    """The prompt that asks the agent to rename its session, and the `_meta` that says it plainly
    (the transcript's own template, so the transcript shows it as one line, live or replayed)."""
    text, meta = transcript_rename_prompt(requested)
    return [{"type": "text", "text": text}], meta
