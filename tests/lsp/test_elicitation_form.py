"""The agent's form question answered in the conversation document (docs/protocol.md, "Answering
in the document"), through a real sidecar and the demo agent's `#elicit`: the block appears in
the open document, the user types after the colons, the code action "Answer the agent" sends
exactly what was typed (checked, converted, schema-valid), wrong values are refused by field
name with nothing sent, and the block always ends as one line recording the outcome, whoever
answered. The test editor applies the sidecar's edits to its own buffer (tests/lsp/buffers.py)."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest

from tests.lsp.buffers import Buffers, change_incrementally
from tests.lsp.editor import Editor, open_editor
from tests.lsp.test_commands import expect_error
from tests.lsp.test_elicitation import ANSWER, _agent_got
from tests.lsp.test_transcript_editing import NO_SHOW, open_transcript, run_action, until
from tests.lsp.test_transcripts import wait_file, well_formed

ASKED = "_The agent asked: A few details, please — "
BLOCK_END = re.compile(r"^<!-- acp-sidecar end of question (\S+) -->$", re.MULTILINE)


async def _ask(ed: Editor, prompt: str = "#elicit details") -> tuple[Buffers, Path, str, Any, Any]:
    """A session whose transcript is open, and the demo agent's question in its block:
    (buffers, path, uri, admitted, pending acp/elicitation)."""
    buffers = Buffers.attach(ed)
    await ed.command("acp.session.new")
    path, uri = await open_transcript(ed)
    admitted = await ed.command("acp.prompt", prompt)
    pending = await ed.wait_for("acp/elicitation", lambda p: p["state"] == "pending")
    await until(lambda: BLOCK_END.search(buffers.text(uri)) is not None, "the block in the buffer")
    return buffers, path, uri, admitted, pending


def _field_line(text: str, label: str) -> re.Match[str]:
    """The line of the field labelled `label`: group 1 up to its colon, group 2 the answer."""
    found = re.search(
        rf"^(- \*\*{re.escape(label)}\*\* \(.*?; (?:required|optional)\):)(.*)$", text, re.MULTILINE
    )
    assert found is not None, f"no line for {label} in:\n{text}"
    return found


def _type(ed: Editor, buffers: Buffers, uri: str, answers: dict[str, str]) -> None:
    """The user replaces what follows each field's colon, one edit per field (as an editor
    reports typing: ranges, not the whole text)."""
    for label, value in answers.items():
        line = _field_line(buffers.text(uri), label)
        change_incrementally(ed, uri, [(line.end(1), line.end(2), f" {value}")], buffers.encoding)


def _block_line(text: str) -> int:
    """A line inside the block (its heading)."""
    return text[: text.index("### The agent asks:")].count("\n")


async def _block_actions(ed: Editor, uri: str, text: str) -> dict[str, Any]:
    actions = await ed.code_actions(uri, line=_block_line(text))
    return {a.title: a for a in actions}


async def _outcome_shown(buffers: Buffers, uri: str, path: Path, outcome: str) -> None:
    """The block is gone from the buffer and the file; `outcome` (its line) stands in its place."""
    line = f"{ASKED}{outcome}_"

    def replaced(text: str) -> bool:
        return line in text.split("\n") and "acp-sidecar question" not in text

    await wait_file(path, replaced)
    await until(lambda: replaced(buffers.text(uri)), f"the buffer to show {line!r} and no block")
    well_formed(path.read_text())


ALL_KINDS = {
    "Your email": "dev@example.com",
    "How many": "4",
    "Ratio": "0.5",
    "Notify the team": "yes",
    "Channel": "Beta",
    "Targets": "linux, mac",
}


@pytest.mark.parametrize("profile", ["helix", "neovim"])
async def test_every_field_kind_typed_in_the_block_is_the_answer(
    profile: str, workspace: Path, state_dir: Path
) -> None:
    async with open_editor(profile, workspace, state_dir, init_options=NO_SHOW) as ed:
        buffers, path, uri, admitted, pending = await _ask(ed)
        text = buffers.text(uri)
        # The block: a heading, the form's title, one line per field with what it takes and its
        # default after the colon; the prompt area below it, untouched.
        assert "### The agent asks: A few details, please" in text and "**Release details**" in text
        assert _field_line(text, "How many").group(0) == (
            "- **How many** (`count`; a whole number from 1 to 10; required): 3"
        )
        assert _field_line(text, "Notify the team").group(2) == " no"
        assert _field_line(text, "Channel").group(0) == (
            "- **Channel** (`channel`; one of `stable` (Stable), `beta` (Beta); required): "
        )
        assert text.index("end of question") < text.index("## Your prompt")
        _type(ed, buffers, uri, ALL_KINDS)
        actions = await _block_actions(ed, uri, buffers.text(uri))
        assert list(actions)[:2] == ["Answer the agent", "Decline"]
        assert not [t for t in actions if t.startswith("Agent question: Decline")], "offered once, here"
        assert await run_action(ed, actions["Answer the agent"]) == {}
        assert await _agent_got(ed, admitted) == {
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
        await _outcome_shown(
            buffers,
            uri,
            path,
            "you answered: email = dev@example.com, count = 4, ratio = 0.5, notify = yes, "
            "channel = beta, targets = linux, mac",
        )
        resolved = await ed.wait_for("acp/elicitation", lambda p: p["state"] == "resolved")
        assert resolved["elicitationId"] == pending["elicitationId"] and resolved["action"] == "accept"
        # Exactly once: the block's command has nothing left to answer.
        err = await expect_error(
            ed, "acp.elicitation.answer", {"uri": uri, "elicitationId": pending["elicitationId"]}
        )
        assert "no pending elicitation" in err.message


async def test_values_that_do_not_fit_are_refused_by_field_name_and_nothing_is_sent(
    workspace: Path, state_dir: Path
) -> None:
    async with open_editor("helix", workspace, state_dir, init_options=NO_SHOW) as ed:
        buffers, path, uri, admitted, pending = await _ask(ed)
        _type(ed, buffers, uri, {"Your email": "dev@example.com", "How many": "four", "Targets": "mac"})
        answer = (await _block_actions(ed, uri, buffers.text(uri)))["Answer the agent"]
        with pytest.raises(Exception) as info:
            await run_action(ed, answer)
        message = str(getattr(info.value, "message", info.value))
        # Every field that does not fit, by the label the user sees; the channel is required.
        assert "How many: a whole number" in message and "Channel: an answer is required" in message
        assert "nothing was sent" in message and "Your email" not in message
        # Nothing reached the agent; the question waits; the block keeps what the user typed.
        await asyncio.sleep(0.5)
        assert ANSWER not in ed.text_of(admitted["turnId"])
        assert not [p for p in ed.of("acp/elicitation") if p["state"] == "resolved"]
        assert (await ed.command("acp.status"))["state"] == "waiting_input"
        assert _field_line(buffers.text(uri), "How many").group(2) == " four"
        # A line whose label the user changed is named too, and nothing is guessed.
        line = _field_line(buffers.text(uri), "Ratio")
        change_incrementally(ed, uri, [(line.start(1) + 4, line.start(1) + 9, "Rate")], buffers.encoding)
        with pytest.raises(Exception) as info:
            await run_action(ed, answer)
        assert "Ratio: its line was changed or removed" in str(getattr(info.value, "message", info.value))
        line = _field_line(buffers.text(uri), "Rate")
        change_incrementally(ed, uri, [(line.start(1) + 4, line.start(1) + 8, "Ratio")], buffers.encoding)
        _type(ed, buffers, uri, {"How many": "7", "Channel": "stable"})
        assert await run_action(ed, answer) == {}
        got = await _agent_got(ed, admitted)
        assert got == {
            "action": "accept",
            "content": {
                "email": "dev@example.com",
                "count": 7,
                "notify": False,
                "channel": "stable",
                "targets": ["mac"],
            },
        }
        await _outcome_shown(
            buffers,
            uri,
            path,
            "you answered: email = dev@example.com, count = 7, notify = no, channel = stable, targets = mac",
        )


async def test_decline_in_the_block(workspace: Path, state_dir: Path) -> None:
    async with open_editor("helix", workspace, state_dir, init_options=NO_SHOW) as ed:
        buffers, path, uri, admitted, _ = await _ask(ed)
        _type(ed, buffers, uri, {"Your email": "dev@example.com"})
        decline = (await _block_actions(ed, uri, buffers.text(uri)))["Decline"]
        assert await run_action(ed, decline) == {}
        assert await _agent_got(ed, admitted) == {"action": "decline"}
        await _outcome_shown(buffers, uri, path, "declined")


@pytest.mark.parametrize("how", ["command", "cancel", "timeout"])
async def test_the_block_gives_way_to_the_outcome_however_the_question_ends(
    how: str, workspace: Path, state_dir: Path
) -> None:
    options: dict[str, Any] = dict(NO_SHOW)
    if how == "timeout":
        options["elicitation"] = {"timeoutMs": 1500}
    async with open_editor("helix", workspace, state_dir, init_options=options) as ed:
        buffers, path, uri, admitted, pending = await _ask(ed)
        _type(ed, buffers, uri, {"Your email": "typed@example.com"})  # typed, then answered elsewhere
        if how == "command":
            content = {"email": "a@b.co", "count": "2", "channel": "beta", "targets": "windows"}
            await ed.command(
                "acp.elicitation.respond", {"elicitationId": pending["elicitationId"], "content": content}
            )
            assert (await _agent_got(ed, admitted))["content"]["email"] == "a@b.co"
            outcome = "you answered: email = a@b.co, count = 2, channel = beta, targets = windows"
        elif how == "cancel":
            assert await ed.command("acp.cancel") == {"cancelled": True}
            assert (await ed.wait_turn_end(admitted["turnId"]))["stopReason"] == "cancelled"
            outcome = "cancelled"
        else:
            assert await _agent_got(ed, admitted) == {"action": "cancel"}
            outcome = "not answered in time (cancelled)"
        await _outcome_shown(buffers, uri, path, outcome)
        assert "typed@example.com" not in buffers.text(uri)


async def test_typed_values_survive_agent_output_and_a_resync(workspace: Path, state_dir: Path) -> None:
    # #elicit=busy: a thought streams in below the block every 100 ms while the user types.
    async with open_editor("helix", workspace, state_dir, init_options=NO_SHOW) as ed:
        buffers, path, uri, admitted, _ = await _ask(ed, "#elicit=busy details")
        typed = {"Your email": "dev@example.com", "How many": "9", "Channel": "beta", "Targets": "linux"}
        for label, value in typed.items():
            _type(ed, buffers, uri, {label: value})
            await asyncio.sleep(0.3)  # output lands meanwhile
        await until(lambda: "waiting 12. " in buffers.text(uri), "thoughts after the typing")
        # An edit the editor refuses makes the next one a resync from the file (which never
        # held the typed values): they are carried over.
        buffers.refuse_next = 1
        refused = len(buffers.refused)
        await until(lambda: len(buffers.refused) > refused, "a refused edit")
        await until(lambda: "waiting 20. " in buffers.text(uri), "more thoughts after the resync")
        text = buffers.text(uri)
        for label, value in typed.items():
            assert _field_line(text, label).group(2) == f" {value}", label
        assert "dev@example.com" not in path.read_text(), "the file keeps the block as written"
        text_before = text.index("### The agent asks:")
        assert text_before < text.index("waiting 12. "), "the block stays where it was"
        answer = (await _block_actions(ed, uri, text))["Answer the agent"]
        assert await run_action(ed, answer) == {}
        got = await _agent_got(ed, admitted)
        assert got["content"] == {
            "email": "dev@example.com",
            "count": 9,
            "notify": False,
            "channel": "beta",
            "targets": ["linux"],
        }
        await _outcome_shown(
            buffers,
            uri,
            path,
            "you answered: email = dev@example.com, count = 9, notify = no, channel = beta, targets = linux",
        )
        await until(lambda: buffers.text(uri) == path.read_text(), "the buffer to show the file")
