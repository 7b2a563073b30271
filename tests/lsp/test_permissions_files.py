"""Permissions (dialog, code action, policy) and file access (buffers, applyEdit, roots)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from tests.lsp.editor import PROFILES, Editor, applied_text, open_editor
from tests.lsp.test_commands import expect_error

SCRIPTED = Path(__file__).resolve().parents[1] / "agents" / "scripted_agent.py"
SCRIPTED_ARGS = ["--agent", f"{sys.executable} {SCRIPTED}"]


async def scripted(ed: Editor, steps: list[dict[str, Any]], timeout: float = 30) -> dict[int, Any]:
    """Run steps in the scripted agent; return {step index: {result|error}} as the agent saw them."""
    admitted, end = await ed.prompt_and_wait(json.dumps(steps), timeout=timeout)
    assert end["stopReason"] == "end_turn", end
    results: dict[int, Any] = {}
    for line in ed.text_of(admitted["turnId"]).splitlines():
        if line.startswith("RESULT "):
            _, index, payload = line.split(" ", 2)
            results[int(index)] = json.loads(payload)
    return results


def error_of(result: dict[str, Any]) -> str:
    assert "error" in result, result
    return str(result["error"]["message"])


@pytest.mark.parametrize("profile", PROFILES)
async def test_paths_outside_the_roots_are_refused(
    profile: str, workspace: Path, state_dir: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("secret\n")
    (workspace / "link.txt").symlink_to(outside)
    (workspace / "linkdir").symlink_to(tmp_path)
    async with open_editor(profile, workspace, state_dir, extra_args=SCRIPTED_ARGS) as ed:
        await ed.command("acp.session.new")
        steps = [
            {"read": f"{workspace}/../outside.txt"},
            {"read": str(outside)},
            {"read": str(workspace / "link.txt")},
            {"read": str(workspace / "linkdir" / "outside.txt")},
            {"read": "~/outside.txt"},
            {"read": "README.md"},
            {"read": outside.as_uri()},
            {"read": f"{workspace}/\u0000x"},
            {"write": f"{workspace}/../created.txt", "content": "x"},
            {"write": str(workspace / "linkdir" / "created.txt"), "content": "x"},
            {"read": str(workspace / "README.md")},
            {"read": f"{workspace}/%2e%2e/outside.txt"},
            {"read": f"{workspace}/not-utf8-\udcff.txt"},
        ]
        results = await scripted(ed, steps)
        for index in range(10):
            assert "refused" in error_of(results[index]) or "path" in error_of(results[index]), results[index]
        assert "outside the session" in error_of(results[0])
        assert "not absolute" in error_of(results[5])
        assert results[10]["result"]["content"].startswith("# Practice repo")
        assert "URL-encoded" in error_of(results[11])
        assert "UTF-8" in error_of(results[12])
        assert not (tmp_path / "created.txt").exists()
        assert outside.read_text() == "secret\n"


@pytest.mark.parametrize("profile", PROFILES)
async def test_reads_come_from_unsaved_buffers(profile: str, workspace: Path, state_dir: Path) -> None:
    async with open_editor(profile, workspace, state_dir, extra_args=SCRIPTED_ARGS) as ed:
        await ed.command("acp.session.new")
        readme = workspace / "README.md"
        uri = ed.open(readme)
        ed.change(uri, "unsaved α\nβ✓ second\nγ third\n")
        multi = workspace / "multi.txt"
        multi.write_text("on disk 1\non disk 2\non disk 3\n")
        results = await scripted(
            ed,
            [
                {"read": str(readme)},
                {"read": str(readme), "line": 2, "limit": 1},
                {"read": str(multi), "line": 2},
                {"read": str(multi), "line": 0},
                {"read": str(workspace / "missing.txt")},
            ],
        )
        assert results[0]["result"]["content"] == "unsaved α\nβ✓ second\nγ third\n"
        assert results[1]["result"]["content"] == "β✓ second\n"
        assert results[2]["result"]["content"] == "on disk 2\non disk 3\n"
        assert "line" in error_of(results[3])
        assert "not found" in error_of(results[4])


@pytest.mark.parametrize("profile", PROFILES)
async def test_writes_to_open_documents_go_through_apply_edit(
    profile: str, workspace: Path, state_dir: Path
) -> None:
    async with open_editor(profile, workspace, state_dir, extra_args=SCRIPTED_ARGS) as ed:
        await ed.command("acp.session.new")
        app = workspace / "src" / "app.py"
        on_disk = app.read_text()
        uri = ed.open(app)
        results = await scripted(ed, [{"write": str(app), "content": "print('new')\n"}])
        assert results[0] == {"result": {}}
        assert app.read_text() == on_disk, "the editor owns open buffers; disk is untouched"
        assert len(ed.applied_edits) == 1
        edit = ed.applied_edits[0].edit
        if edit.document_changes:
            change = edit.document_changes[0]
            assert change.text_document.uri == uri
            text_edit = change.edits[0]
        else:
            text_edit = edit.changes[uri][0]
        assert text_edit.new_text == "print('new')\n"
        # The document ends with a newline: the range ends at the start of the empty last line.
        assert (text_edit.range.end.line, text_edit.range.end.character) == (2, 0)
        ed.apply_edits = False
        results = await scripted(ed, [{"write": str(app), "content": "rejected\n"}])
        assert "rejected" in error_of(results[0])


@pytest.mark.parametrize("profile", PROFILES)
async def test_writes_to_closed_files(profile: str, workspace: Path, state_dir: Path) -> None:
    """A file the editor has not open is written by the sidecar itself, through the very directory
    it checked (an atomic write, no temp file left), never as a create-file edit the editor would
    carry out by path (an agent could swap a parent for a symlink in between)."""
    async with open_editor(profile, workspace, state_dir, extra_args=SCRIPTED_ARGS) as ed:
        await ed.command("acp.session.new")
        new_file = workspace / "new" / "file.txt"
        results = await scripted(ed, [{"write": str(new_file), "content": "hello ✓\n"}])
        assert results[0] == {"result": {}}
        assert not ed.applied_edits
        assert new_file.read_text() == "hello ✓\n"
        assert not [p for p in new_file.parent.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("profile", PROFILES)
async def test_apply_to_a_closed_file_is_written_by_the_sidecar(
    profile: str, workspace: Path, state_dir: Path
) -> None:
    """`acp.edit.apply` for a file the editor has not open: written by the sidecar only while the
    file still holds what the diff was fitted to; an open file goes through the editor."""
    async with open_editor(profile, workspace, state_dir) as ed:
        ed.hold_message_requests = True
        await ed.command("acp.session.new")
        readme = workspace / "README.md"
        before = readme.read_text()
        admitted = await ed.command("acp.prompt", "#edit add a line")
        pending = await ed.wait_for("acp/permission", lambda p: p["state"] == "pending")
        target = {"sessionId": admitted["sessionId"], "toolCallId": pending["toolCall"]["toolCallId"]}
        assert await ed.command("acp.edit.apply", target) == {"applied": True}
        assert not ed.applied_edits, "a closed file is not the editor's to write"
        after = readme.read_text()
        assert after.startswith(before) and "Edited by the acp-sidecar demo agent" in after
        # Already applied: nothing to do, still true.
        assert await ed.command("acp.edit.apply", target) == {"applied": True}
        assert readme.read_text() == after
        reject = {"requestId": pending["requestId"], "optionId": "reject-once"}
        await ed.command("acp.permission.respond", reject)
        await ed.wait_turn_end(admitted["turnId"])


def _option_titles(params: types.ShowMessageRequestParams) -> list[str]:
    return [a.title for a in params.actions or []]


@pytest.mark.parametrize("profile", ["neovim", "vscode"])
async def test_permission_by_dialog(profile: str, workspace: Path, state_dir: Path) -> None:
    async with open_editor(profile, workspace, state_dir, extra_args=SCRIPTED_ARGS) as ed:
        await ed.command("acp.session.new")
        results = await scripted(ed, [{"permission": "execute"}])
        assert results[0]["result"]["outcome"] == {"outcome": "selected", "optionId": "yes"}
        assert _option_titles(ed.message_requests[0]) == ["Allow", "Reject"]
        # The user dismisses the dialog: not a rejection (docs/protocol.md); the request stays
        # pending until answered another way, here "Reject" through acp.permission.respond.
        ed.permission_choice = None
        admitted = await ed.command("acp.prompt", json.dumps([{"permission": "execute"}]))
        pending = await ed.wait_for(
            "acp/permission", lambda p: p["state"] == "pending" and p["turnId"] == admitted["turnId"]
        )
        await ed.wait_message(lambda m: "still waiting" in m)
        await ed.command("acp.permission.respond", {"requestId": pending["requestId"], "optionId": "no"})
        await ed.wait_turn_end(admitted["turnId"])
        assert '"optionId": "no"' in ed.text_of(admitted["turnId"])


async def test_permission_by_code_action_on_helix(workspace: Path, state_dir: Path) -> None:
    # The 25.07.1 release: the Helix run in tests/editors/helix offers showMessageRequest.
    async with open_editor("helix-release", workspace, state_dir, extra_args=SCRIPTED_ARGS) as ed:
        await ed.command("acp.session.new")
        uri = ed.open(workspace / "README.md")
        admitted = await ed.command("acp.prompt", json.dumps([{"permission": "execute"}]))
        await ed.wait_for("acp/status", lambda s: s["state"] == "waiting_permission")
        assert not ed.message_requests, "Helix 25.07 has no showMessageRequest"
        await ed.wait_message(lambda m: "permission" in m and "acp.permission.respond" in m)
        actions = await ed.code_actions(uri)
        permission = [a for a in actions or [] if a.command and a.command.command == "acp.permission.respond"]
        assert [a.command.arguments[0]["optionId"] for a in permission] == ["yes", "no"]
        chosen = permission[1].command
        await ed.command(chosen.command, *chosen.arguments)
        await ed.wait_turn_end(admitted["turnId"])
        assert '"optionId": "no"' in ed.text_of(admitted["turnId"])


@pytest.mark.parametrize(
    ("policy", "kind", "expected", "asks"),
    [
        ("reject", "execute", "no", False),
        ("reject", "read", "no", False),
        ("allow_reads", "read", "yes", False),
        ("allow_reads", "search", "yes", False),
        ("allow_reads", "edit", "yes", True),
    ],
)
async def test_permission_policies(
    policy: str, kind: str, expected: str, asks: bool, workspace: Path, state_dir: Path
) -> None:
    options = {"permissions": policy}
    async with open_editor(
        "vscode", workspace, state_dir, init_options=options, extra_args=SCRIPTED_ARGS
    ) as ed:
        await ed.command("acp.session.new")
        results = await scripted(ed, [{"permission": kind}])
        assert results[0]["result"]["outcome"] == {"outcome": "selected", "optionId": expected}
        assert bool(ed.message_requests) is asks


async def test_cancel_answers_a_pending_permission_cancelled(workspace: Path, state_dir: Path) -> None:
    async with open_editor("vscode", workspace, state_dir) as ed:
        ed.hold_message_requests = True
        await ed.command("acp.session.new")
        before = (workspace / "README.md").read_text()
        admitted = await ed.command("acp.prompt", "#edit please")
        await ed.wait_for("acp/status", lambda s: s["state"] == "waiting_permission")
        assert await ed.command("acp.cancel") == {"cancelled": True}
        end = await ed.wait_turn_end(admitted["turnId"], timeout=10)
        assert end["stopReason"] == "cancelled"
        ed.hold_message_requests = False
        await asyncio.sleep(0.3)
        assert (workspace / "README.md").read_text() == before
        assert not ed.applied_edits
        assert (await ed.command("acp.status"))["state"] == "idle"


@pytest.mark.parametrize("profile", PROFILES)
async def test_demo_edit_allowed_and_apply_code_action(
    profile: str, workspace: Path, state_dir: Path
) -> None:
    async with open_editor(profile, workspace, state_dir) as ed:
        ed.hold_message_requests = True
        await ed.command("acp.session.new")
        readme = workspace / "README.md"
        uri = ed.open(readme)
        admitted = await ed.command("acp.prompt", "#edit add a line")
        await ed.wait_for("acp/status", lambda s: s["state"] == "waiting_permission")
        actions = await ed.code_actions(uri, end_character=3)
        titles = [a.title for a in actions or []]
        assert "Ask agent about selection" in titles
        apply = next(a for a in actions or [] if a.title.startswith("Apply agent edit: "))
        # The tool call's title, and its tool's name (ToolCall.name) next to it.
        assert apply.title == "Apply agent edit: Edit README.md (write_file)", apply.title
        assert apply.command is not None and apply.command.command == "acp.edit.apply"
        assert apply.edit is not None, "the edit itself is the preview"
        result = await ed.command("acp.edit.apply", *apply.command.arguments)
        assert result == {"applied": True}
        assert "Edited by the acp-sidecar demo agent" in applied_text(ed.applied_edits[-1].edit)
        # Answer the permission through the code action too (works on every profile).
        permission = [a for a in actions or [] if a.command and a.command.command == "acp.permission.respond"]
        allow = next(a for a in permission if a.command.arguments[0]["optionId"] == "allow-once")
        await ed.command(allow.command.command, *allow.command.arguments)
        end = await ed.wait_turn_end(admitted["turnId"])
        assert end["stopReason"] == "end_turn"
        ed.hold_message_requests = False


async def test_a_snippet_diff_is_applied_into_the_file_not_over_it(workspace: Path, state_dir: Path) -> None:
    """claude-agent-acp sends an Edit's diff as only the changed part: applying it (code action,
    `acp.edit.apply`) changes that part of the file; writing it over the file would lose the rest."""
    async with open_editor("neovim", workspace, state_dir, env={"ACP_DEMO_DIFFS": "snippet"}) as ed:
        ed.hold_message_requests = True  # the permission waits for this test, not the dialog
        await ed.command("acp.session.new")
        readme = workspace / "README.md"
        before = readme.read_text()
        uri = ed.open(readme)
        admitted = await ed.command("acp.prompt", "#edit add a line")
        pending = await ed.wait_for("acp/permission", lambda p: p["state"] == "pending")
        [diff] = [c for c in pending["toolCall"]["content"] if c["type"] == "diff"]
        assert diff["oldText"] == "Line four.\n" and diff["newText"].startswith("Line four.\n\nEdited by")
        actions = await ed.code_actions(uri)
        apply = next(a for a in actions or [] if a.title.startswith("Apply agent edit: "))
        assert apply.edit is not None and applied_text(apply.edit) == (
            before + "\nEdited by the acp-sidecar demo agent.\n"
        )
        assert apply.command is not None
        assert await ed.command("acp.edit.apply", *apply.command.arguments) == {"applied": True}
        assert applied_text(ed.applied_edits[-1].edit) == before + "\nEdited by the acp-sidecar demo agent.\n"
        await ed.command(
            "acp.permission.respond", {"requestId": pending["requestId"], "optionId": "allow-once"}
        )
        end = await ed.wait_turn_end(admitted["turnId"])
        assert end["stopReason"] == "end_turn"
        # The agent's own write landed the same text: applying again changes nothing.
        assert await ed.command("acp.edit.apply", *apply.command.arguments) == {"applied": True}


async def test_an_edit_changed_in_review_is_written_as_the_user_left_it(
    workspace: Path, state_dir: Path, tmp_path: Path
) -> None:
    """`acp.permission.respond` with `edits`: the agent's write of that file lands the user's text;
    a reviewed file the agent never writes is said to be not applied; bad `edits` are refused."""
    async with open_editor("vscode", workspace, state_dir) as ed:
        ed.hold_message_requests = True
        await ed.command("acp.session.new")
        readme = workspace / "README.md"
        before = readme.read_text()
        ed.open(readme)
        mine = before + "Reviewed, and written my way.\n"

        async def ask_edit() -> tuple[dict[str, Any], dict[str, Any]]:
            admitted = await ed.command("acp.prompt", "#edit add a line")
            pending = await ed.wait_for(
                "acp/permission", lambda p: p["state"] == "pending" and p["turnId"] == admitted["turnId"]
            )
            return admitted, pending

        admitted, pending = await ask_edit()
        rid = pending["requestId"]
        outside = str(tmp_path / "elsewhere.txt")
        for bad, why in (
            ({"optionId": "reject-once", "edits": [{"path": str(readme), "text": mine}]}, "allows the edit"),
            ({"optionId": "allow-once", "edits": [{"path": outside, "text": "x"}]}, "outside"),
            ({"optionId": "allow-once", "edits": [{"path": str(readme)}]}, "edits[0]"),
            ({"optionId": "allow-once", "edits": []}, "edits must be"),
        ):
            err = (await expect_error(ed, "acp.permission.respond", {"requestId": rid, **bad})).message
            assert why in err, err
        assert not (tmp_path / "elsewhere.txt").exists()
        await ed.command(
            "acp.permission.respond",
            {"requestId": rid, "optionId": "allow-once", "edits": [{"path": str(readme), "text": mine}]},
        )
        assert (await ed.wait_turn_end(admitted["turnId"]))["stopReason"] == "end_turn"
        assert applied_text(ed.applied_edits[-1].edit) == mine
        assert "Edited by the acp-sidecar demo agent" not in applied_text(ed.applied_edits[-1].edit)

        # A reviewed file the agent does not write: said, and not kept for a later write.
        admitted, pending = await ask_edit()
        app = workspace / "src" / "app.py"
        await ed.command(
            "acp.permission.respond",
            {
                "requestId": pending["requestId"],
                "optionId": "allow-once",
                "edits": [{"path": str(app), "text": "x"}],
            },
        )
        assert (await ed.wait_turn_end(admitted["turnId"]))["stopReason"] == "end_turn"
        await ed.wait_message(lambda m: "src/app.py: your reviewed version was not applied" in m)
        assert "Edited by the acp-sidecar demo agent" in applied_text(ed.applied_edits[-1].edit)
        assert app.read_text() != "x"


async def test_a_reviewed_edit_replaces_what_an_agent_wrote_to_disk_itself(
    workspace: Path, state_dir: Path
) -> None:
    """claude-agent-acp writes files itself and sends only the changed part as its diff: once its
    tool call completes, the file holding exactly its edit gets the user's reviewed version."""
    env = {"ACP_DEMO_CAPS": "own-writes", "ACP_DEMO_DIFFS": "snippet"}
    async with open_editor("neovim", workspace, state_dir, env=env) as ed:
        ed.hold_message_requests = True
        await ed.command("acp.session.new")
        readme = workspace / "README.md"
        mine = readme.read_text() + "My reviewed line.\n"
        admitted = await ed.command("acp.prompt", "#edit add a line")
        pending = await ed.wait_for("acp/permission", lambda p: p["state"] == "pending")
        await ed.command(
            "acp.permission.respond",
            {
                "requestId": pending["requestId"],
                "optionId": "allow-once",
                "edits": [{"path": str(readme), "text": mine}],
            },
        )
        assert (await ed.wait_turn_end(admitted["turnId"]))["stopReason"] == "end_turn"
        await ed.wait_message(lambda m: "README.md" in m and "your reviewed version replaced it" in m)
        assert readme.read_text() == mine
        assert not ed.applied_edits, "the agent wrote the disk, not the editor"


