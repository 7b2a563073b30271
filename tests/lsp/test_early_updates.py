"""Updates an agent sends before the sidecar knows the session are delivered once it does.

Issue 11 item 9: after 2 000 updates for sessions that never appear, the updates a new
session sent before its session/new answer were dropped, and those sent during
session/resume were never delivered.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from tests.lsp.editor import Editor, open_editor

EARLY = Path(__file__).resolve().parents[1] / "agents" / "early_agent.py"
EARLY_ARGS = ["--agent", f"{sys.executable} {EARLY}"]


async def text_for(ed: Editor, session_id: str, text: str) -> dict[str, Any]:
    update: dict[str, Any] = await ed.wait_for(
        "acp/sessionUpdate",
        lambda u: u["sessionId"] == session_id and u["update"].get("content", {}).get("text") == text,
        timeout=20,
    )
    return update


async def test_updates_before_session_new_answer_survive_a_flood(workspace: Path, state_dir: Path) -> None:
    async with open_editor("neovim", workspace, state_dir, extra_args=EARLY_ARGS) as ed:
        first = (await ed.command("acp.session.new"))["sessionId"]
        await text_for(ed, first, f"early {first}")
        # Thousands of updates for sessions that never appear, on one id and on many.
        for ghosts in (1, 500):
            _, end = await ed.prompt_and_wait(f"flood 2500 {ghosts}", timeout=60)
            assert end["stopReason"] == "end_turn"
            created = (await ed.command("acp.session.new"))["sessionId"]
            update = await text_for(ed, created, f"early {created}")
            assert update["replay"] is False and update["turnId"] is None
        assert not any(u["sessionId"].startswith("ghost-") for u in ed.of("acp/sessionUpdate"))


async def test_updates_during_session_resume_are_delivered(workspace: Path, state_dir: Path) -> None:
    async with open_editor("vscode", workspace, state_dir, extra_args=EARLY_ARGS) as ed:
        resumed = await ed.command("acp.session.load", {"sessionId": "elsewhere-1", "cwd": str(workspace)})
        assert resumed == {"sessionId": "elsewhere-1"}
        update = await text_for(ed, "elsewhere-1", "resumed elsewhere-1")
        assert update["turnId"] is None
        updates = [u for u in ed.of("acp/sessionUpdate") if u["sessionId"] == "elsewhere-1"]
        assert len(updates) == 1, updates
