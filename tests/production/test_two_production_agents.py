"""Two production agents behind one sidecar (issue 24): codex-acp and claude-agent-acp over one
mock model, a session on each, both in one history, each continued after a sidecar restart.

codex and claude, not gemini: a new gemini-cli process finds its earlier sessions only at times
(test_production_agents.py::test_load_after_a_sidecar_restart shows that failure)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.lsp.editor import open_editor
from tests.production.harness import PROFILE, agent_command, agent_env, shut_down_cleanly
from tests.production.mock_model import MockModel
from tests.production.mock_script import TEXT_REPLY

AGENTS = ("codex", "claude")


def options(mock: MockModel, homes: dict[str, Path]) -> dict[str, Any]:
    return {
        "agents": {
            name: {"command": agent_command(name), "env": agent_env(name, mock, homes[name])}
            for name in AGENTS
        },
        "defaultAgent": "codex",
        "transcript": {"showOnPrompt": False},
    }


async def test_codex_and_claude_in_one_history_each_continued_after_a_restart(
    mock: MockModel, workspace: Path, state_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("IS_SANDBOX", raising=False)  # claude-agent-acp exits as root with it
    homes = {name: tmp_path / f"home-{name}" for name in AGENTS}
    for home in homes.values():
        home.mkdir()
    config = options(mock, homes)
    sessions: dict[str, str] = {}
    async with open_editor(PROFILE, workspace, state_dir, init_options=config, wait_idle=True) as ed:
        for name in AGENTS:
            sid = (await ed.command("acp.session.new", {"agent": name}, timeout=60))["sessionId"]
            sessions[name] = sid
            status = await ed.wait_for("acp/status", lambda s, sid=sid: s["sessionId"] == sid)
            assert status["agent"]["configured"] == name, status
            admitted, end = await ed.prompt_and_wait(
                f"Remember the word {name}fruit [mock:text]", sessionId=sid
            )
            assert (admitted["sessionId"], end["stopReason"]) == (sid, "end_turn"), end
            assert ed.text_of(admitted["turnId"]) == TEXT_REPLY
        agents = {a["name"]: a for a in (await ed.command("acp.agents"))["agents"]}
        assert {name: agents[name]["state"] for name in AGENTS} == {"codex": "idle", "claude": "idle"}
        listed = (await ed.command("acp.session.list", {"refresh": True}, timeout=60))["sessions"]
        mine = [(s["sessionId"], s["agent"]) for s in listed if s["sessionId"] in sessions.values()]
        # Newest first: claude's session was prompted last.
        assert mine == [(sessions["claude"], "claude"), (sessions["codex"], "codex")], listed
        await shut_down_cleanly(ed)

    async with open_editor(PROFILE, workspace, state_dir, init_options=config, wait_idle=True) as ed:
        listed = (await ed.command("acp.session.list"))["sessions"]
        history = {s["sessionId"]: s["agent"] for s in listed}  # before any agent runs
        assert {sid: history.get(sid) for sid in sessions.values()} == {sid: n for n, sid in sessions.items()}
        for name, sid in sessions.items():
            loaded = await ed.command("acp.session.load", {"sessionId": sid}, timeout=60)
            assert loaded == {"sessionId": sid}
            before = len(mock.of("text"))
            admitted, end = await ed.prompt_and_wait("What was the word? [mock:text]", sessionId=sid)
            assert (admitted["sessionId"], end["stopReason"]) == (sid, "end_turn"), end
            assert ed.text_of(admitted["turnId"]) == TEXT_REPLY
            # The agent of that session sent the model its own conversation, not the other's.
            sent = json.dumps([r.body for r in mock.of("text")[before:]])
            other = next(n for n in AGENTS if n != name)
            assert f"{name}fruit" in sent and f"{other}fruit" not in sent, sent[-2000:]
        await shut_down_cleanly(ed)
    assert not mock.unknown, f"requests the mock model could not answer: {mock.unknown}"
