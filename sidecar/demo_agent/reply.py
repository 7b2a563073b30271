"""The normal reply: a plan, a read of the file the prompt is about, and a canned streamed answer."""

from __future__ import annotations

import math
import os

from sidecar.demo_agent import script as scripting
from sidecar.demo_agent import tools
from sidecar.demo_agent.tools import ReadResult
from sidecar.demo_agent.turn import Turn

PLAN_PRIORITIES = ["high", "medium", "low"]
CHUNK_TARGET = 22


def split_chunks(text: str, target: int = CHUNK_TARGET) -> list[str]:
    """A few words per chunk, about ``target`` chunks (15-30 for our texts)."""
    words = text.split(" ")
    count = len(words)
    group = min(range(1, count + 1), key=lambda g: (abs(math.ceil(count / g) - target), g))
    pieces = [" ".join(words[i : i + group]) for i in range(0, count, group)]
    return [piece + " " for piece in pieces[:-1]] + pieces[-1:]


def plan(turn: Turn, statuses: list[str], first: str) -> None:
    contents = [first, "Think about the question", "Write the answer"]
    turn.update(
        {
            "sessionUpdate": "plan",
            "entries": [
                {"content": c, "priority": p, "status": s}
                for c, p, s in zip(contents, PLAN_PRIORITIES, statuses, strict=True)
            ],
        }
    )


async def default_reply(turn: Turn) -> None:
    target = tools.read_target(turn)
    first = f"Read {tools.rel(turn, target)}" if target else "Look for a file to read"
    delay = turn.chunk_delay(turn.agent.settings.chunk_delay_ms)
    plan(turn, ["in_progress", "pending", "pending"], first)
    result = await tools.read_step(turn, target) if target else None
    plan(turn, ["completed", "in_progress", "pending"], first)
    await turn.pause(delay)
    plan(turn, ["completed", "completed", "in_progress"], first)
    await turn.stream(split_chunks(answer(turn, result)), delay)
    plan(turn, ["completed", "completed", "completed"], first)


def answer(turn: Turn, result: ReadResult | None) -> str:
    config = turn.record.config
    parts: list[str] = []
    context = tools.context_blocks(turn)
    if context:
        parts.append(f"Context received: {'; '.join(context)}.")
    if result is None:
        parts.append(
            "I looked for a file to read but found none in your workspace, so this answer is general."
        )
    elif result.error is not None:
        parts.append(f"I tried to read {result.rel} but the editor refused: {result.error}.")
    else:
        text = result.text or ""
        lines = text.splitlines()
        folder = os.path.dirname(result.rel)
        where = "at the root of your workspace" if not folder else f"in {folder} of your workspace"
        first_line = " ".join(lines[0].split())[:60] if lines else ""
        parts.append(f"{result.rel} is {where} and it has {len(lines)} lines.")
        if first_line:
            parts.append(f"It starts with “{first_line}”.")
    asked = scripting.derive_title(turn.script.text) or "nothing in particular"
    parts.append(f"You asked about “{asked}”.")
    parts.append(
        f"I am the acp-sidecar demo agent, in {turn.record.mode_id} mode with the "
        f"{config['model']} model: my answers are canned and deterministic."
    )
    if config["verbosity"] != "terse":
        parts.append(
            "Try #edit to see a diff and a permission request, or /help to list every keyword I know."
        )
    return " ".join(parts)
