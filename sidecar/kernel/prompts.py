"""What a turn sends the agent: prompt blocks from text and editor context, the rename prompt."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

JsonObj = dict[str, Any]

# The rename prompt: the conversation document shows it as one line, live or replayed, from its
# `_meta` or, for an agent that drops `_meta`, from this text (`rename_title`).
RENAME_PROMPT = (
    'Rename this session to exactly: "{title}"\n'
    "Do nothing else: confirm by sending a session_info_update with exactly that title."
)
_RENAME_PROMPT = re.compile(
    r'\ARename this session to exactly: "(?P<title>.*)"\n'
    r"Do nothing else: confirm by sending a session_info_update with exactly that title\.\s*\Z",
    re.DOTALL,
)


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
            block["_meta"] = context_meta(context.label)  # so a replayed conversation names the range too
        blocks.append(block)
    else:
        # Every agent accepts resource_link and text.
        blocks.append({"type": "resource_link", "uri": context.uri, "name": name})
        where = f" ({context.label})" if context.label else ""
        blocks.append({"type": "text", "text": f"Context from {name}{where}:\n```\n{context.text}\n```"})
    return blocks


def rename_prompt(requested: str) -> tuple[list[JsonObj], JsonObj]:
    """The prompt that asks the agent to rename its session, and the `_meta` that says it plainly
    (the conversation document's own template, so it shows as one line there, live or replayed)."""
    text, meta = rename_prompt_text(requested)
    return [{"type": "text", "text": text}], meta


def rename_prompt_text(title: str) -> tuple[str, JsonObj]:
    """The rename prompt's text and `_meta` (for the engine, so both sides stay in step)."""
    return RENAME_PROMPT.format(title=title), {"acpSidecar": {"renameTitle": title}}


def rename_title(text: str | None, meta: object = None) -> str | None:
    """The title a rename prompt asked for, from its `_meta` or its text; None if it is not one."""
    if isinstance(meta, dict):
        ours = meta.get("acpSidecar")
        if isinstance(ours, dict) and isinstance(ours.get("renameTitle"), str):
            return str(ours["renameTitle"])
    if text is not None:
        found = _RENAME_PROMPT.match(text)
        if found is not None:
            return found.group("title")
    return None


def context_meta(label: str) -> JsonObj:
    """`_meta` for an embedded context block naming its range, so that a replay shows it too."""
    return {"acpSidecar": {"label": label}}
