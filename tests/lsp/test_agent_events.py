"""The protocol's newer updates over the real LSP pipe (issue 13 items 5 to 7): notices as
messages, compaction as a progress, a tool call's name next to its title."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from tests.lsp.editor import PROFILES, Editor, open_editor
from tests.procs import descendants


def progresses(ed: Editor, prefix: str) -> list[list[Any]]:
    """Each work-done progress whose token starts with `prefix`: its begin, reports and end."""
    return [values for token, values in ed.client.progress_reports.items() if str(token).startswith(prefix)]


async def ended_progress(ed: Editor, prefix: str, count: int) -> list[list[Any]]:
    async with asyncio.timeout(15):
        while len([p for p in progresses(ed, prefix) if p and p[-1].kind == "end"]) < count:
            await asyncio.sleep(0.02)
    return progresses(ed, prefix)


@pytest.mark.parametrize("profile", PROFILES)
async def test_notices_are_messages_and_an_error_notice_does_not_fail_the_turn(
    profile: str, workspace: Path, state_dir: Path
) -> None:
    async with open_editor(profile, workspace, state_dir) as ed:
        await ed.command("acp.session.new")
        lines = [
            "#notice=warning:Disk almost full | Free some space",
            "#notice=error:Quota reached",
            "#notice=_hint",
        ]
        admitted, end = await ed.prompt_and_wait("\n".join([*lines, "hi"]))
        assert (end["stopReason"], end["error"]) == ("end_turn", None)
        shown = {m.message: m.type for m in ed.client.messages}
        assert shown.get("Disk almost full: Free some space") == types.MessageType.Warning, shown
        assert shown.get("Quota reached") == types.MessageType.Error, shown
        assert shown.get("Demo _hint notice") == types.MessageType.Info, shown
        # The updates themselves reach the editor too, untouched.
        kinds = [
            u["update"]["sessionUpdate"]
            for u in ed.of("acp/sessionUpdate")
            if u["turnId"] == admitted["turnId"]
        ]
        assert kinds.count("notice") == 3
        assert (await ed.command("acp.status"))["state"] == "idle"


async def test_compaction_is_a_progress(workspace: Path, state_dir: Path) -> None:
    env = {"ACP_DEMO_CAPS": "no-resume"}
    async with open_editor("neovim", workspace, state_dir, env=env) as ed:
        sid = (await ed.command("acp.session.new"))["sessionId"]
        await ed.prompt_and_wait("#chunks=1 first")
        _, end = await ed.prompt_and_wait("#compact #chunks=1 second")
        assert end["stopReason"] == "end_turn"
        done = await ended_progress(ed, "acp-compaction", 1)
        begin, *_, last = done[0]
        assert (begin.kind, begin.title, begin.message) == ("begin", "Compacting context", "summarizing")
        assert (last.kind, last.message) == ("end", "completed")
        _, end = await ed.prompt_and_wait("#compact=fail #chunks=1 third")
        assert end["stopReason"] == "end_turn"
        done = await ended_progress(ed, "acp-compaction", 2)
        assert sorted(p[-1].message for p in done) == [
            "completed",
            "failed: demo compaction failure (#compact=fail)",
        ]
        # Cancelled while it compacts: the progress ends with it.
        slow = await ed.command("acp.prompt", "#compact #slow=400 #chunks=3 fourth")
        await ed.wait_for(
            "acp/sessionUpdate",
            lambda u: u["turnId"] == slow["turnId"] and u["update"]["sessionUpdate"] == "compaction_update",
        )
        await ed.command("acp.cancel")
        assert (await ed.wait_turn_end(slow["turnId"]))["stopReason"] == "cancelled"
        done = await ended_progress(ed, "acp-compaction", 3)
        assert sorted(p[-1].message for p in done)[0] == "cancelled"
        # The agent dies while it compacts: the compaction's progress ends with the turn.
        dying = await ed.command("acp.prompt", "#compact #slow=2000 #chunks=3 fifth")
        await ed.wait_for(
            "acp/sessionUpdate",
            lambda u: u["turnId"] == dying["turnId"] and u["update"]["sessionUpdate"] == "compaction_update",
        )
        for pid in descendants(ed.client._server.pid):
            os.kill(pid, signal.SIGKILL)
        assert (await ed.wait_turn_end(dying["turnId"]))["error"] is not None
        done = await ended_progress(ed, "acp-compaction", 4)
        assert all(sum(v.kind == "end" for v in p) == 1 for p in done)
    # A replayed compaction is history: no progress for it.
    async with open_editor("neovim", workspace, state_dir, env=env) as ed:
        await ed.command("acp.session.load", sid)
        replayed = [u for u in ed.of("acp/sessionUpdate") if u["replay"]]
        assert any(u["update"]["sessionUpdate"] == "compaction_update" for u in replayed)
        await asyncio.sleep(0.3)
        assert not progresses(ed, "acp-compaction")


async def test_a_tool_calls_name_is_next_to_its_title_in_progress(workspace: Path, state_dir: Path) -> None:
    async with open_editor("vscode", workspace, state_dir) as ed:
        await ed.command("acp.session.new")
        await ed.prompt_and_wait("Where is the README?")
        reports = await ended_progress(ed, "acp-turn", 1)
        messages = [v.message for v in reports[0] if v.kind == "report"]
        # The tool_call_update that completes it carries only its status: the name is remembered.
        assert "Read README.md (read_file) · pending" in messages, messages
        assert "Read README.md (read_file) · completed" in messages, messages
