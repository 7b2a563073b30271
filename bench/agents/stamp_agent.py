"""A tiny ACP agent for latency: each chunk's text is the time it was written.

Standard library only. Answers `initialize` and `session/new`; a prompt
`#rate=R #count=N` (defaults 50 and 100) streams N `agent_message_chunk`s of
one message at a steady R per second, each text `"<time.monotonic_ns()> "`
taken right before the write (CLOCK_MONOTONIC is system-wide, so a reader in
another process subtracts it from its own clock). Then `end_turn`.

`#big=BYTES #piece=BYTES` (piece default: all of it): instead, one message of
BYTES characters as fast as possible in chunks of `piece` characters, each
starting with its stamp and filled with lines of letters (no digits).
`#first=MS`: wait MS before the first chunk (a real agent's time to its first token).

    python bench/agents/stamp_agent.py
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import time
from typing import Any

_lock = threading.Lock()


def send(msg: dict[str, Any]) -> None:
    data = (json.dumps(msg, separators=(",", ":")) + "\n").encode()
    with _lock:
        view = memoryview(data)
        while view:
            view = view[os.write(1, view) :]


FILLER_LINE = "filler words of a long answer, letters only, up to one line of text here.\n"


def big(request_id: Any, session_id: str, size: int, piece: int) -> None:
    sent = 0
    while sent < size:
        part = min(piece, size - sent)
        stamp = f"{time.monotonic_ns()} \n"
        fill = FILLER_LINE * (part // len(FILLER_LINE) + 1)
        update = {
            "sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": (stamp + fill)[: max(part, len(stamp))]},
            "messageId": "stamp-big",
        }
        send(
            {
                "jsonrpc": "2.0",
                "method": "session/update",
                "params": {"sessionId": session_id, "update": update},
            }
        )
        sent += part
    send({"jsonrpc": "2.0", "id": request_id, "result": {"stopReason": "end_turn"}})


def stream(request_id: Any, session_id: str, text: str) -> None:
    if m := re.search(r"#first=(\d+)", text):  # time to the first token, as a real agent takes
        time.sleep(int(m.group(1)) / 1000)
    if m := re.search(r"#big=(\d+)", text):
        piece = int(p.group(1)) if (p := re.search(r"#piece=(\d+)", text)) else int(m.group(1))
        big(request_id, session_id, int(m.group(1)), max(1, piece))
        return
    rate = float(m.group(1)) if (m := re.search(r"#rate=([\d.]+)", text)) else 50.0
    count = int(m.group(1)) if (m := re.search(r"#count=(\d+)", text)) else 100
    period = 1.0 / rate
    start = time.monotonic()
    for index in range(count):
        delay = start + index * period - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        update = {
            "sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": f"{time.monotonic_ns()} "},
            "messageId": "stamp-1",
        }
        params = {"sessionId": session_id, "update": update}
        send({"jsonrpc": "2.0", "method": "session/update", "params": params})
    send({"jsonrpc": "2.0", "id": request_id, "result": {"stopReason": "end_turn"}})


def main() -> int:
    sessions = 0
    for line in sys.stdin.buffer:
        if not line.strip():
            continue
        msg = json.loads(line)
        method, request_id, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
        if request_id is None or method is None:
            continue  # notifications (cancel) and answers: nothing to do
        if method == "initialize":
            result: Any = {
                "protocolVersion": 1,
                "agentCapabilities": {"loadSession": False},
                "agentInfo": {"name": "stamp-agent", "version": "1"},
                "authMethods": [],
            }
        elif method == "session/new":
            sessions += 1
            result = {"sessionId": f"stamp-{sessions}"}
        elif method == "session/prompt":
            text = " ".join(b.get("text", "") for b in params.get("prompt", []) if isinstance(b, dict))
            threading.Thread(target=stream, args=(request_id, params["sessionId"], text), daemon=True).start()
            continue
        else:
            send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": method}})
            continue
        send({"jsonrpc": "2.0", "id": request_id, "result": result})
    return 0


if __name__ == "__main__":
    sys.exit(main())
