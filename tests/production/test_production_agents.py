"""End to end with production agents: the real sidecar over a real LSP pipe, gemini-cli, codex-acp
and claude-agent-acp from npm (tools/provision/agents.py), each answering from the mock model."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.lsp.editor import Editor
from tests.procs import descendants, wait_gone
from tests.production.harness import Setup
from tests.production.mock_script import TEXT_REPLY

pytestmark = pytest.mark.production


def ended_once_each(ed: Editor) -> None:
    """Exactly one `ended` per admitted turn."""
    turns: dict[str, int] = {}
    for event in ed.of("acp/turn"):
        turns.setdefault(event["turnId"], 0)
        turns[event["turnId"]] += event["state"] == "ended"
    assert turns and all(count == 1 for count in turns.values()), turns


async def test_prompt_streams_the_mock_text(setup: Setup) -> None:
    async with setup.editor() as ed:
        status: dict[str, Any] = await ed.command("acp.status")
        assert status["state"] == "idle", status
        created = await ed.command("acp.session.new")
        first, end = await ed.prompt_and_wait("Say hello [mock:text]")
        assert first["sessionId"] == created["sessionId"]
        assert end["stopReason"] == "end_turn", end
        assert ed.text_of(first["turnId"]) == TEXT_REPLY
        second, end = await ed.prompt_and_wait("Again [mock:text]")
        assert end["stopReason"] == "end_turn", end
        assert ed.text_of(second["turnId"]) == TEXT_REPLY
        ended_once_each(ed)
        assert [r.prompt for r in setup.mock.of("text")][-1].endswith("Again [mock:text]")