async def test_prompt_with_selection_context(workspace: Path, state_dir: Path) -> None:
    for caps, kind in (("", "resource"), ("no-embedded", "resource_link")):
        async with open_editor("helix", workspace, state_dir, env={"ACP_DEMO_CAPS": caps}) as ed:
            app = workspace / "src" / "app.py"
            uri = ed.open(app)
            rng = {"start": {"line": 1, "character": 4}, "end": {"line": 1, "character": 10}}
            admitted, end = await ed.prompt_and_wait("#echo what is this?", uri=uri, range=rng)
            assert end["stopReason"] == "end_turn"
            echoed = [
                u["update"]["content"]
                for u in ed.of("acp/sessionUpdate")
                if u["turnId"] == admitted["turnId"] and u["update"]["sessionUpdate"] == "user_message_chunk"
            ]
            assert any(c.get("type") == kind for c in echoed), echoed
            if kind == "resource":
                block = next(c for c in echoed if c["type"] == "resource")
                assert block["resource"]["text"] == "return" and block["resource"]["uri"] == uri
            else:
                assert any(c.get("type") == "text" and "return" in c.get("text", "") for c in echoed)
    assert os.path.exists(workspace)


@pytest.mark.parametrize("meanwhile", ["nothing", "appends a line", "changes a line"])
async def test_a_reviewed_edit_never_replaces_what_another_program_wrote_after_the_agent(
    meanwhile: str, workspace: Path, state_dir: Path
) -> None:
    """The agent writes the disk itself; another program changes the file before the agent's tool
    call completes. The user's reviewed version replaces only exactly the agent's edit."""
    notes = workspace / "notes.txt"
    notes.write_text("one\ntwo\n")
    agents_edit, mine = "one\ntwo\nthree\n", "one\nmine\n"
    others = {
        "nothing": agents_edit,
        "appends a line": agents_edit + "another program's line\n",
        "changes a line": agents_edit.replace("one", "ONE"),
    }[meanwhile]
    signal = workspace.parent / f"signal-{os.getpid()}"
    diff = {"type": "diff", "path": str(notes), "oldText": "two\n", "newText": "two\nthree\n"}
    call = {"toolCallId": "edit-1", "title": "Edit notes.txt", "kind": "edit", "content": [diff]}
    options = [{"optionId": "yes", "name": "Allow", "kind": "allow_once"}]
    steps: list[dict[str, Any]] = [
        {"update": {"sessionUpdate": "tool_call", **call, "status": "pending"}},
        {"request": "session/request_permission", "params": {"toolCall": call, "options": options}},
        {"disk_write": str(notes), "content": agents_edit},
        {"wait_file": str(signal)},
        {"update": {"sessionUpdate": "tool_call_update", "toolCallId": "edit-1", "status": "completed"}},
    ]
    async with open_editor("vscode", workspace, state_dir, extra_args=SCRIPTED_ARGS) as ed:
        ed.hold_message_requests = True
        sid = (await ed.command("acp.session.new"))["sessionId"]
        steps[1]["params"]["sessionId"] = sid
        admitted = await ed.command("acp.prompt", json.dumps(steps))
        pending = await ed.wait_for("acp/permission", lambda p: p["state"] == "pending")
        await ed.command(
            "acp.permission.respond",
            {
                "requestId": pending["requestId"],
                "optionId": "yes",
                "edits": [{"path": str(notes), "text": mine}],
            },
        )
        async with asyncio.timeout(15):
            while notes.read_text() != agents_edit:  # the agent's own write
                await asyncio.sleep(0.02)
        notes.write_text(others)  # another program, before the agent's tool call completes
        signal.touch()
        assert (await ed.wait_turn_end(admitted["turnId"]))["stopReason"] == "end_turn"
        if meanwhile == "nothing":
            await ed.wait_message(lambda m: "notes.txt: the agent wrote its own edit" in m)
            assert notes.read_text() == mine
        else:
            said = await ed.wait_message(lambda m: "notes.txt: your reviewed version was not applied" in m)
            assert "changed" in said, said
            assert notes.read_text() == others, "what the other program wrote is kept"


