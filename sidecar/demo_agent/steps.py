"""The order of a prompt turn's steps: preludes, turn enders, the main body, usage, the automatic title."""

from __future__ import annotations

from sidecar.acp.errors import INTERNAL_ERROR
from sidecar.demo_agent import behaviours, elicit, reply, terminal, tools
from sidecar.demo_agent import script as scripting
from sidecar.demo_agent.protocol import RpcError
from sidecar.demo_agent.store import now_iso
from sidecar.demo_agent.turn import Turn, TurnCancelled, forever


async def run(turn: Turn) -> str:
    """Play the turn's script; returns the stop reason (``cancelled`` on cancel)."""
    record = turn.record
    record.history.begin_turn()
    user_id = turn.new_id("user")
    for block in turn.blocks:
        record.history.append({"sessionUpdate": "user_message_chunk", "content": block, "messageId": user_id})
    record.prompt_count += 1
    first_prompt = record.prompt_count == 1
    turn.agent.save(turn.session)
    try:
        await behaviours.preludes(turn, user_id)
        if turn.script.error:
            raise RpcError(INTERNAL_ERROR, "demo failure")
        if turn.script.crash or turn.script.hang:
            turn.chunk("Working on it", message_id=turn.new_id("msg"))
            turn.conn.hung = True  # nothing more leaves this process
            if turn.script.crash:
                turn.agent.stop(3)
            await forever()
        stop_reason = await body(turn)
    except TurnCancelled:
        for tool_id in sorted(turn.open_tools):
            turn.tool_status(tool_id, "failed")
        if not turn.explicit_updated_at:
            record.updated_at = now_iso()  # still activity, for list order
        return "cancelled"
    turn.usage()
    now = now_iso()
    if not turn.explicit_updated_at:
        record.updated_at = now
    # A rename prompt is no topic to title a session after (even if ignored).
    if first_prompt and record.title is None and not turn.sent_info and turn.script.rename is None:
        title = scripting.derive_title(turn.script.text) or "Demo session"
        turn.set_info({"title": title, "updatedAt": record.updated_at})
    return stop_reason


async def body(turn: Turn) -> str:
    """The turn's main part: the first scripted behaviour that applies, else the normal reply."""
    script = turn.script
    if script.rename is not None:
        return await behaviours.rename(turn, script.rename)
    if script.title is not None:
        return behaviours.title(turn, script.title)
    if script.info is not None:
        return behaviours.info(turn, script.info)
    if script.help:
        await turn.stream(reply.split_chunks(scripting.HELP_TEXT), turn.chunk_delay(0))
        return "end_turn"
    if script.edit:
        return await tools.edit(turn)
    if script.permission:
        return await tools.permission(turn)
    if script.terminal is not None:
        return await terminal.run(turn, script.terminal)
    if script.elicit is not None:
        return await elicit.run(turn, script.elicit)
    if script.chunks is not None:
        await behaviours.flood(turn, script.chunks)
        return "end_turn"
    if script.answer is not None:
        await behaviours.answer(turn, script.answer, script.piece or behaviours.ANSWER_PIECE, script.para)
        return "end_turn"
    if script.refuse:
        return behaviours.refuse(turn)
    await reply.default_reply(turn)
    return "end_turn"
