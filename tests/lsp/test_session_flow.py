"""End to end over a real LSP pipe: the sidecar and the demo agent as real processes."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.lsp.editor import PROFILES, open_editor

pytestmark = pytest.mark.parametrize("profile", PROFILES)


async def test_prompt_streams_in_order_and_ends_once(profile: str, workspace: Path, state_dir: Path) -> None:
    async with open_editor(profile, workspace, state_dir) as ed:
        created = await ed.command("acp.session.new", {})
        sid = created["sessionId"]
        admitted, end = await ed.prompt_and_wait("Where is the README? Do not change files.")
        assert admitted["sessionId"] == sid and admitted["position"] == 0
        assert end["stopReason"] == "end_turn" and end["error"] is None
        states = [t["state"] for t in ed.turn_events(admitted["turnId"])]
        assert states == ["queued", "running", "ended"]
        updates = [u for u in ed.of("acp/sessionUpdate") if u["turnId"] == admitted["turnId"]]
        kinds = [u["update"]["sessionUpdate"] for u in updates]
        assert "plan" in kinds and "tool_call" in kinds and "agent_message_chunk" in kinds
        assert kinds.index("tool_call") < max(i for i, k in enumerate(kinds) if k == "agent_message_chunk")
        assert all(u["replay"] is False and u["sessionId"] == sid for u in updates)
        assert "README" in ed.text_of(admitted["turnId"])


async def test_prompt_without_session_creates_one(profile: str, workspace: Path, state_dir: Path) -> None:
    async with open_editor(profile, workspace, state_dir) as ed:
        admitted, end = await ed.prompt_and_wait("hello there")
        assert end["stopReason"] == "end_turn"
        status = await ed.command("acp.status", {})
        assert status["sessionId"] == admitted["sessionId"]
        assert status["state"] == "idle"


async def test_progress_begin_report_end(profile: str, workspace: Path, state_dir: Path) -> None:
    async with open_editor(profile, workspace, state_dir) as ed:
        await ed.command("acp.session.new", {})
        await ed.prompt_and_wait("Where is the README?")
        await asyncio.sleep(0.2)
        reports = [r for token, r in ed.client.progress_reports.items() if str(token).startswith("acp-turn")]
        assert len(reports) == 1, ed.client.progress_reports
        values = reports[0]
        assert values[0].kind == "begin" and values[-1].kind == "end"
        assert values[-1].message == "end_turn"
        assert any(v.kind == "report" and "README" in (v.message or "") for v in values)
        assert sum(v.kind == "end" for v in values) == 1


async def test_queued_prompts_run_in_order(profile: str, workspace: Path, state_dir: Path) -> None:
    async with open_editor(profile, workspace, state_dir) as ed:
        await ed.command("acp.session.new", {})
        first = await ed.command("acp.prompt", {"text": "#chunks=5 #slow=60 one"})
        second = await ed.command("acp.prompt", {"text": "#chunks=3 two"})
        third = await ed.command("acp.prompt", "#chunks=2 three")
        assert [first["position"], second["position"], third["position"]] == [0, 1, 2]
        for turn in (first, second, third):
            await ed.wait_turn_end(turn["turnId"])
        running = [t["turnId"] for t in ed.of("acp/turn") if t["state"] == "running"]
        ended = [t["turnId"] for t in ed.of("acp/turn") if t["state"] == "ended"]
        order = [first["turnId"], second["turnId"], third["turnId"]]
        assert running == order and ended == order
        assert ed.text_of(first["turnId"]) == "c0 c1 c2 c3 c4 "
        assert ed.text_of(third["turnId"]) == "c0 c1 "


async def test_cancel_mid_stream(profile: str, workspace: Path, state_dir: Path) -> None:
    async with open_editor(profile, workspace, state_dir) as ed:
        await ed.command("acp.session.new", {})
        assert await ed.command("acp.cancel", {}) == {"cancelled": False}
        admitted = await ed.command("acp.prompt", {"text": "#chunks=200 #slow=50 long"})
        await ed.wait_for(
            "acp/sessionUpdate",
            lambda u: (
                u["turnId"] == admitted["turnId"] and u["update"]["sessionUpdate"] == "agent_message_chunk"
            ),
        )
        assert await ed.command("acp.cancel", {}) == {"cancelled": True}
        end = await ed.wait_turn_end(admitted["turnId"], timeout=10)
        assert end["stopReason"] == "cancelled"
        assert len(ed.text_of(admitted["turnId"])) < len(" ".join(f"c{i}" for i in range(200)))
        assert any(s["state"] == "cancelling" for s in ed.of("acp/status"))
        # The session takes the next prompt normally: the late cancel did not leak into it.
        _, after = await ed.prompt_and_wait("#chunks=3 next")
        assert after["stopReason"] == "end_turn"
        await asyncio.sleep(0.2)
        assert len([t for t in ed.turn_events(admitted["turnId"]) if t["state"] == "ended"]) == 1


async def test_unknown_update_kind_passes_through(profile: str, workspace: Path, state_dir: Path) -> None:
    async with open_editor(profile, workspace, state_dir) as ed:
        await ed.command("acp.session.new", {})
        admitted, end = await ed.prompt_and_wait("#unknown hi")
        assert end["stopReason"] == "end_turn"
        updates = [u["update"] for u in ed.of("acp/sessionUpdate") if u["turnId"] == admitted["turnId"]]
        assert {"sessionUpdate": "future_kind_xyz", "someField": {"nested": [1, 2]}} in updates
        extra = [u for u in updates if u.get("futureField") is True]
        assert len(extra) == 1 and extra[0]["sessionUpdate"] == "agent_message_chunk"


async def test_coalescing_keeps_every_character_in_order(
    profile: str, workspace: Path, state_dir: Path
) -> None:
    async with open_editor(profile, workspace, state_dir) as ed:
        await ed.command("acp.session.new", {})
        admitted, end = await ed.prompt_and_wait("#chunks=3000 flood", timeout=60)
        assert end["stopReason"] == "end_turn"
        assert ed.text_of(admitted["turnId"]) == "".join(f"c{i} " for i in range(3000))
        sent = [
            u
            for u in ed.of("acp/sessionUpdate")
            if u["turnId"] == admitted["turnId"] and u["update"]["sessionUpdate"] == "agent_message_chunk"
        ]
        assert len(sent) <= 3000 // 20, len(sent)


async def test_echoed_user_chunks_are_dropped(profile: str, workspace: Path, state_dir: Path) -> None:
    async with open_editor(profile, workspace, state_dir) as ed:
        await ed.command("acp.session.new", {})
        admitted, _ = await ed.prompt_and_wait("#echo #chunks=2 please echo me")
        echoed = ed.text_of(admitted["turnId"], "user_message_chunk")
        assert "please echo me" not in echoed


async def test_agent_stderr_reaches_the_log_bounded(profile: str, workspace: Path, state_dir: Path) -> None:
    async with open_editor(profile, workspace, state_dir) as ed:
        await ed.command("acp.session.new")
        started = asyncio.get_running_loop().time()
        _, end = await ed.prompt_and_wait("#stderr=2000000 #chunks=1 noisy")
        assert end["stopReason"] == "end_turn"
        await asyncio.sleep(1.2)  # the next rate window reports what was dropped
        await ed.prompt_and_wait("#stderr=10 #chunks=1 quiet")
        elapsed = asyncio.get_running_loop().time() - started
        agent_lines = [m.message for m in ed.client.log_messages if m.message.startswith("[agent]")]
        assert agent_lines, "agent stderr reaches window/logMessage"
        assert len(agent_lines) <= 200 * (elapsed + 2), len(agent_lines)
        assert any("stderr lines not shown" in line for line in agent_lines)
        assert all(len(line) <= 2_010 for line in agent_lines)
