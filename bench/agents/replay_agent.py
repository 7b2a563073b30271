"""A tiny ACP agent whose sessions replay a synthetic history of any length on `session/load`.

Standard library only. Offers `loadSession` (no resume, so a client must load
and take the replay). `session/load` of `replay-N` sends N `session/update`s,
then answers. The history is a day of work cut into turns of ten updates: the
user's prompt, a thought, six chunks of the agent's answer, a tool call and
its completion. The last answer chunk of the last turn ends with `END-OF-REPLAY`
so a reader can tell when everything arrived.

    python bench/agents/replay_agent.py            # serve on stdio
    python bench/agents/replay_agent.py --dump N   # print the N update frames of `replay-N`
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from typing import Any

PER_TURN = 10
LAST_WORDS = "END-OF-REPLAY"
_WORDS = "the agent explains what it changed and why, in a few plain words of a long day's work. "


def send(msg: dict[str, Any]) -> None:
    write(json.dumps(msg, separators=(",", ":")).encode() + b"\n")


def write(data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(1, view) :]


def updates(count: int) -> Iterator[dict[str, Any]]:
    """The N updates of a replay, in order (the last one carries the last words)."""
    for index in range(count):
        turn, step = divmod(index, PER_TURN)
        if step == 0:
            yield {
                "sessionUpdate": "user_message_chunk",
                "content": {"type": "text", "text": f"Prompt {turn}: please look at module {turn % 97}."},
                "messageId": f"user-{turn}",
            }
        elif step == 1:
            yield {
                "sessionUpdate": "agent_thought_chunk",
                "content": {"type": "text", "text": f"Thinking about turn {turn}."},
                "messageId": f"thought-{turn}",
            }
        elif step < 8:
            text = f"Part {step} of answer {turn}: {_WORDS}"
            if index == count - 1:
                text += LAST_WORDS
            yield {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": text},
                "messageId": f"answer-{turn}",
            }
        elif step == 8:
            yield {
                "sessionUpdate": "tool_call",
                "toolCallId": f"call-{turn}",
                "title": f"Read src/module_{turn % 97}.py",
                "kind": "read",
                "status": "in_progress",
                "locations": [{"path": f"/work/src/module_{turn % 97}.py"}],
            }
        else:
            yield {
                "sessionUpdate": "tool_call_update",
                "toolCallId": f"call-{turn}",
                "status": "completed",
            }
    if count and (count - 1) % PER_TURN >= 8:  # the history ends on a tool call: say the last words
        yield {
            "sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": LAST_WORDS},
            "messageId": "answer-last",
        }


def frames(session_id: str, count: int) -> bytes:
    return b"".join(
        json.dumps(
            {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session_id, "update": u}},
            separators=(",", ":"),
        ).encode()
        + b"\n"
        for u in updates(count)
    )


def replay_count(session_id: str) -> int | None:
    prefix, _, number = session_id.partition("-")
    return int(number) if prefix == "replay" and number.isdigit() else None


def handle(msg: dict[str, Any]) -> None:
    method, msg_id, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
    if msg_id is None:
        return  # notifications (session/cancel) need nothing here
    if method == "initialize":
        result: Any = {
            "protocolVersion": 1,
            "agentCapabilities": {"loadSession": True},
            "agentInfo": {"name": "replay-agent", "version": "1"},
            "authMethods": [],
        }
    elif method == "session/new":
        result = {"sessionId": "replay-0"}
    elif method == "session/load":
        count = replay_count(str(params.get("sessionId", "")))
        if count is None:
            send({"jsonrpc": "2.0", "id": msg_id, "error": {"code": -32002, "message": "unknown session"}})
            return
        write(frames(params["sessionId"], count))
        result = {}
    elif method == "session/prompt":
        result = {"stopReason": "end_turn"}
    else:
        send(
            {
                "jsonrpc": "2.0",
                "id": msg_id,
                "error": {"code": -32601, "message": f"Method not found: {method}"},
            }
        )
        return
    send({"jsonrpc": "2.0", "id": msg_id, "result": result})


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--dump":
        count = int(sys.argv[2])
        write(frames(f"replay-{count}", count))
        return 0
    for line in sys.stdin.buffer:
        if line.strip():
            handle(json.loads(line))
    return 0


if __name__ == "__main__":
    sys.exit(main())
