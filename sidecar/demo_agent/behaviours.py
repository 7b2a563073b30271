"""Scripted behaviours of a turn (prompt keywords): preludes, floods, renames and titles, refusals."""

from __future__ import annotations

import asyncio
import json

from sidecar.demo_agent.protocol import JsonObject, encode, write_stderr
from sidecar.demo_agent.script import NoticeSpec
from sidecar.demo_agent.store import now_iso
from sidecar.demo_agent.turn import Turn, TurnCancelled

RENAME_SLOW_DELAY = 2.0
FLOOD_YIELD_EVERY = 256
STDERR_LINE = 80
ANSWER_PIECE = 64 * 1024
ANSWER_END = "END OF ANSWER"


async def preludes(turn: Turn, user_id: str) -> None:
    """The keywords that run before the turn's main part, in their documented order."""
    script = turn.script
    if script.echo:
        for block in turn.blocks:
            turn.update(
                {"sessionUpdate": "user_message_chunk", "content": block, "messageId": user_id},
                record=False,  # the history already holds the prompt
            )
    if script.stderr:
        await write_stderr_filler(turn, script.stderr)
    if script.garbage:
        garbage(turn)
    if script.bigframe is not None:
        text = ("bigframe " * (script.bigframe // 9 + 1))[: script.bigframe]
        turn.chunk(text, message_id=turn.new_id("big"))
        await turn.conn.drain()
    if script.unknown:
        turn.update({"sessionUpdate": "future_kind_xyz", "someField": {"nested": [1, 2]}})
        turn.update(
            {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": "A chunk from the future. "},
                "messageId": turn.new_id("msg"),
                "futureField": True,
            }
        )
    if script.mode:
        turn.agent.switch_mode(turn.session, "code")
    for spec in script.notices:
        notice(turn, spec)
    if script.compact is not None:
        await compact(turn, script.compact)
    turn.check()


def notice(turn: Turn, spec: NoticeSpec) -> None:
    """``#notice``: a live notice (never stored, as ACP says), or, for a client that did not
    declare ``session.notices``, the same words as an agent message."""
    if turn.agent.client_notices:
        update: JsonObject = {"sessionUpdate": "notice", "severity": spec.severity, "title": spec.title}
        if spec.description is not None:
            update["description"] = spec.description
        turn.update(update, record=False)
        return
    detail = f" ({spec.description})" if spec.description is not None else ""
    turn.chunk(f"Notice ({spec.severity}): {spec.title}{detail}\n", message_id=turn.new_id("notice"))


async def compact(turn: Turn, outcome: str) -> None:
    """``#compact``: in_progress, summary chunks (paced like the reply), then ``outcome``;
    ``cancelled`` when the turn is cancelled meanwhile. Silent for a client that did not
    declare ``session.compaction`` (the context is still compacted)."""
    record = turn.record
    if not turn.agent.client_compaction:
        if outcome == "completed":
            record.compacted_prompts = record.prompt_count
        return
    compaction_id = turn.new_id("compaction")
    turn.update(
        {"sessionUpdate": "compaction_update", "compactionId": compaction_id, "status": "in_progress"}
    )
    delay = turn.chunk_delay(turn.agent.settings.chunk_delay_ms)
    earlier = record.prompt_count - 1
    pieces = [
        "Summary of the session so far: ",
        f"{earlier} earlier prompt{'' if earlier == 1 else 's'} answered; ",
        "files read and edits made are kept, the rest is dropped.",
    ]
    try:
        for piece in pieces:
            await turn.pause(delay)
            turn.update(
                {
                    "sessionUpdate": "compaction_summary_chunk",
                    "compactionId": compaction_id,
                    "content": {"type": "text", "text": piece},
                }
            )
    except TurnCancelled:
        turn.update(
            {"sessionUpdate": "compaction_update", "compactionId": compaction_id, "status": "cancelled"}
        )
        raise
    end: JsonObject = {"sessionUpdate": "compaction_update", "compactionId": compaction_id, "status": outcome}
    if outcome == "failed":
        end["error"] = "demo compaction failure (#compact=fail)"
    else:
        record.compacted_prompts = record.prompt_count
    turn.update(end)


async def write_stderr_filler(turn: Turn, total: int) -> None:
    line = (b"demo agent stderr filler " * 4)[: STDERR_LINE - 1] + b"\n"
    block = line * (65536 // STDERR_LINE)
    remaining = total
    while remaining > 0:
        piece = block[:remaining]
        if len(piece) == remaining and remaining % STDERR_LINE:
            piece = piece[:-1] + b"\n"  # end on a full line
        write_stderr(piece)
        remaining -= len(piece)
        await asyncio.sleep(0)  # keep reading stdin (cancel) between blocks
        turn.check()


def garbage(turn: Turn) -> None:
    """Frames a client must survive: broken JSON, a non-object, stray ids, bad fields."""
    conn = turn.conn
    conn.write_raw(b'{"jsonrpc": "2.0", "method": "session/update", "params": {oops\n')
    conn.write_raw(b"[1,2,3]\n")
    conn.write({"jsonrpc": "2.0", "id": "demo-garbage-unknown-id", "result": {"surprise": True}})
    conn.notify(
        "session/update",
        {
            "sessionId": "demo-no-such-session",
            "update": {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": "for a session nobody has"},
            },
        },
    )
    conn.notify(
        "session/update",
        {
            "sessionId": turn.record.session_id,
            "update": {
                "sessionUpdate": "tool_call",
                "toolCallId": "garbage-tool",
                "title": 42,
                "kind": "read",
                "status": "pending",
            },
        },
    )


async def flood(turn: Turn, count: int) -> None:
    """``#chunks=N``: N tiny chunks as fast as the pipe takes them, memory flat."""
    message_id = turn.new_id("msg")
    conn = turn.conn
    # Frames are cut from one template; nothing is built up front.
    marker = "\u0000"
    template = encode(
        {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {
                "sessionId": turn.record.session_id,
                "update": {
                    "sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": marker},
                    "messageId": message_id,
                },
            },
        }
    )
    prefix, suffix = template.split(b"\\u0000")
    delay = turn.chunk_delay(0)
    history = turn.record.history
    for index in range(count):
        if index and delay:
            await turn.pause(delay)
        text = f"c{index} "
        conn.write_raw(prefix + text.encode() + suffix)
        history.append_text("agent_message_chunk", message_id, text)
        if index % FLOOD_YIELD_EVERY == FLOOD_YIELD_EVERY - 1:
            await conn.drain()
            await asyncio.sleep(0)  # let session/cancel in
            turn.check()
    await conn.drain()


def answer_text(size: int) -> str:
    """The text of ``#answer=SIZE``: exactly `size` characters of numbered lines (plain Markdown),
    ending with ``END OF ANSWER`` when there is room for it."""
    line = "line {:07d} of the long answer, words to fill it up to one line of text.\n"
    width = len(line.format(0))
    body_size = max(0, size - len(ANSWER_END)) if size >= len(ANSWER_END) else size
    count = body_size // width + 1
    body = "".join(line.format(i) for i in range(count))[:body_size]
    return body + (ANSWER_END if size >= len(ANSWER_END) else "")


def paragraphs_text(size: int, lines: int) -> str:
    """The text of ``#answer=SIZE #para=LINES``: at most `size` characters of Markdown in
    paragraphs of `lines` numbered lines, every fifth one a fenced code block with a blank line
    in its middle, then a last paragraph ``END OF ANSWER``."""
    lines = max(1, lines)
    line = "line {:07d} of the long answer, words to fill it up to one line of text.\n"
    budget = size - len(ANSWER_END) - 2
    parts: list[str] = []
    used = 0
    number = 0
    index = 0
    while True:
        rows = [line.format(number + i) for i in range(lines)]
        if index % 5 == 4:
            half = (lines + 1) // 2
            unit = "```text\n" + "".join(rows[:half]) + "\n" + "".join(rows[half:]) + "```\n\n"
        else:
            unit = "".join(rows) + "\n"
        if used + len(unit) > budget:
            break
        parts.append(unit)
        used += len(unit)
        number += lines
        index += 1
    return "".join(parts) + (ANSWER_END if size >= len(ANSWER_END) else "")


async def answer(turn: Turn, size: int, piece: int, para: int | None = None) -> None:
    """``#answer=BYTES``: one message of `size` characters in chunks of `piece` characters
    (``#para=LINES``: in paragraphs, `paragraphs_text`)."""
    message_id = turn.new_id("msg")
    text = answer_text(size) if para is None else paragraphs_text(size, para)
    delay = turn.chunk_delay(0)
    piece = max(1, piece)
    for index, start in enumerate(range(0, len(text), piece)):
        if index and delay:
            await turn.pause(delay)
        turn.check()
        turn.chunk(text[start : start + piece], message_id=message_id)
        await turn.conn.drain()


async def rename(turn: Turn, title: str) -> str:
    """A rename prompt, answered as ``ACP_DEMO_RENAME`` says."""
    mode = turn.agent.settings.rename
    message_id = turn.new_id("msg")
    if mode == "slow":
        turn.chunk("Renaming this session, slowly... ", message_id=message_id)
        await turn.pause(RENAME_SLOW_DELAY)
    if mode == "ignore":
        turn.chunk("I can't rename sessions (ACP_DEMO_RENAME=ignore).", message_id=message_id)
        return "end_turn"
    chosen = title if mode in ("confirm", "slow") else f"{title} (demo)"
    turn.chunk(f"Renamed this session to “{chosen}”.", message_id=message_id)
    turn.set_info({"title": chosen, "updatedAt": now_iso()})
    return "end_turn"


def title(turn: Turn, text: str) -> str:
    """``#title <text>``: exactly that title."""
    turn.chunk("Setting the session title. ", message_id=turn.new_id("msg"))
    turn.set_info({"title": text, "updatedAt": now_iso()})
    return "end_turn"


def info(turn: Turn, raw: str) -> str:
    """``#info <json>``: a session_info_update with those fields."""
    try:
        fields = json.loads(raw)
    except ValueError:
        fields = None
    if not isinstance(fields, dict):
        turn.chunk("#info needs a JSON object after it.", message_id=turn.new_id("msg"))
        return "end_turn"
    turn.set_info(fields)
    return "end_turn"


def refuse(turn: Turn) -> str:
    turn.chunk(
        "I won't do that: the #refuse keyword asks me to refuse.",
        message_id=turn.new_id("msg"),
    )
    return "refusal"
