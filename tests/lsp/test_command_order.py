"""Commands apply in the order the editor sent them, also while the agent is still starting."""

from __future__ import annotations

import asyncio
import shlex
import sys
from pathlib import Path

import pytest

from tests.lsp.editor import open_editor

# The demo agent, started one second late: commands sent at once arrive before it is up.
SLOW_START = ["--agent", f"sh -c {shlex.quote(f'sleep 1; exec {sys.executable} -m sidecar.demo_agent')}"]


@pytest.mark.parametrize("profile", ["neovim", "helix"])
async def test_rename_right_after_prompt_applies_to_the_session_the_prompt_creates(
    profile: str, workspace: Path, state_dir: Path
) -> None:
    async with open_editor(profile, workspace, state_dir, extra_args=SLOW_START, wait_idle=False) as ed:
        # `:AcpPrompt ...` then `:AcpRename ...` while the sidecar starts: sent back to back.
        prompt = asyncio.ensure_future(ed.command("acp.prompt", "#chunks=2 first words"))
        await asyncio.sleep(0)
        rename = asyncio.ensure_future(ed.command("acp.session.rename", "Renamed at start"))
        admitted, renamed = await asyncio.gather(prompt, rename)
        assert renamed == {"sessionId": admitted["sessionId"], "requestedTitle": "Renamed at start"}
        info = await ed.wait_for(
            "acp/sessionInfo",
            lambda i: i["sessionId"] == admitted["sessionId"] and i["renameState"] == "confirmed",
        )
        assert info["title"] == "Renamed at start"
        await ed.wait_turn_end(admitted["turnId"])
        status = await ed.command("acp.status")
        assert status["sessionId"] == admitted["sessionId"] and status["title"] == "Renamed at start"


async def test_status_is_answered_at_once_while_earlier_commands_wait(
    workspace: Path, state_dir: Path
) -> None:
    async with open_editor("vscode", workspace, state_dir, extra_args=SLOW_START, wait_idle=False) as ed:
        prompt = asyncio.ensure_future(ed.command("acp.prompt", "#chunks=1 hello"))
        # The prompt starts the agent (agents start on first use), slowly.
        await ed.wait_for("acp/status", lambda s: s["state"] == "starting")
        status = await ed.command("acp.status", timeout=5)
        assert not prompt.done(), "the prompt waits for the agent; acp.status does not wait for the prompt"
        assert status["state"] == "starting"
        admitted = await prompt
        await ed.wait_turn_end(admitted["turnId"])


async def test_many_commands_in_a_row_keep_their_order(workspace: Path, state_dir: Path) -> None:
    async with open_editor("vscode", workspace, state_dir, extra_args=SLOW_START, wait_idle=False) as ed:
        sends = []
        for index in range(5):
            sends.append(asyncio.ensure_future(ed.command("acp.prompt", f"#chunks=1 p{index}")))
            await asyncio.sleep(0)
        admitted = await asyncio.gather(*sends)
        assert len({a["sessionId"] for a in admitted}) == 1, "one session, created by the first prompt"
        for turn in admitted:
            await ed.wait_turn_end(turn["turnId"])
        running = [t["turnId"] for t in ed.of("acp/turn") if t["state"] == "running"]
        assert running == [a["turnId"] for a in admitted]
