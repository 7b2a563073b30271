"""An ACP agent that sends session updates before it answers session/new and session/resume.

The protocol lets an agent do that (updates are notifications, the answer comes
when it comes); the sidecar must deliver them once it knows the session.

- `session/new`: `agent_message_chunk` "early <id>" for the new id, then the answer.
- `session/resume` (any id): `agent_message_chunk` "resumed <id>", then the answer.
- `session/prompt` with text `flood N K`: N updates spread over K session ids that
  never appear (`ghost-0`..`ghost-K-1`), then `end_turn`. Other text: `end_turn`.
"""

from __future__ import annotations

import json
import sys
from typing import Any

_count = 0


def send(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def chunk(session_id: str, text: str) -> None:
    update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}
    send(
        {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session_id, "update": update}}
    )


def answer(msg_id: Any, result: dict[str, Any]) -> None:
    send({"jsonrpc": "2.0", "id": msg_id, "result": result})


def main() -> None:
    global _count
    for line in sys.stdin:
        msg = json.loads(line)
        method, params, msg_id = msg.get("method"), msg.get("params") or {}, msg.get("id")
        if method == "initialize":
            answer(
                msg_id,
                {
                    "protocolVersion": 1,
                    "agentCapabilities": {"loadSession": False, "sessionCapabilities": {"resume": {}}},
                    "agentInfo": {"name": "early-agent", "version": "1"},
                    "authMethods": [],
                },
            )
        elif method == "session/new":
            _count += 1
            session_id = f"early-{_count}"
            chunk(session_id, f"early {session_id}")
            answer(msg_id, {"sessionId": session_id})
        elif method == "session/resume":
            chunk(params["sessionId"], f"resumed {params['sessionId']}")
            answer(msg_id, {})
        elif method == "session/prompt":
            text = "".join(b.get("text", "") for b in params.get("prompt", []) if b.get("type") == "text")
            words = text.split()
            if len(words) == 3 and words[0] == "flood":
                total, ghosts = int(words[1]), int(words[2])
                for index in range(total):
                    chunk(f"ghost-{index % ghosts}", "boo")
            answer(msg_id, {"stopReason": "end_turn"})
        elif msg_id is not None and method is not None:
            send({"jsonrpc": "2.0", "id": msg_id, "error": {"code": -32601, "message": f"no {method}"}})


if __name__ == "__main__":
    main()
