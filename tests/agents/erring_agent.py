"""An ACP agent that starts fine and answers chosen methods with a chosen error.

`ERRING_AGENT_ERRORS` is a JSON object {method: error object}; those methods answer
that error (with its `data`), every other method a plain success. `session/list` is
offered, so a sidecar reconciles at start.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

ERRORS: dict[str, Any] = json.loads(os.environ.get("ERRING_AGENT_ERRORS", "{}"))
SESSIONS = 0


def answer(msg_id: Any, method: str) -> dict[str, Any]:
    global SESSIONS
    if method in ERRORS:
        return {"jsonrpc": "2.0", "id": msg_id, "error": ERRORS[method]}
    if method == "initialize":
        result: Any = {
            "protocolVersion": 1,
            "agentCapabilities": {"sessionCapabilities": {"list": {}}},
            "agentInfo": {"name": "erring-agent", "version": "1"},
        }
    elif method == "session/new":
        SESSIONS += 1
        result = {"sessionId": f"erring-{SESSIONS}"}
    elif method == "session/list":
        result = {"sessions": []}
    elif method == "session/prompt":
        result = {"stopReason": "end_turn"}
    else:
        result = {}
    return {"jsonrpc": "2.0", "id": msg_id, "result": result}


def main() -> None:
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if isinstance(msg, dict) and "id" in msg and isinstance(msg.get("method"), str):
            sys.stdout.write(json.dumps(answer(msg["id"], msg["method"])) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
