"""`acp.session.delete` (docs/protocol.md, Commands): the agent's `session/delete`, then the title
and the transcript document go too; a busy session, an agent without it and an unknown session
are clear errors that remove nothing."""

from __future__ import annotations

from pathlib import Path

from tests.lsp.editor import Editor, open_editor
from tests.lsp.test_commands import expect_error
from tests.lsp.test_transcripts import transcript_path, turn_ends, wait_file


async def listed(ed: Editor, refresh: bool = False) -> list[str]:
    result = await ed.command("acp.session.list", {"refresh": refresh})
    return [s["sessionId"] for s in result["sessions"]]


async def test_a_deleted_session_is_gone_from_the_agent_the_list_and_the_disk(
    workspace: Path, state_dir: Path
) -> None:
    async with open_editor("helix", workspace, state_dir) as ed:
        kept = (await ed.command("acp.session.new"))["sessionId"]
        await ed.prompt_and_wait("#chunks=2 the one we keep")
        doomed = (await ed.command("acp.session.new"))["sessionId"]
        await ed.prompt_and_wait("#title Doomed")
        path = await transcript_path(ed, doomed)
        await wait_file(path, lambda t: turn_ends(t) >= 1)
        kept_path = await transcript_path(ed, kept)
        assert sorted(await listed(ed, refresh=True)) == sorted([kept, doomed])
        (agent,) = (await ed.command("acp.agents"))["agents"]
        assert agent["capabilities"]["delete"] is True

        assert await ed.command("acp.session.delete", doomed) == {"sessionId": doomed}  # positional form
        assert await listed(ed) == [kept]
        assert await listed(ed, refresh=True) == [kept]  # the agent's session/list agrees
        assert not path.exists()
        assert not list(path.parent.glob(f".*{doomed}*"))  # its index went with it
        assert kept_path.exists()
        status = await ed.command("acp.status")
        assert status["sessionId"] is None, status  # it was the active one
        err = await expect_error(ed, "acp.session.load", doomed)
        assert doomed in err.message
        err = await expect_error(ed, "acp.session.delete", doomed)
        assert "unknown session" in err.message
        # The other session goes on.
        await ed.command("acp.session.load", kept)
        await ed.prompt_and_wait("#chunks=1 still here")

    # A new sidecar knows nothing of it either.
    async with open_editor("helix", workspace, state_dir) as ed:
        assert await listed(ed, refresh=True) == [kept]


async def test_a_session_not_loaded_here_is_deleted_through_its_agent(
    workspace: Path, state_dir: Path
) -> None:
    async with open_editor("helix", workspace, state_dir) as ed:
        sid = (await ed.command("acp.session.new"))["sessionId"]
        await ed.prompt_and_wait("#chunks=1 before the restart")
    async with open_editor("helix", workspace, state_dir) as ed:
        assert await listed(ed) == [sid]
        assert await ed.command("acp.session.delete", {"sessionId": sid}) == {"sessionId": sid}
        assert await listed(ed, refresh=True) == []


async def test_a_busy_session_is_refused_until_its_turn_ends(workspace: Path, state_dir: Path) -> None:
    async with open_editor("vscode", workspace, state_dir) as ed:
        sid = (await ed.command("acp.session.new"))["sessionId"]
        running = await ed.command("acp.prompt", "#chunks=40 #slow=50 a long answer")
        await ed.wait_for("acp/turn", lambda t: t["turnId"] == running["turnId"] and t["state"] == "running")
        err = await expect_error(ed, "acp.session.delete", sid)
        assert "busy" in err.message and "acp.cancel" in err.message
        assert await listed(ed) == [sid]
        await ed.command("acp.cancel")
        end = await ed.wait_turn_end(running["turnId"])
        assert end["stopReason"] == "cancelled"
        assert await ed.command("acp.session.delete", sid) == {"sessionId": sid}
        assert await listed(ed) == []


async def test_an_agent_without_session_delete_keeps_everything(workspace: Path, state_dir: Path) -> None:
    async with open_editor("vscode", workspace, state_dir, env={"ACP_DEMO_CAPS": "no-delete"}) as ed:
        sid = (await ed.command("acp.session.new"))["sessionId"]
        await ed.prompt_and_wait("#chunks=1 keep me")
        path = await transcript_path(ed, sid)
        (agent,) = (await ed.command("acp.agents"))["agents"]
        assert agent["capabilities"]["delete"] is False
        err = await expect_error(ed, "acp.session.delete", sid)
        assert (err.code, err.message) == (-32006, "the agent does not offer session/delete")
        assert await listed(ed) == [sid]
        assert path.exists()
        assert (await ed.command("acp.status"))["sessionId"] == sid
        err = await expect_error(ed, "acp.session.delete", {"sessionId": 7})
        assert "sessionId" in err.message
