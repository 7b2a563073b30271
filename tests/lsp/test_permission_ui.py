"""Permissions in the editor: a dismissed dialog is not a rejection, `acp/permission`
pending and resolved, and `notify.permissionDialog: false`."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from tests.lsp.editor import PROFILES, Editor, open_editor

SCRIPTED = Path(__file__).resolve().parents[1] / "agents" / "scripted_agent.py"
SCRIPTED_ARGS = ["--agent", f"{sys.executable} {SCRIPTED}"]
OPTIONS = [
    {"optionId": "yes", "name": "Allow", "kind": "allow_once"},
    {"optionId": "no", "name": "Reject", "kind": "reject_once"},
]


def outcome_seen_by_agent(ed: Editor, turn_id: str) -> Any:
    for line in ed.text_of(turn_id).splitlines():
        if line.startswith("RESULT 0 "):
            return json.loads(line.split(" ", 2)[2])["result"]["outcome"]
    raise AssertionError(f"no result in {ed.text_of(turn_id)!r}")


async def ask(ed: Editor) -> tuple[dict[str, Any], dict[str, Any]]:
    """Start a turn whose agent asks permission for an `execute` tool call; the pending notification."""
    admitted = await ed.command("acp.prompt", json.dumps([{"permission": "execute"}]))
    pending = await ed.wait_for("acp/permission", lambda p: p["state"] == "pending")
    return admitted, pending


@pytest.mark.parametrize("profile", ["neovim", "vscode"])
async def test_a_dismissed_dialog_leaves_the_request_pending(
    profile: str, workspace: Path, state_dir: Path
) -> None:
    async with open_editor(profile, workspace, state_dir, extra_args=SCRIPTED_ARGS) as ed:
        await ed.command("acp.session.new")
        ed.permission_choice = None  # Neovim's `q`, Helix's any key: the dialog answers null
        admitted, pending = await ask(ed)
        message = await ed.wait_message(lambda m: "still waiting" in m)
        assert "acp.permission.respond" in message and "code action" in message
        assert len(ed.message_requests) == 1
        assert (await ed.command("acp.status"))["state"] == "waiting_permission"
        assert not [p for p in ed.of("acp/permission") if p["state"] == "resolved"]
        # Still answerable: the user picks "Allow" later.
        await ed.command("acp.permission.respond", {"requestId": pending["requestId"], "optionId": "yes"})
        end = await ed.wait_turn_end(admitted["turnId"])
        assert end["stopReason"] == "end_turn"
        assert outcome_seen_by_agent(ed, admitted["turnId"]) == {"outcome": "selected", "optionId": "yes"}
        resolved = await ed.wait_for("acp/permission", lambda p: p["state"] == "resolved")
        assert resolved["requestId"] == pending["requestId"]
        assert resolved["outcome"] == {"outcome": "selected", "optionId": "yes"}


@pytest.mark.parametrize("profile", PROFILES)
async def test_permission_notification_pending_then_resolved(
    profile: str, workspace: Path, state_dir: Path
) -> None:
    async with open_editor(profile, workspace, state_dir, extra_args=SCRIPTED_ARGS) as ed:
        sid = (await ed.command("acp.session.new"))["sessionId"]
        ed.hold_message_requests = True  # the dialog stays open while the user answers elsewhere
        admitted, pending = await ask(ed)
        assert pending["sessionId"] == sid and pending["turnId"] == admitted["turnId"]
        assert pending["options"] == OPTIONS
        assert pending["toolCall"]["kind"] == "execute"
        assert pending["outcome"] is None and pending["requestId"]
        assert pending["proposals"] == []  # no diff in its tool call
        await ed.command("acp.permission.respond", {"requestId": pending["requestId"], "optionId": "no"})
        await ed.wait_turn_end(admitted["turnId"])
        resolved = await ed.wait_for("acp/permission", lambda p: p["state"] == "resolved")
        assert resolved == {
            **pending,
            "state": "resolved",
            "outcome": {"outcome": "selected", "optionId": "no"},
            "proposals": None,
        }
        assert outcome_seen_by_agent(ed, admitted["turnId"]) == resolved["outcome"]
        assert len(ed.of("acp/permission")) == 2, "one pending, one resolved"
        # The dialog is answered late, after the request was settled: no error anywhere.
        ed.hold_message_requests = False
        if ed.message_requests:
            await asyncio.sleep(0.5)
            assert (await ed.command("acp.status"))["state"] == "idle"
        errors = [m.message for m in ed.client.log_messages if m.type == types.MessageType.Error]
        assert not errors, errors


async def test_permission_answered_in_the_dialog_is_resolved(workspace: Path, state_dir: Path) -> None:
    async with open_editor("vscode", workspace, state_dir, extra_args=SCRIPTED_ARGS) as ed:
        await ed.command("acp.session.new")
        admitted, pending = await ask(ed)
        await ed.wait_turn_end(admitted["turnId"])
        resolved = await ed.wait_for("acp/permission", lambda p: p["state"] == "resolved")
        assert resolved["requestId"] == pending["requestId"]
        assert resolved["outcome"] == {"outcome": "selected", "optionId": "yes"}


async def test_cancel_resolves_a_pending_permission_as_cancelled(workspace: Path, state_dir: Path) -> None:
    options = {"notify": {"permissionDialog": False}}
    async with open_editor("vscode", workspace, state_dir, init_options=options) as ed:
        await ed.command("acp.session.new")
        admitted = await ed.command("acp.prompt", "#permission please")
        pending = await ed.wait_for("acp/permission", lambda p: p["state"] == "pending")
        assert await ed.command("acp.cancel") == {"cancelled": True}
        resolved = await ed.wait_for("acp/permission", lambda p: p["state"] == "resolved")
        assert resolved["requestId"] == pending["requestId"]
        assert resolved["outcome"] == {"outcome": "cancelled"}
        await ed.wait_turn_end(admitted["turnId"])


@pytest.mark.parametrize("profile", PROFILES)
async def test_permission_dialog_off(profile: str, workspace: Path, state_dir: Path) -> None:
    options = {"notify": {"permissionDialog": False}}
    async with open_editor(
        profile, workspace, state_dir, init_options=options, extra_args=SCRIPTED_ARGS
    ) as ed:
        await ed.command("acp.session.new")
        admitted, pending = await ask(ed)
        await ed.command("acp.permission.respond", {"requestId": pending["requestId"], "optionId": "yes"})
        await ed.wait_turn_end(admitted["turnId"])
        assert outcome_seen_by_agent(ed, admitted["turnId"]) == {"outcome": "selected", "optionId": "yes"}
        assert not ed.message_requests, "no showMessageRequest: the plugin shows acp/permission itself"
        assert not [m for m in ed.client.messages if "asks permission" in m.message]