async def test_no_apply_action_for_a_diff_outside_the_roots(workspace: Path, state_dir: Path) -> None:
    """A diff of a file outside the session's roots is refused by `acp.edit.apply`; no code
    action offers it either (its preview alone would change the file with one click)."""
    outside = workspace.parent / f"outside-{os.getpid()}.txt"
    outside.write_text("theirs\n")
    inside = workspace / "inside.txt"
    inside.write_text("mine\n")
    signal = workspace.parent / f"signal-{os.getpid()}"

    def call(call_id: str, *paths: Path) -> dict[str, Any]:
        diffs = [{"type": "diff", "path": str(p), "oldText": None, "newText": "agent\n"} for p in paths]
        return {"sessionUpdate": "tool_call", "toolCallId": call_id, "title": call_id, "kind": "edit",
                "status": "pending", "content": diffs}  # fmt: skip

    steps: list[dict[str, Any]] = [
        {"update": call("out", outside)},
        {"update": call("in", inside)},
        {"update": call("both", inside, outside)},
        {"wait_file": str(signal)},
    ]
    async with open_editor("vscode", workspace, state_dir, extra_args=SCRIPTED_ARGS) as ed:
        sid = (await ed.command("acp.session.new"))["sessionId"]
        admitted = await ed.command("acp.prompt", json.dumps(steps))
        await ed.wait_for("acp/sessionUpdate", lambda u: u["update"].get("toolCallId") == "both", timeout=15)
        try:
            offered = [a for a in await ed.code_actions(ed.open(outside)) if a.title.startswith("Apply")]
            assert offered == [], [a.title for a in offered]
            offered = [a for a in await ed.code_actions(ed.open(inside)) if a.title.startswith("Apply")]
            assert [a.title for a in offered] == ["Apply agent edit: in"]
            for call_id in ("out", "both"):
                error = await expect_error(ed, "acp.edit.apply", {"sessionId": sid, "toolCallId": call_id})
                assert "outside" in error.message, error.message
        finally:
            signal.touch()
        assert (await ed.wait_turn_end(admitted["turnId"]))["stopReason"] == "end_turn"
        assert outside.read_text() == "theirs\n"
