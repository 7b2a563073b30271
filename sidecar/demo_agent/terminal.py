"""``#terminal``: run a command in the client's terminal (ACP ``terminal/*``), the way Zed's agents do.

A permission request for an ``execute`` tool call first (which commands run is the user's choice),
then ``terminal/create``, the tool call shows the terminal (``{type: "terminal", terminalId}``
content) while it runs, ``terminal/wait_for_exit``, ``terminal/output``, ``terminal/release``.
A client that does not offer ``clientCapabilities.terminal`` gets a chunk saying nothing ran.

The command: ``ACP_DEMO_TERMINAL_COMMAND`` (a JSON list: program and arguments) when set, else a
short Python script printing a few lines (``#terminal``), or one printing a line every 0.2 s for two
minutes (``#terminal=slow``, for cancel and kill).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

from sidecar.demo_agent.catalog import ALLOW_OPTIONS
from sidecar.demo_agent.protocol import JsonObject, RpcError, log
from sidecar.demo_agent.tools import COMMAND_TOOL, ask_permission
from sidecar.demo_agent.turn import Turn, TurnCancelled

RELEASE_TIMEOUT = 10.0
OUTPUT_LIMIT = 64 * 1024
_SHORT = (
    "import time\n"
    "for i in range(5):\n"
    "    print(f'demo terminal line {i} ✓', flush=True)\n"
    "    time.sleep(0.1)\n"
)
_SLOW = (
    "import time\n"
    "for i in range(600):\n"
    "    print(f'slow terminal line {i}', flush=True)\n"
    "    time.sleep(0.2)\n"
)


def command(variant: str | None) -> list[str]:
    raw = os.environ.get("ACP_DEMO_TERMINAL_COMMAND")
    if raw:
        argv = json.loads(raw)
        if isinstance(argv, list) and argv and all(isinstance(a, str) for a in argv):
            return argv
    return [sys.executable, "-c", _SLOW if variant == "slow" else _SHORT]


async def run(turn: Turn, variant: str | None) -> str:
    message_id = turn.new_id("msg")
    if not turn.agent.client_terminal:
        turn.chunk(
            "The client offers no terminal (clientCapabilities.terminal): nothing ran.", message_id=message_id
        )
        return "end_turn"
    argv = command(variant)
    tool_id = turn.new_id("term")
    shown = " ".join(argv)[:200]
    tool_call: JsonObject = {
        "toolCallId": tool_id,
        "title": f"Run `{shown}`",
        "name": COMMAND_TOOL,
        "kind": "execute",
        "status": "pending",
        "rawInput": {"command": argv},
    }
    turn.update({"sessionUpdate": "tool_call", **tool_call})
    if await ask_permission(turn, tool_call) not in ALLOW_OPTIONS:
        turn.tool_status(tool_id, "failed")
        turn.chunk("Not allowed, so I did not run the command.", message_id=message_id)
        return "end_turn"
    session_id = turn.record.session_id
    try:
        created = await turn.call(
            "terminal/create",
            {
                "sessionId": session_id,
                "command": argv[0],
                "args": argv[1:],
                "env": [{"name": "ACP_DEMO_TERMINAL", "value": "1"}],
                "cwd": turn.cwd,
                "outputByteLimit": OUTPUT_LIMIT,
            },
        )
    except RpcError as exc:
        turn.fail_tool(tool_id, "terminal/create failed", exc)
        turn.chunk(f"The client could not start the command: {exc.message}", message_id=message_id)
        return "end_turn"
    terminal_id = str(created.get("terminalId"))
    ids = {"sessionId": session_id, "terminalId": terminal_id}
    try:
        turn.update(
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": tool_id,
                "status": "in_progress",
                "content": [{"type": "terminal", "terminalId": terminal_id}],
            }
        )
        status = await turn.call("terminal/wait_for_exit", ids)
        output = await turn.call("terminal/output", ids)
    except RpcError as exc:
        turn.fail_tool(tool_id, "the terminal failed", exc)
        await _release(turn, ids)
        return "end_turn"
    except TurnCancelled:
        await _release(turn, ids)
        raise
    await _release(turn, ids)
    ok = status.get("exitCode") == 0
    turn.tool_status(tool_id, "completed" if ok else "failed")
    lines = str(output.get("output", "")).rstrip("\n").split("\n")
    signal = status.get("signal")
    how = f"code {status.get('exitCode')}" if signal is None else f"signal {signal}"
    turn.chunk(
        f"The command ended with {how}; its last line was “{lines[-1]}” "
        f"({len(lines)} lines{', truncated' if output.get('truncated') else ''}).",
        message_id=message_id,
    )
    return "end_turn"


async def _release(turn: Turn, ids: JsonObject) -> None:
    """Release even after a cancel (the command must not outlive its turn); errors only logged."""
    try:
        await asyncio.wait_for(turn.conn.request("terminal/release", ids), RELEASE_TIMEOUT)
    except (RpcError, TimeoutError, OSError) as exc:
        log(f"terminal/release failed: {exc!r}")
