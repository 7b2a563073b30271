"""Quirks of production ACP agents (../shared/PRODUCTION-AGENTS.md §4), handled as a user would want.

Each test has the scripted agent (tests/agents/scripted_agent.py) behave like one production agent
does, over a real LSP pipe; every frame the sidecar sends the agent is read back from a tee
(tests/agents/tee_agent.py) and validated against the ACP schema.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from tests.lsp.editor import Editor, open_editor
from tests.lsp.test_agent_events import ended_progress
from tests.lsp.test_permissions_files import scripted
from tests.lsp.test_transcripts import transcript_path, wait_file
from tests.schema_check import assert_valid

AGENTS = Path(__file__).resolve().parents[1] / "agents"
SCRIPTED = AGENTS / "scripted_agent.py"
TEE = AGENTS / "tee_agent.py"
PY = sys.executable

# What the sidecar sends the agent, by method: the schema type each must be.
REQUEST_TYPES = {
    "initialize": "InitializeRequest",
    "session/new": "NewSessionRequest",
    "session/prompt": "PromptRequest",
    "session/cancel": "CancelNotification",
    "session/close": "CloseSessionRequest",
    "session/set_title": "SetSessionTitleRequest",
}
VIBE_INFO = {"name": "@mistralai/mistral-vibe", "title": "Mistral Vibe", "version": "2.26.1"}


def sent_frames(frames: Path) -> list[dict[str, Any]]:
    """Every frame the sidecar sent the agent, each checked: a request or notification of its
    schema type (an extension method, `_` first, with object params), or a JSON-RPC answer."""
    sent = [json.loads(line) for line in frames.read_text().splitlines() if line.strip()]
    for frame in sent:
        assert frame.get("jsonrpc") == "2.0", frame
        method = frame.get("method")
        if method is not None and method.startswith("_"):
            assert isinstance(frame.get("params"), dict), frame
        elif method is not None:
            assert method in REQUEST_TYPES, f"unexpected {method}"
            assert_valid(REQUEST_TYPES[method], frame["params"])
        elif "error" in frame:
            assert_valid("Error", frame["error"])
        else:
            assert "result" in frame and "id" in frame, frame
    return sent


@asynccontextmanager
async def quirky(
    workspace: Path, state_dir: Path, tmp_path: Path, profile: str = "neovim", **env: str
) -> AsyncIterator[tuple[Editor, Path]]:
    """A sidecar with the scripted agent behind a tee (env: its SCRIPTED_* quirks); the frames'
    log is validated when it ends."""
    frames = tmp_path / "frames.jsonl"
    log = tmp_path / "sidecar.log"
    args = ["--agent", f"{PY} {TEE} {frames} {PY} {SCRIPTED}", "--log-file", str(log), "--log-level", "INFO"]
    async with open_editor(profile, workspace, state_dir, env=env, extra_args=args) as ed:
        yield ed, log
    sent_frames(frames)


def answers_to(frames: list[dict[str, Any]], requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The sidecar's answers, in order, to the agent's requests with these ids."""
    ids = {r["id"] for r in requests}
    return [f for f in frames if "method" not in f and f.get("id") in ids]


async def test_unknown_requests_get_32601_and_unknown_notifications_are_logged_once(
    workspace: Path, state_dir: Path, tmp_path: Path
) -> None:
    async with quirky(workspace, state_dir, tmp_path) as (ed, log):
        sid = (await ed.command("acp.session.new"))["sessionId"]
        mode_update = {"notify": "qwen/notify/session/mode-update", "params": {"sessionId": sid, "mode": "auto"}}
        steps = [
            {"chunk": "before "},
            # Qwen Code asks this mid-turn and waits for the answer before it goes on.
            {"request": "craft/drainMidTurnQueue", "params": {"sessionId": sid}},
            mode_update,
            {"notify": "_session/retrying", "params": {"sessionId": sid, "attempt": 1}},
            mode_update,
            mode_update,
            {"chunk": "after"},
        ]
        admitted, end = await ed.prompt_and_wait(json.dumps(steps))
        assert end["stopReason"] == "end_turn" and end["error"] is None
        text = ed.text_of(admitted["turnId"])
        assert text.startswith("before RESULT 1 ") and text.endswith("after"), text
        answer = json.loads(text.removeprefix("before RESULT 1 ").removesuffix("after"))
        assert answer == {"error": {"code": -32601, "message": "method not found: craft/drainMidTurnQueue"}}
        assert_valid("Error", answer["error"])
        # The session goes on as before.
        again = await scripted(ed, [{"request": "craft/drainMidTurnQueue", "params": {}}, mode_update])
        assert again[0]["error"]["code"] == -32601
    logged = log.read_text()
    assert logged.count("qwen/notify/session/mode-update") == 1, logged
    assert logged.count("_session/retrying") == 1, logged
    assert "ignored the agent's notification 'qwen/notify/session/mode-update'" in logged
