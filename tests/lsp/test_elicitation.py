"""The agent's questions (ACP elicitation/create, form and URL modes) through a real sidecar and
the demo agent: asked, checked, converted, answered exactly once (accept, decline on dismiss,
cancel on a cancelled turn or a timeout), and what the agent received validated against the ACP
v1 schema."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.lsp.editor import Editor, open_editor
from tests.lsp.test_commands import expect_error
from tests.schema_check import assert_valid

ANSWER = "Elicitation answer: "


async def _ask(ed: Editor, prompt: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Prompt the demo agent to ask: (admitted, the pending acp/elicitation)."""
    await ed.command("acp.session.new")
    admitted = await ed.command("acp.prompt", prompt)
    pending = await ed.wait_for("acp/elicitation", lambda p: p["state"] == "pending")
    assert pending["sessionId"] == admitted["sessionId"] and pending["turnId"] == admitted["turnId"]
    return admitted, pending


async def _agent_got(ed: Editor, admitted: dict[str, Any]) -> dict[str, Any]:
    """What the agent received as the answer, checked against the ACP schema."""
    end = await ed.wait_turn_end(admitted["turnId"])
    assert end["stopReason"] == "end_turn", end
    text = ed.text_of(admitted["turnId"])
    assert ANSWER in text, text
    answer: dict[str, Any] = json.loads(text.split(ANSWER, 1)[1])
    assert_valid("CreateElicitationResponse", answer)
    return answer


async def test_a_form_of_every_field_kind_answered_by_command(workspace: Path, state_dir: Path) -> None:
    async with open_editor("neovim", workspace, state_dir) as ed:
        admitted, pending = await _ask(ed, "#elicit details please")
        assert pending["mode"] == "form" and pending["message"] == "A few details, please"
        assert pending["title"] == "Release details"
        fields = {f["name"]: f for f in pending["fields"]}
        assert [fields[n]["kind"] for n in ("email", "count", "ratio", "notify", "channel", "targets")] == [
            "string",
            "integer",
            "number",
            "boolean",
            "enum",
            "multiselect",
        ]
        assert fields["email"]["format"] == "email" and fields["email"]["required"] is True
        assert (fields["count"]["minimum"], fields["count"]["maximum"], fields["count"]["default"]) == (
            1,
            10,
            3,
        )
        assert fields["channel"]["options"] == [
            {"value": "stable", "title": "Stable"},
            {"value": "beta", "title": "Beta"},
        ]
        assert fields["ratio"]["required"] is False
        assert (await ed.command("acp.status"))["state"] == "waiting_input"
        # Not a form the dialogs can ask (text fields): the message line names the command.
        await ed.wait_message(lambda m: "acp.elicitation.respond" in m and pending["elicitationId"] in m)
        ident = pending["elicitationId"]
        # Answers that do not fit: an error naming the field; the question stays open.
        bad = [
            (
                {"email": "nope", "count": 2, "channel": "stable", "targets": ["mac"]},
                "Your email: not a valid email",
            ),
            (
                {"email": "a@b.co", "count": "11", "channel": "stable", "targets": ["mac"]},
                "How many: at most 10",
            ),
            (
                {"email": "a@b.co", "count": 2, "channel": "alpha", "targets": ["mac"]},
                "Channel: choose one of",
            ),
            ({"email": "a@b.co", "count": 2, "targets": ["mac"]}, "Channel: an answer is required"),
            (
                {"email": "a@b.co", "count": 2, "channel": "beta", "targets": ["bsd"]},
                "Targets: choose one of",
            ),
            (
                {"email": "a@b.co", "count": 2, "channel": "beta", "targets": "mac", "x": 1},
                "unknown field 'x'",
            ),
        ]
        for content, why in bad:
            err = await expect_error(
                ed, "acp.elicitation.respond", {"elicitationId": ident, "content": content}
            )
            assert why in err.message and "still open" in err.message, (why, err.message)
        # Typed answers (as vim.ui.input gives them) are converted by the sidecar.
        typed = {
            "email": "dev@example.com",
            "count": "4",
            "ratio": "0.5",
            "notify": "yes",
            "channel": "Beta",
            "targets": "linux, mac",
        }
        assert await ed.command("acp.elicitation.respond", {"elicitationId": ident, "content": typed}) == {}
        got = await _agent_got(ed, admitted)
        assert got == {
            "action": "accept",
            "content": {
                "email": "dev@example.com",
                "count": 4,
                "ratio": 0.5,
                "notify": True,
                "channel": "beta",
                "targets": ["linux", "mac"],
            },
        }
        resolved = await ed.wait_for("acp/elicitation", lambda p: p["state"] == "resolved")
        assert resolved["elicitationId"] == ident and resolved["action"] == "accept"
        # Answered exactly once.
        err = await expect_error(ed, "acp.elicitation.respond", {"elicitationId": ident, "action": "decline"})
        assert "no pending elicitation" in err.message
        assert (await ed.command("acp.status"))["state"] == "idle"


