"""Merging text chunks that wait in the agent connection's queue.

When the agent writes faster than the sidecar routes, its `session/update` frames queue up. Two
queued plain text chunks of one message say the same as one chunk holding both texts (ACP chunks
of a message are concatenated), so the later one is appended to the earlier one while it waits:
every layer above then routes one update instead of many. Only what is lossless is merged: both
frames hold nothing but the session id and an update of the same kind and message whose content
is a bare text block; anything else (annotations, `_meta`, other fields) stays its own update.
Nothing waits for a merge: only frames already queued behind each other are joined.
"""

from __future__ import annotations

from typing import Any

SESSION_UPDATE = "session/update"
TEXT_CHUNKS = frozenset({"agent_message_chunk", "agent_thought_chunk", "user_message_chunk"})
# Below the conversation's "large chunk" threshold (16 KiB, flushed at once), so merging never
# changes when the document is written; past it the next chunk starts a new update.
MAX_MERGED_CHARS = 8192
_UPDATE_KEYS = frozenset({"sessionUpdate", "content", "messageId"})
_CONTENT_KEYS = frozenset({"type", "text"})


def plain_text(update: Any) -> str | None:
    """The text of a *plain text chunk*, else None: the one rule of what may be joined.

    A plain text chunk is a message or thought chunk (or the user's) that holds nothing but a
    text block (`type` and `text`) and maybe a string `messageId`. Joining the texts of two
    plain chunks of one message loses nothing; anything else (annotations, `_meta`, other
    fields) stays its own update. Every joiner uses this rule: the merge of queued frames here,
    `kernel/updates.py` (`Update.plain`, read by the editor's coalescer and the conversation
    document).
    """
    if type(update) is not dict or update.get("sessionUpdate") not in TEXT_CHUNKS:
        return None
    if not _UPDATE_KEYS.issuperset(update):
        return None
    message_id = update.get("messageId")
    if message_id is not None and type(message_id) is not str:
        return None
    content = update.get("content")
    if type(content) is not dict or len(content) != 2 or not _CONTENT_KEYS.issuperset(content):
        return None
    text = content.get("text")
    if content.get("type") != "text" or type(text) is not str:
        return None
    return text


def _text_chunk(params: Any) -> tuple[str, dict[str, Any], str] | None:
    """(session id, update, text) of a frame that is nothing but a plain text chunk, else None."""
    if type(params) is not dict or len(params) != 2:
        return None
    session_id = params.get("sessionId")
    update: Any = params.get("update")
    if type(session_id) is not str:
        return None
    text = plain_text(update)
    if text is None:
        return None
    return session_id, update, text


def merge_queued(method: str, queued: Any, new: Any) -> bool:
    """Append the notification `new` to the queued `queued` when both are text chunks of one
    message (True: `new` is in `queued` now and must not be dispatched itself)."""
    if method != SESSION_UPDATE:
        return False
    second = _text_chunk(new)
    return second is not None and _join(_text_chunk(queued), second)


class ChunkMerger:
    """`merge_queued` for one connection, remembering what the frame waiting last in its queue
    is: each frame is then examined once, not once as the new frame and again as the queued one."""

    def __init__(self) -> None:
        self._tail: Any = None  # the params of the frame last offered, queued unless merged
        self._tail_chunk: tuple[str, dict[str, Any], str] | None = None

    def __call__(self, method: str, queued: Any, new: Any) -> bool:
        if method != SESSION_UPDATE:
            return False
        second = _text_chunk(new)
        if second is None:
            return False
        # Identity, not equality: the queue holds this very dict while it waits last there.
        first = self._tail_chunk if queued is self._tail else _text_chunk(queued)
        if _join(first, second):
            assert first is not None
            self._tail, self._tail_chunk = queued, (first[0], first[1], first[1]["content"]["text"])
            return True
        self._tail, self._tail_chunk = new, second
        return False


def _join(first: tuple[str, dict[str, Any], str] | None, second: tuple[str, dict[str, Any], str]) -> bool:
    if first is None:
        return False
    session_id, update, text = first
    new_session_id, new_update, new_text = second
    if (
        session_id != new_session_id
        or update["sessionUpdate"] != new_update["sessionUpdate"]
        or update.get("messageId") != new_update.get("messageId")
        or len(text) + len(new_text) > MAX_MERGED_CHARS
    ):
        return False
    update["content"]["text"] = text + new_text
    return True
