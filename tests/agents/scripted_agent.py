"""A hostile, scriptable ACP agent for tests: it does exactly what the prompt says.

The prompt's text is a JSON list of steps; each step's result is reported back
as an agent_message_chunk whose text is `RESULT <index> <json>`, so a test can
read what the sidecar answered. Unlike the demo agent it does not guard itself:
it asks for paths outside the workspace, sends malformed frames, crashes.

Steps:
  {"read": PATH, "line"?: N, "limit"?: N}    fs/read_text_file
  {"write": PATH, "content": TEXT}           fs/write_text_file
  {"permission": KIND}                       session/request_permission for a tool call of KIND
  {"update": {...}}                          a session/update with that update object
  {"chunk": TEXT, "times"?: N}               an agent_message_chunk of TEXT repeated N times (1)
  {"update_for": SESSION_ID, "update": {...}} a session/update for another session id
  {"raw": TEXT}                              write TEXT as one line, as is
  {"request": METHOD, "params": ...}         any request to the client
  {"sleep": SECONDS}
  {"exit": CODE}                             exit at once
  {"stop": REASON}                           the stop reason to answer (default end_turn)
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import sys
from typing import Any

_ids = itertools.count(1000)
_pending: dict[int, asyncio.Future[Any]] = {}
_sessions: dict[str, str] = {}


def send(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


async def request(method: str, params: Any) -> dict[str, Any]:
    rid = next(_ids)
    fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    _pending[rid] = fut
    send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
    msg: dict[str, Any] = await fut
    return msg


def update(session_id: str, upd: dict[str, Any]) -> None:
    send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session_id, "update": upd}})


async def run_prompt(msg_id: Any, params: dict[str, Any]) -> None:
    sid = params["sessionId"]
    text = "".join(b.get("text", "") for b in params.get("prompt", []) if b.get("type") == "text")
    try:
        steps = json.loads(text, strict=False)  # a prompt typed in an editor may hold a raw form feed
    except ValueError:
        steps = []
    stop = "end_turn"
    for index, step in enumerate(steps):
        result: Any = None
        if "read" in step:
            args = {"sessionId": sid, "path": step["read"]}
            args.update({k: step[k] for k in ("line", "limit") if k in step})
            result = await request("fs/read_text_file", args)
        elif "write" in step:
            result = await request(
                "fs/write_text_file", {"sessionId": sid, "path": step["write"], "content": step["content"]}
            )
        elif "permission" in step:
            call = {
                "toolCallId": f"call-{index}",
                "title": f"{step['permission']} something",
                "kind": step["permission"],
            }
            update(sid, {"sessionUpdate": "tool_call", **call, "status": "pending"})
            options = [
                {"optionId": "yes", "name": "Allow", "kind": "allow_once"},
                {"optionId": "no", "name": "Reject", "kind": "reject_once"},
            ]
            result = await request(
                "session/request_permission", {"sessionId": sid, "toolCall": call, "options": options}
            )
        elif "chunk" in step:
            text = step["chunk"] * step.get("times", 1)
            update(sid, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}})
        elif "update" in step and "update_for" in step:
            update(step["update_for"], step["update"])
        elif "update" in step:
            update(sid, step["update"])
        elif "raw" in step:
            sys.stdout.write(step["raw"] + "\n")
            sys.stdout.flush()
        elif "request" in step:
            result = await request(step["request"], step.get("params"))
        elif "sleep" in step:
            await asyncio.sleep(step["sleep"])
        elif "exit" in step:
            os._exit(step["exit"])
        elif "stop" in step:
            stop = step["stop"]
        if result is not None:
            shown = {k: v for k, v in result.items() if k in ("result", "error")}
            update(
                sid,
                {
                    "sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": f"RESULT {index} {json.dumps(shown)}\n"},
                },
            )
    send({"jsonrpc": "2.0", "id": msg_id, "result": {"stopReason": stop}})


async def main() -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=2**26)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    tasks: set[asyncio.Task[None]] = set()
    while line := await reader.readline():
        msg = json.loads(line)
        method = msg.get("method")
        if method is None:
            fut = _pending.pop(msg.get("id"), None)
            if fut is not None:
                fut.set_result(msg)
            continue
        params = msg.get("params") or {}
        if method == "initialize":
            send(
                {
                    "jsonrpc": "2.0",
                    "id": msg["id"],
                    "result": {
                        "protocolVersion": 1,
                        "agentCapabilities": {"loadSession": False, "promptCapabilities": {}},
                        "agentInfo": {"name": "scripted-agent", "version": "1"},
                        "authMethods": [],
                    },
                }
            )
        elif method == "session/new":
            sid = f"scripted-{len(_sessions) + 1}"
            _sessions[sid] = params["cwd"]
            send({"jsonrpc": "2.0", "id": msg["id"], "result": {"sessionId": sid}})
        elif method == "session/prompt":
            task = asyncio.create_task(run_prompt(msg["id"], params))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        elif method == "session/cancel":
            pass
        elif "id" in msg:
            send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": f"no {method}"}})


if __name__ == "__main__":
    asyncio.run(main())