async def test_a_choice_form_is_asked_with_dialogs(workspace: Path, state_dir: Path) -> None:
    async with open_editor("vscode", workspace, state_dir) as ed:
        ed.message_answers = ["beta", "Yes"]
        admitted, _ = await _ask(ed, "#elicit=choice")
        assert await _agent_got(ed, admitted) == {
            "action": "accept",
            "content": {"channel": "beta", "notify": True},
        }
        asked = [[a.title for a in r.actions or []] for r in ed.message_requests]
        assert asked == [["stable", "beta", "Decline"], ["Yes", "No", "Decline"]]
        assert "Channel" in ed.message_requests[0].message


@pytest.mark.parametrize("answer", [None, "Decline"])
async def test_a_dismissed_or_declined_dialog_declines(
    answer: str | None, workspace: Path, state_dir: Path
) -> None:
    async with open_editor("vscode", workspace, state_dir) as ed:
        ed.message_answers = [answer]
        admitted, _ = await _ask(ed, "#elicit=choice")
        assert await _agent_got(ed, admitted) == {"action": "decline"}
        assert len(ed.message_requests) == 1, "nothing more is asked once declined"


async def test_cancel_mid_question_answers_cancel(workspace: Path, state_dir: Path) -> None:
    async with open_editor("vscode", workspace, state_dir) as ed:
        ed.hold_message_requests = True
        admitted, pending = await _ask(ed, "#elicit=choice")
        assert await ed.command("acp.cancel") == {"cancelled": True}
        end = await ed.wait_turn_end(admitted["turnId"])
        assert end["stopReason"] == "cancelled"
        resolved = await ed.wait_for("acp/elicitation", lambda p: p["state"] == "resolved")
        assert resolved["elicitationId"] == pending["elicitationId"] and resolved["action"] == "cancel"
        ed.hold_message_requests = False


async def test_an_unanswered_question_is_cancelled_at_its_timeout(workspace: Path, state_dir: Path) -> None:
    options = {"elicitation": {"timeoutMs": 300}, "notify": {"elicitationDialog": False}}
    async with open_editor("neovim", workspace, state_dir, init_options=options) as ed:
        admitted, _ = await _ask(ed, "#elicit=choice")
        assert await _agent_got(ed, admitted) == {"action": "cancel"}
        await ed.wait_message(lambda m: "not answered in time" in m)
        assert not ed.message_requests, "elicitationDialog false: the plugin asks, not the sidecar"


@pytest.mark.parametrize(("answer", "opened"), [("Open", True), ("Decline", False)])
async def test_a_url_is_opened_only_after_the_user_agrees(
    answer: str, opened: bool, workspace: Path, state_dir: Path
) -> None:
    async with open_editor("vscode", workspace, state_dir) as ed:
        ed.message_answers = [answer]
        admitted, pending = await _ask(ed, "#elicit=url")
        assert pending["mode"] == "url" and pending["url"] == "https://example.com/acp-demo/authorize"
        got = await _agent_got(ed, admitted)
        shown = [(d.uri, d.external) for d in ed.client.shown_documents if d.external]
        if opened:
            assert got == {"action": "accept"}
            assert shown == [("https://example.com/acp-demo/authorize", True)]
            done = await ed.wait_for("acp/elicitation", lambda p: p["state"] == "completed")
            assert done["elicitationId"] == pending["elicitationId"]
        else:
            assert got == {"action": "decline"}
            assert shown == []


async def test_a_schema_the_user_cannot_be_asked_is_refused_to_the_agent(
    workspace: Path, state_dir: Path
) -> None:
    async with open_editor("vscode", workspace, state_dir) as ed:
        await ed.command("acp.session.new")
        admitted, end = await ed.prompt_and_wait("#elicit=bad")
        assert end["stopReason"] == "end_turn"
        text = ed.text_of(admitted["turnId"])
        assert "The client refused the question" in text and "'missing', which is not a field" in text
        assert not ed.of("acp/elicitation") and not ed.message_requests


async def test_helix_release_answers_by_code_action(workspace: Path, state_dir: Path) -> None:
    # No showMessageRequest: the message line says how, and code actions answer a single choice.
    async with open_editor("helix-release", workspace, state_dir) as ed:
        uri = ed.open(workspace / "README.md")
        await ed.command("acp.session.new")
        admitted = await ed.command("acp.prompt", "#elicit=url")
        await ed.wait_for("acp/elicitation", lambda p: p["state"] == "pending")
        await ed.wait_message(
            lambda m: "https://example.com/acp-demo/authorize" in m and "acp.elicitation.respond" in m
        )
        actions = [a for a in await ed.code_actions(uri) if a.title.startswith("Agent question")]
        assert [a.title for a in actions] == ["Agent question: Decline — Authorize the demo agent"]
        command = actions[0].command
        assert command is not None
        await ed.command(command.command, *command.arguments)
        assert await _agent_got(ed, admitted) == {"action": "decline"}
