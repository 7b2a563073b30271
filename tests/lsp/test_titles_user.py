"""A user's title over the real LSP pipe: rename through `session/set_title`, and no one but the
user changes it afterwards (issue 13 items 1 and 2). The demo agent offers `session/set_title`
unless `ACP_DEMO_CAPS` has `no-set-title`; the prompt path is in test_titles.py."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from sidecar.features.titles.api import TitleRecord, TitleStore
from tests.lsp.editor import Editor, open_editor
from tests.schema_check import assert_valid

DEMO = "acp-sidecar-demo"
TEE = Path(__file__).resolve().parents[1] / "agents" / "tee_agent.py"


def stored(state_dir: Path, session_id: str) -> TitleRecord | None:
    with TitleStore(state_dir / "titles.sqlite3") as store:
        return store.get(DEMO, session_id)


def renamed(ed: Editor, sid: str, start: int) -> Any:
    return ed.wait_for(
        "acp/sessionInfo",
        lambda i: i["sessionId"] == sid and i["renameState"] not in ("pending", None),
        start=start,
    )


async def entry(ed: Editor, sid: str, refresh: bool = False) -> dict[str, Any]:
    listed = await ed.command("acp.session.list", {"refresh": refresh})
    found: dict[str, Any] = next(s for s in listed["sessions"] if s["sessionId"] == sid)
    return found


async def test_set_title_renames_at_once_while_a_turn_runs(workspace: Path, state_dir: Path) -> None:
    frames = state_dir / "frames.jsonl"
    agent = f"{sys.executable} {TEE} {frames} {sys.executable} -m sidecar.demo_agent"
    async with open_editor("neovim", workspace, state_dir, extra_args=["--agent", agent]) as ed:
        sid = (await ed.command("acp.session.new"))["sessionId"]
        running = await ed.command("acp.prompt", "#chunks=40 #slow=100 a long answer")
        await ed.wait_for("acp/turn", lambda t: t["turnId"] == running["turnId"] and t["state"] == "running")
        mark = ed.mark()
        result = await ed.command("acp.session.rename", {"title": "  Fix \t auth  timeout "})
        assert result == {"sessionId": sid, "requestedTitle": "Fix auth timeout"}
        info = await renamed(ed, sid, mark)
        assert (info["title"], info["titleSource"], info["renameState"]) == (
            "Fix auth timeout",
            "user",
            "confirmed",
        )
        # No prompt, no turn, and no in-between title: the agent's own session_info_update, sent
        # before its answer, is held back and saved with the rename.
        infos = [n[2] for n in ed.notes[mark:] if n[1] == "acp/sessionInfo"]
        assert [i["titleSource"] for i in infos if i["title"] == "Fix auth timeout"] == ["user"], infos
        assert not [n for n in ed.notes[mark:] if n[1] == "acp/turn" and n[2]["turnId"] != running["turnId"]]
        status = await ed.wait_for("acp/status", lambda s: s["title"] == "Fix auth timeout", start=mark)
        assert status["state"] == "running", "renamed while the turn still runs"
        await ed.command("acp.cancel")
        await ed.wait_turn_end(running["turnId"])
        # An invalid title for the agent (it takes at most 200 characters): refused, old title kept.
        with pytest.raises(JsonRpcException) as refused:
            await ed.command("acp.session.rename", "x" * 300)
        assert "invalid title" in refused.value.message and refused.value.code == -32602, refused.value
        assert (await ed.command("acp.status"))["title"] == "Fix auth timeout"
    record = stored(state_dir, sid)
    assert record is not None and (record.title, record.title_source) == ("Fix auth timeout", "user")
    sent = [json.loads(line) for line in frames.read_text().splitlines()]
    set_titles = [f for f in sent if f.get("method") == "session/set_title"]
    assert [f["params"]["title"] for f in set_titles] == ["Fix auth timeout", "x" * 300]
    for frame in set_titles:
        assert_valid("SetSessionTitleRequest", frame["params"])
    assert not [f for f in sent if f.get("method") == "session/prompt" and "_meta" in f["params"]]
    initialize = next(f for f in sent if f.get("method") == "initialize")
    assert_valid("InitializeRequest", initialize["params"])
    assert initialize["params"]["clientCapabilities"]["session"] == {"notices": {}, "compaction": {}}


async def test_set_title_for_sessions_not_loaded(workspace: Path, state_dir: Path) -> None:
    async with open_editor("vscode", workspace, state_dir) as ed:
        first = (await ed.command("acp.session.new"))["sessionId"]
        await ed.prompt_and_wait("#title First one")
        gone = (await ed.command("acp.session.new"))["sessionId"]
        await ed.prompt_and_wait("#title Soon gone")
    (state_dir / "demo-agent" / "sessions" / f"{gone}.json").unlink()
    async with open_editor("vscode", workspace, state_dir) as ed:
        # Known only to the title cache: neither loaded here nor in the agent's process.
        mark = ed.mark()
        assert await ed.command("acp.session.rename", {"title": "Renamed cold", "sessionId": first}) == {
            "sessionId": first,
            "requestedTitle": "Renamed cold",
        }
        info = await renamed(ed, first, mark)
        assert (info["title"], info["titleSource"], info["renameState"]) == (
            "Renamed cold",
            "user",
            "confirmed",
        )
        assert (await ed.command("acp.status"))["sessionId"] is None, "renaming does not load it"
        # Unknown to the agent (-32002) and unknown to the cache: "unknown session", titles kept.
        for sid in (gone, "demo-000000000000"):
            with pytest.raises(JsonRpcException) as unknown:
                await ed.command("acp.session.rename", {"title": "Nope", "sessionId": sid})
            assert "unknown session" in unknown.value.message, unknown.value
        assert (await entry(ed, gone))["title"] == "Soon gone"
        # Loading it later replays its history (the rename last): the title stays the user's.
        await ed.command("acp.session.load", first)
        assert (await ed.command("acp.status"))["title"] == "Renamed cold"
        assert (await entry(ed, first, refresh=True))["titleSource"] == "user"


@pytest.mark.parametrize("rename", ["ignore", "confirm"])
async def test_user_title_survives_replay_restarts_and_refresh(
    rename: str, workspace: Path, state_dir: Path
) -> None:
    """Issue 13 item 2: with session/load (no resume) the replayed session_info_update replaced a
    kept local title ('hello world', 'agent'), and the next start demoted a confirmed one."""
    env = {"ACP_DEMO_CAPS": "no-resume,no-set-title", "ACP_DEMO_RENAME": rename}
    expected = "unconfirmed" if rename == "ignore" else "confirmed"
    async with open_editor("vscode", workspace, state_dir, env=env) as ed:
        sid = (await ed.command("acp.session.new"))["sessionId"]
        await ed.prompt_and_wait("hello world")
        await ed.wait_for("acp/sessionInfo", lambda i: i["title"] == "hello world")
        mark = ed.mark()
        await ed.command("acp.session.rename", "Mine")
        info = await renamed(ed, sid, mark)
        assert (info["title"], info["titleSource"], info["renameState"]) == ("Mine", "user", expected)
    for _restart in range(2):
        async with open_editor("vscode", workspace, state_dir, env=env) as ed:
            await ed.command("acp.session.load", sid)
            replayed = [n for n in ed.of("acp/sessionUpdate") if n["replay"]]
            assert any(n["update"]["sessionUpdate"] == "session_info_update" for n in replayed)
            assert (await ed.command("acp.status"))["title"] == "Mine"
            listed = await entry(ed, sid, refresh=True)
            assert (listed["title"], listed["titleSource"]) == ("Mine", "user")
            # A live update from the agent does not change it either.
            await ed.prompt_and_wait("#title The agent's idea")
            assert (await entry(ed, sid))["title"] == "Mine"
            assert all(i["title"] == "Mine" for i in ed.of("acp/sessionInfo") if i["sessionId"] == sid)
        record = stored(state_dir, sid)
        assert record is not None and (record.title, record.title_source) == ("Mine", "user")


async def test_a_prompt_of_settings_only_gives_no_fallback_title(workspace: Path, state_dir: Path) -> None:
    """Issue 17 item 6: "#chunks=3 #slow=100" was shown as the title "chunks=3 #slow=100" until the
    agent's own title came."""
    async with open_editor("helix", workspace, state_dir) as ed:
        sid = (await ed.command("acp.session.new"))["sessionId"]
        await ed.prompt_and_wait("#chunks=3 #slow=100")
        info = await ed.wait_for(
            "acp/sessionInfo", lambda i: i["sessionId"] == sid and i["title"] is not None
        )
        assert (info["title"], info["titleSource"]) == ("Demo session", "agent")
        second = (await ed.command("acp.session.new"))["sessionId"]
        await ed.prompt_and_wait("#chunks=1 #todo fix #123")
        titles = [i["title"] for i in ed.of("acp/sessionInfo") if i["sessionId"] == second and i["title"]]
        assert titles[0] == "#todo fix #123", titles
