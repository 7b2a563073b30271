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
  {"update": {...}, "times": N}              N of them, written at once (a burst); "{i}" in the
                                             update's strings is the index of each (0 .. N-1)
  {"chunk": TEXT, "times"?: N}               an agent_message_chunk of TEXT repeated N times (1)
  {"update_for": SESSION_ID, "update": {...}} a session/update for another session id
  {"raw": TEXT}                              write TEXT as one line, as is
  {"request": METHOD, "params": ...}         any request to the client
  {"notify": METHOD, "params": ...}          any notification to the client
  {"at_once": [{"request": ..., "params": ...}, ...]}  those requests all sent before any answer;
                                             the result is {"result": [each {result|error}]}
  {"sleep": SECONDS}
  {"disk_write": PATH, "content": TEXT}      write the disk itself, as claude-agent-acp does
  {"wait_file": PATH}                        wait (up to 30 s) until PATH exists: a test's signal
  {"exit": CODE}                             exit at once
  {"stop": REASON}                           the stop reason to answer (default end_turn)
  {"include": PATH}                          the steps of that JSON file (a list), in place (the
                                             RESULT indexes count them): big input, small prompt

A step with "brief": true reports its result with every string over 200 characters replaced by
its length ("<N chars>"): a big answer (a terminal's output) is not echoed into the conversation.

Environment: SCRIPTED_LONG_ID=N makes the first session/new answer a session id of N characters;
SCRIPTED_LONG_NAME=N names the agent with N characters;
SCRIPTED_LIST=1 offers session/list (the sessions made so far, and one with an id that long).
Quirks of production agents (../shared/PRODUCTION-AGENTS.md):
SCRIPTED_INIT_DELAY=SECONDS answers initialize that late (OpenCode takes 5-20 s);
SCRIPTED_AUTH=JSON is the authMethods answered (default []; agentpool answers null);
SCRIPTED_INFO=JSON is the agentInfo answered (default {"name": "scripted-agent", "version": "1"});
SCRIPTED_AFTER_NEW=JSON, a list of updates sent for a new session right after its session/new
answer, outside any turn (pi-acp sends an agent_message_chunk "\n");
SCRIPTED_VENDOR_TITLE=1 answers Mistral Vibe's `_session/set_title {sessionId, title}` with {}
and then sends session_info_update with that title (session/set_title stays -32601).
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


def burst(session_id: str, upd: dict[str, Any], times: int) -> None:
    """`times` updates written in one go, "{i}" in their strings numbered."""
    template = json.dumps(
        {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session_id, "update": upd}}
    )
    sys.stdout.write("".join(template.replace("{i}", str(i)) + "\n" for i in range(times)))
    sys.stdout.flush()


def brief(value: Any) -> Any:
    """`value` with every string over 200 characters replaced by its length."""
    if isinstance(value, str):
        return f"<{len(value)} chars>" if len(value) > 200 else value
    if isinstance(value, dict):
        return {k: brief(v) for k, v in value.items()}
    if isinstance(value, list):
        return [brief(v) for v in value]
    return value


async def run_prompt(msg_id: Any, params: dict[str, Any]) -> None:
    sid = params["sessionId"]
    text = "".join(b.get("text", "") for b in params.get("prompt", []) if b.get("type") == "text")
    try:
        steps = json.loads(text, strict=False)  # a prompt typed in an editor may hold a raw form feed
    except ValueError:
        steps = []
    stop = "end_turn"
    steps = [s for step in steps for s in (_included(step["include"]) if "include" in step else [step])]
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
        elif "update" in step and "times" in step:
            burst(step.get("update_for", sid), step["update"], step["times"])
        elif "update" in step and "update_for" in step:
            update(step["update_for"], step["update"])
        elif "update" in step:
            update(sid, step["update"])
        elif "raw" in step:
            sys.stdout.write(step["raw"] + "\n")
            sys.stdout.flush()
        elif "request" in step:
            result = await request(step["request"], step.get("params"))
        elif "notify" in step:
            send({"jsonrpc": "2.0", "method": step["notify"], "params": step.get("params")})
        elif "at_once" in step:
            answers = await asyncio.gather(*(request(r["request"], r.get("params")) for r in step["at_once"]))
            result = {"result": [{k: v for k, v in a.items() if k in ("result", "error")} for a in answers]}
        elif "sleep" in step:
            await asyncio.sleep(step["sleep"])
        elif "disk_write" in step:
            with open(step["disk_write"], "w", encoding="utf-8") as handle:
                handle.write(step["content"])
        elif "wait_file" in step:
            for _ in range(600):
                if os.path.exists(step["wait_file"]):
                    break
                await asyncio.sleep(0.05)
        elif "exit" in step:
            os._exit(step["exit"])
        elif "stop" in step:
            stop = step["stop"]
        if result is not None:
            shown = {k: v for k, v in result.items() if k in ("result", "error")}
            if step.get("brief"):
                shown = brief(shown)
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
            caps: dict[str, Any] = {"loadSession": False, "promptCapabilities": {}}
            if os.environ.get("SCRIPTED_LIST"):
                caps["sessionCapabilities"] = {"list": {}}
            await asyncio.sleep(float(os.environ.get("SCRIPTED_INIT_DELAY") or 0))
            info = {"name": _long_name() or "scripted-agent", "version": "1"}
            send(
                {
                    "jsonrpc": "2.0",
                    "id": msg["id"],
                    "result": {
                        "protocolVersion": 1,
                        "agentCapabilities": caps,
                        "agentInfo": json.loads(os.environ.get("SCRIPTED_INFO") or json.dumps(info)),
                        "authMethods": json.loads(os.environ.get("SCRIPTED_AUTH") or "[]"),
                    },
                }
            )
        elif method == "session/new":
            sid = f"scripted-{len(_sessions) + 1}"
            if not _sessions and _long_id():
                sid = _long_id()
            _sessions[sid] = params["cwd"]
            send({"jsonrpc": "2.0", "id": msg["id"], "result": {"sessionId": sid}})
            for upd in json.loads(os.environ.get("SCRIPTED_AFTER_NEW") or "[]"):
                update(sid, upd)
        elif method == "_session/set_title" and os.environ.get("SCRIPTED_VENDOR_TITLE"):
            send({"jsonrpc": "2.0", "id": msg["id"], "result": {}})
            update(params["sessionId"], {"sessionUpdate": "session_info_update", "title": params["title"]})
        elif method == "session/list":
            listed = [{"sessionId": k, "cwd": v, "title": f"title of {k[:20]}"} for k, v in _sessions.items()]
            if _long_id():
                cwd = params.get("cwd") or "/"
                listed.append({"sessionId": _long_id("listed-"), "cwd": cwd, "title": "long"})
            send({"jsonrpc": "2.0", "id": msg["id"], "result": {"sessions": listed}})
        elif method == "session/prompt":
            task = asyncio.create_task(run_prompt(msg["id"], params))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        elif method == "session/cancel":
            pass
        elif "id" in msg:
            send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": f"no {method}"}})


def _included(path: str) -> list[Any]:
    with open(path, encoding="utf-8") as handle:
        included: list[Any] = json.load(handle)
    return included


def _long_name() -> str:
    return "n" * int(os.environ.get("SCRIPTED_LONG_NAME") or 0)


def _long_id(prefix: str = "long-") -> str:
    length = int(os.environ.get("SCRIPTED_LONG_ID") or 0)
    return (prefix + "x" * length)[:length] if length else ""


if __name__ == "__main__":
    asyncio.run(main())
