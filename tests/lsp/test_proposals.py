"""Edit proposals: what each file of a tool call becomes, computed by the sidecar from the editor's
buffer (with its version) or the disk, carried by `acp/permission` and `acp/sessionUpdate`, and
asked again with `acp.edit.proposals`. Every notification's shape is checked."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.lsp.editor import Editor, open_editor
from tests.lsp.proposals_shape import PROPOSAL_SCHEMA, check_proposals
from tests.lsp.test_commands import expect_error

EDITED = "\nEdited by the acp-sidecar demo agent.\n"
SCRIPTED = Path(__file__).resolve().parents[1] / "agents" / "scripted_agent.py"
SCRIPTED_ARGS = ["--agent", f"{sys.executable} {SCRIPTED}"]


def check_all(ed: Editor) -> None:
    """Every `proposals` the editor got has the documented shape; a resolved request has none."""
    for p in ed.of("acp/permission"):
        if p["state"] == "pending":
            check_proposals(p["proposals"])
        else:
            assert p["proposals"] is None, p
    for u in ed.of("acp/sessionUpdate"):
        if "proposals" in u:
            assert u["update"]["sessionUpdate"] in ("tool_call", "tool_call_update"), u
            check_proposals(u["proposals"])


def test_the_schema_refuses_what_the_protocol_does_not_promise() -> None:
    import jsonschema
    import pytest

    good = {"path": "/a", "uri": "file:///a", "version": 3, "fit": "applies", "text": "x", "reason": None}
    check_proposals([good])
    for bad in (
        {**good, "fit": "applies-whole"},
        {**good, "fit": "conflict"},  # a conflict has no text
        {**good, "text": None},  # left out, but no reason why
        {k: v for k, v in good.items() if k != "version"},
        {**good, "extra": 1},
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, PROPOSAL_SCHEMA)


async def test_an_edit_of_two_files_proposes_each_from_its_buffer_or_the_disk(
    workspace: Path, state_dir: Path
) -> None:
    """One tool call editing two files: the open one from its unsaved buffer (with its version),
    the closed one from the disk (version null). The buffer changes: asking again follows it."""
    async with open_editor("neovim", workspace, state_dir) as ed:
        ed.hold_message_requests = True
        await ed.command("acp.session.new")
        readme, app = workspace / "README.md", workspace / "src" / "app.py"
        unsaved = readme.read_text() + "unsaved line\n"
        uri = ed.open(readme, unsaved)
        ed.change(uri, unsaved)  # version 2
        admitted = await ed.command("acp.prompt", "#edit=README.md,src/app.py")
        pending = await ed.wait_for(
            "acp/permission", lambda p: p["state"] == "pending" and p["turnId"] == admitted["turnId"]
        )
        first, second = check_proposals(pending["proposals"])
        assert first == {
            "path": str(readme),
            "uri": uri,
            "version": 2,
            "fit": "applies",
            "text": unsaved + EDITED,
            "reason": None,
        }
        assert second == {
            "path": str(app),
            "uri": app.as_uri(),
            "version": None,
            "fit": "applies",
            "text": app.read_text() + EDITED,
            "reason": None,
        }
        # The tool call itself carried the same proposals.
        [call] = [u for u in ed.of("acp/sessionUpdate") if u["update"].get("sessionUpdate") == "tool_call"]
        assert call["proposals"] == pending["proposals"]
        tool_call_id = pending["toolCall"]["toolCallId"]

        # The user types on: the client's buffer is newer than the proposal, so it asks again.
        newer = "# Rewritten\n" + unsaved
        ed.change(uri, newer)
        asked = await ed.command(
            "acp.edit.proposals", {"sessionId": admitted["sessionId"], "toolCallId": tool_call_id}
        )
        first, second = check_proposals(asked["proposals"])
        # The agent's old text (the whole buffer then) is found once in the newer one: replaced there.
        assert (first["version"], first["fit"], first["text"]) == (3, "applies", newer + EDITED)
        ed.change(uri, "all gone\n")
        asked = await ed.command(
            "acp.edit.proposals", {"sessionId": admitted["sessionId"], "toolCallId": tool_call_id}
        )
        first, second = check_proposals(asked["proposals"])
        assert (first["version"], first["fit"], first["text"]) == (4, "conflict", None)
        assert "old text" in first["reason"]
        assert second["fit"] == "applies"
        for bad in (
            {"sessionId": admitted["sessionId"], "toolCallId": "nope"},
            {"sessionId": "nope", "toolCallId": tool_call_id},
        ):
            await expect_error(ed, "acp.edit.proposals", bad)

        await ed.command(
            "acp.permission.respond", {"requestId": pending["requestId"], "optionId": "reject-once"}
        )
        assert (await ed.wait_turn_end(admitted["turnId"]))["stopReason"] == "end_turn"
        check_all(ed)
        # The failed tool call's update proposes nothing any more.
        failed = [u for u in ed.of("acp/sessionUpdate") if u["update"].get("status") == "failed"]
        assert failed and all("proposals" not in u for u in failed)


async def test_malformed_refused_and_oversized_diffs_get_a_fit_and_a_reason(
    workspace: Path, state_dir: Path, tmp_path: Path
) -> None:
    """What the three editor copies of the rule once disagreed on, now said once: a non-string
    `newText` is a conflict; a path outside the roots or not absolute is unavailable (and not
    read); a file past the bound has no text, and says why."""
    big = workspace / "big.txt"
    big.write_text("x" * (1024 * 1024 + 1))
    outside = tmp_path / "secret.txt"
    outside.write_text("not for the editor\n")
    readme = workspace / "README.md"
    diffs: list[dict[str, Any]] = [
        {"type": "diff", "path": str(readme), "oldText": "Line four.", "newText": 4},
        {"type": "diff", "path": str(outside), "oldText": None, "newText": "y"},
        {"type": "diff", "path": "relative.txt", "oldText": None, "newText": "z"},
        {"type": "diff", "path": str(big), "oldText": None, "newText": "small now"},
        {
            "type": "diff",
            "path": str(workspace / "huge.txt"),
            "oldText": None,
            "newText": "h" * (1024 * 1024 + 1),
        },
        {"type": "diff", "path": str(workspace / "new.txt"), "oldText": None, "newText": "new\n"},
    ]
    steps = [
        {
            "update": {
                "sessionUpdate": "tool_call",
                "toolCallId": "t1",
                "title": "Edit",
                "status": "pending",
                "content": diffs,
            }
        }
    ]
    async with open_editor("vscode", workspace, state_dir, extra_args=SCRIPTED_ARGS) as ed:
        session = (await ed.command("acp.session.new"))["sessionId"]
        admitted, end = await ed.prompt_and_wait(json.dumps(steps))
        assert end["stopReason"] == "end_turn"
        [call] = [u for u in ed.of("acp/sessionUpdate") if u["update"].get("toolCallId") == "t1"]
        asked = await ed.command("acp.edit.proposals", {"sessionId": session, "toolCallId": "t1"})
        assert asked["proposals"] == call["proposals"]
        by_path = {p["path"]: p for p in check_proposals(call["proposals"])}
        assert list(by_path) == [d["path"] for d in diffs]
        assert by_path[str(readme)]["fit"] == "conflict"
        assert by_path[str(outside)]["fit"] == "unavailable" and "outside" in by_path[str(outside)]["reason"]
        assert (
            by_path["relative.txt"]["fit"] == "unavailable"
            and "absolute" in by_path["relative.txt"]["reason"]
        )
        assert by_path[str(big)]["fit"] == "unavailable" and "1 MiB" in by_path[str(big)]["reason"]
        huge = by_path[str(workspace / "huge.txt")]
        assert (huge["fit"], huge["text"]) == ("applies", None) and "1 MiB" in huge["reason"]
        assert by_path[str(workspace / "new.txt")]["text"] == "new\n"
        check_all(ed)
