"""``#elicit``: ask the user a question through the client (ACP ``elicitation/create``).

``#elicit`` sends a form with one field of each kind (string with a format, integer with bounds,
number, boolean, single choice, multi-select); ``#elicit=choice`` a form of a single choice and
a yes/no (what an editor can ask with plain dialogs); ``#elicit=busy`` the form of ``#elicit`` while thoughts
stream (one every 100 ms) until it is answered; ``#elicit=url`` a URL to open, followed by
``elicitation/complete`` once the client accepted; ``#elicit=bad`` a schema no client can ask
(a required field that does not exist). The answer comes back as one chunk: the action and the
content as JSON, so tests and users see exactly what the agent received. A client that does not
offer ``clientCapabilities.elicitation`` gets a chunk saying nothing was asked.
"""

from __future__ import annotations

import asyncio
import json

from sidecar.demo_agent.protocol import JsonObject, RpcError
from sidecar.demo_agent.turn import Turn

FULL_FORM: JsonObject = {
    "type": "object",
    "title": "Release details",
    "properties": {
        "email": {"type": "string", "title": "Your email", "format": "email"},
        "count": {"type": "integer", "title": "How many", "minimum": 1, "maximum": 10, "default": 3},
        "ratio": {"type": "number", "title": "Ratio"},
        "notify": {"type": "boolean", "title": "Notify the team", "default": False},
        "channel": {
            "type": "string",
            "title": "Channel",
            "oneOf": [{"const": "stable", "title": "Stable"}, {"const": "beta", "title": "Beta"}],
        },
        "targets": {
            "type": "array",
            "title": "Targets",
            "items": {"type": "string", "enum": ["linux", "mac", "windows"]},
            "minItems": 1,
        },
    },
    "required": ["email", "count", "channel"],
}
CHOICE_FORM: JsonObject = {
    "type": "object",
    "properties": {
        "channel": {"type": "string", "title": "Channel", "enum": ["stable", "beta"]},
        "notify": {"type": "boolean", "title": "Notify the team"},
    },
    "required": ["channel"],
}
BAD_FORM: JsonObject = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["missing"]}
URL = "https://example.com/acp-demo/authorize"
BUSY_THOUGHTS = 600  # a minute of thoughts at most


async def run(turn: Turn, variant: str) -> str:
    message_id = turn.new_id("msg")
    if not turn.agent.client_elicitation:
        turn.chunk(
            "The client offers no elicitation (clientCapabilities.elicitation): nothing asked.",
            message_id=message_id,
        )
        return "end_turn"
    scope: JsonObject = {"sessionId": turn.record.session_id}
    if variant == "url":
        elicitation_id = turn.new_id("url")
        params: JsonObject = {
            **scope,
            "mode": "url",
            "elicitationId": elicitation_id,
            "url": URL,
            "message": "Authorize the demo agent",
        }
    else:
        schema = {"form": FULL_FORM, "busy": FULL_FORM, "choice": CHOICE_FORM, "bad": BAD_FORM}[variant]
        params = {**scope, "mode": "form", "message": "A few details, please", "requestedSchema": schema}
    # "busy": the agent goes on writing while the question waits (a thought every 100 ms).
    chatter = asyncio.ensure_future(_think_aloud(turn)) if variant == "busy" else None
    try:
        answer = await turn.call("elicitation/create", params)
    except RpcError as exc:
        turn.chunk(f"The client refused the question: {exc.message}", message_id=message_id)
        return "end_turn"
    finally:
        if chatter is not None:
            chatter.cancel()
    if variant == "url" and isinstance(answer, dict) and answer.get("action") == "accept":
        turn.conn.notify("elicitation/complete", {"elicitationId": params["elicitationId"]})
    turn.chunk(f"Elicitation answer: {json.dumps(answer, sort_keys=True)}", message_id=message_id)
    return "end_turn"


async def _think_aloud(turn: Turn) -> None:
    message_id = turn.new_id("thought")
    for index in range(BUSY_THOUGHTS):
        await asyncio.sleep(0.1)
        turn.update(
            {
                "sessionUpdate": "agent_thought_chunk",
                "content": {"type": "text", "text": f"waiting {index}. "},
                "messageId": message_id,
            }
        )
