"""A cancel sent right after a prompt (or a rename) cancels that turn, whatever its start-up state.

Issue 11 item 8: the prompt answered position 0, the cancel that followed it answered
`{cancelled: false}` and the turn ran to `end_turn`. Each test sends the prompt and the
cancel back to back on the real LSP pipe (the cancel does not wait for the prompt's
answer), so the cancel reaches the sidecar while the turn is still starting.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tests.lsp.editor import Editor, open_editor


async def prompt_then_cancel(ed: Editor, prompt: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    """Send acp.prompt and acp.cancel in this order without waiting in between."""
    admitted, cancelled = await asyncio.gather(ed.command("acp.prompt", prompt), ed.command("acp.cancel", {}))
    return admitted, cancelled


def ended(ed: Editor, turn_id: str) -> list[dict[str, Any]]:
    return [t for t in ed.turn_events(turn_id) if t["state"] == "ended"]


async def test_cancel_right_after_prompt_cancels_it(workspace: Path, state_dir: Path) -> None:
    async with open_editor("neovim", workspace, state_dir) as ed:
        await ed.command("acp.session.new")
        admitted, cancelled = await prompt_then_cancel(ed, {"text": "#slow #chunks=30 a long answer"})
        assert admitted["position"] == 0
        assert cancelled == {"cancelled": True}
        end = await ed.wait_turn_end(admitted["turnId"], timeout=20)
        assert end["stopReason"] == "cancelled" and end["error"] is None
        # The agent never streamed the whole answer: at most what it sent before it stopped.
        assert len(ed.text_of(admitted["turnId"])) < len("".join(f"c{i} " for i in range(30)))
        # The session takes the next prompt normally, and the cancelled turn ended once.
        _, after = await ed.prompt_and_wait("#chunks=2 next")
        assert after["stopReason"] == "end_turn"
        assert len(ended(ed, admitted["turnId"])) == 1


async def test_cancel_right_after_the_prompt_that_creates_the_session(
    workspace: Path, state_dir: Path
) -> None:
    async with open_editor("vscode", workspace, state_dir) as ed:
        admitted, cancelled = await prompt_then_cancel(ed, {"text": "#slow #chunks=30 first words"})
        assert admitted["position"] == 0
        assert cancelled == {"cancelled": True}
        end = await ed.wait_turn_end(admitted["turnId"], timeout=20)
        assert end["stopReason"] == "cancelled"
        assert (await ed.command("acp.status"))["sessionId"] == admitted["sessionId"]
        assert len(ended(ed, admitted["turnId"])) == 1


async def test_cancel_right_after_rename_cancels_the_rename_turn(workspace: Path, state_dir: Path) -> None:
    # The slow rename keeps the turn running for 2 s, so only the cancel can end it early. A rename
    # is a turn only without session/set_title (the demo agent offers it unless told not to).
    env = {"ACP_DEMO_RENAME": "slow", "ACP_DEMO_CAPS": "no-set-title"}
    async with open_editor("vscode", workspace, state_dir, env=env) as ed:
        sid = (await ed.command("acp.session.new"))["sessionId"]
        mark = ed.mark()
        renamed, cancelled = await asyncio.gather(
            ed.command("acp.session.rename", {"title": "Never confirmed"}), ed.command("acp.cancel", {})
        )
        assert renamed == {"sessionId": sid, "requestedTitle": "Never confirmed"}
        assert cancelled == {"cancelled": True}
        turn = await ed.wait_for("acp/turn", lambda t: t["state"] == "ended", start=mark, timeout=20)
        assert turn["stopReason"] == "cancelled"
        info = await ed.wait_for(
            "acp/sessionInfo", lambda i: i["renameState"] not in ("pending", None), start=mark, timeout=20
        )
        assert info["renameState"] == "unconfirmed"
        assert len(ended(ed, turn["turnId"])) == 1


async def test_cancel_while_the_agent_restarts(workspace: Path, state_dir: Path) -> None:
    async with open_editor("helix", workspace, state_dir) as ed:
        await ed.command("acp.session.new")
        crashed = await ed.command("acp.prompt", "#crash")
        await ed.wait_turn_end(crashed["turnId"], timeout=20)
        await ed.wait_for("acp/status", lambda s: s["state"] == "disconnected", timeout=20)
        # The next prompt restarts the agent and re-attaches the session: cancel it meanwhile.
        admitted, cancelled = await prompt_then_cancel(ed, {"text": "#chunks=5 after the crash"})
        assert cancelled == {"cancelled": True}
        end = await ed.wait_turn_end(admitted["turnId"], timeout=20)
        assert end["stopReason"] == "cancelled"
        assert ed.text_of(admitted["turnId"]) == ""
        _, after = await ed.prompt_and_wait("#chunks=2 then this one")
        assert after["stopReason"] == "end_turn"
        assert len(ended(ed, admitted["turnId"])) == 1
