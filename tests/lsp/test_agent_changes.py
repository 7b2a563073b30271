"""The agent's changes after they landed (docs/protocol.md, "Agent changes"), over the real LSP pipe:
one diagnostic per hunk, revert and keep through code actions and commands, hunks that follow the
user's edits, in UTF-16 (Neovim, VS Code) and UTF-8 (Helix) positions."""

from __future__ import annotations

import asyncio
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from tests.lsp.buffers import Buffers, apply_lsp_edits
from tests.lsp.editor import Editor, open_editor
from tests.lsp.test_permissions_files import SCRIPTED_ARGS, scripted
from tests.schema_check import assert_valid

ORIGINAL = "l0\nl1\nl2\nl3\nl4\nl5\n"
# Line 1 rewritten (non-ASCII: its end differs in UTF-8 and UTF-16), line 4 made two.
AGENT = "l0\nONE ünï 🎉\nl2\nl3\nFOUR a\nFOUR b\nl5\n"


def units(text: str, encoding: str) -> int:
    if encoding == "utf-8":
        return len(text.encode("utf-8"))
    return len(text.encode("utf-16-le")) // 2


async def until(check: Callable[[], Any], what: str, timeout: float = 20) -> Any:
    """Wait (bounded) until `check()` is truthy; its value."""
    try:
        async with asyncio.timeout(timeout):
            while not (found := check()):
                await asyncio.sleep(0.02)
    except TimeoutError:
        raise AssertionError(f"never saw {what}") from None
    return found


def ours(ed: Editor, uri: str) -> list[types.Diagnostic]:
    return [d for d in ed.client.diagnostics.get(uri, []) if d.source == "acp-sidecar"]


async def diagnostics(ed: Editor, uri: str, count: int, timeout: float = 20) -> list[types.Diagnostic]:
    found: list[types.Diagnostic] = await until(
        lambda: (lambda d: [d] if len(d) == count else None)(ours(ed, uri)),
        f"{count} diagnostics on {uri}",
        timeout,
    )
    return sorted(found[0], key=lambda d: d.range.start.line)


async def run_action(ed: Editor, uri: str, line: int, title: str) -> Any:
    actions = await ed.code_actions(uri, line)
    action = next((a for a in actions if a.title == title), None)
    assert action is not None and action.command is not None, [a.title for a in actions]
    return await ed.command(action.command.command, *(action.command.arguments or []))


async def agent_writes(ed: Editor, path: Path, content: str) -> None:
    results = await scripted(ed, [{"write": str(path), "content": content}])
    assert "result" in results[0], results
    assert_valid("WriteTextFileResponse", results[0]["result"])


def partial(ed: Editor, uri: str, start: tuple[int, int], end: tuple[int, int], text: str) -> None:
    """The user types: one incremental change, as editors send them."""
    version, before = ed.docs[uri]
    rng = types.Range(
        start=types.Position(line=start[0], character=start[1]),
        end=types.Position(line=end[0], character=end[1]),
    )
    after = apply_lsp_edits(before, [types.TextEdit(range=rng, new_text=text)], ed_encoding(ed))
    ed.docs[uri] = (version + 1, after)
    ed.client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version + 1),
            content_changes=[types.TextDocumentContentChangePartial(range=rng, text=text)],
        )
    )


@pytest.mark.parametrize("profile", ["neovim", "helix"])
async def test_hunks_of_a_write_shown_reverted_and_kept(
    profile: str, workspace: Path, state_dir: Path
) -> None:
    target = workspace / "notes.txt"
    target.write_text(ORIGINAL)
    async with open_editor(profile, workspace, state_dir, extra_args=SCRIPTED_ARGS) as ed:
        buffers = Buffers.attach(ed)
        await ed.command("acp.session.new")
        uri = ed.open(target)
        await agent_writes(ed, target, AGENT)
        assert buffers.text(uri) == AGENT, "written through the editor's buffer (applyEdit)"

        first, second = await diagnostics(ed, uri, 2)
        assert (first.severity, second.severity) == (types.DiagnosticSeverity.Hint,) * 2
        assert first.message.startswith("changed by the agent · ")
        assert first.message.endswith("· just now\nwas:\nl1")
        assert second.message.endswith("was:\nl4")
        assert (first.range.start.line, first.range.start.character) == (1, 0)
        # The end of the agent's line, in the negotiated units (Helix: UTF-8 bytes).
        assert (first.range.end.line, first.range.end.character) == (1, units("ONE ünï 🎉", buffers.encoding))
        assert (second.range.start.line, second.range.end.line) == (4, 5)

        listed = await ed.command("acp.changes.list", {"uri": uri})
        [entry] = listed["files"]
        assert entry["uri"] == uri
        assert [h["oldText"] for h in entry["hunks"]] == ["l1\n", "l4\n"]
        assert [h["newText"] for h in entry["hunks"]] == ["ONE ünï 🎉\n", "FOUR a\nFOUR b\n"]

        shown = await run_action(ed, uri, 1, "Show the agent's change")
        [params] = [d for d in ed.client.shown_documents if d.uri == shown["uri"]]
        assert shown["shown"] is True
        copy = Path(str(shown["uri"]).removeprefix("file://"))
        assert copy.read_text() == "l0\nl1\nl2\nl3\nFOUR a\nFOUR b\nl5\n", "the file before this hunk"
        assert copy.name.endswith(".txt") and stat.S_IMODE(copy.stat().st_mode) == 0o400
        assert copy.is_relative_to(state_dir)
        assert params.selection is not None
        assert (params.selection.start.line, params.selection.end.line) == (1, 2)

        result = await run_action(ed, uri, 1, "Revert this agent change")
        assert result["reverted"] == [entry["hunks"][0]["hunkId"]] and result["refused"] == []
        assert buffers.text(uri) == "l0\nl1\nl2\nl3\nFOUR a\nFOUR b\nl5\n", "exactly the old line back"
        [left] = await diagnostics(ed, uri, 1)
        assert left.range.start.line == 4

        await run_action(ed, uri, 5, "Keep this agent change")
        await diagnostics(ed, uri, 0)
        assert buffers.text(uri) == "l0\nl1\nl2\nl3\nFOUR a\nFOUR b\nl5\n", "kept: the text stays"
        assert (await ed.command("acp.changes.list"))["files"] == []


@pytest.mark.parametrize("profile", ["vscode", "helix"])
async def test_hunks_follow_the_users_edits(profile: str, workspace: Path, state_dir: Path) -> None:
    target = workspace / "notes.txt"
    target.write_text(ORIGINAL)
    async with open_editor(profile, workspace, state_dir, extra_args=SCRIPTED_ARGS) as ed:
        Buffers.attach(ed)
        await ed.command("acp.session.new")
        uri = ed.open(target)
        await agent_writes(ed, target, AGENT)
        await diagnostics(ed, uri, 2)

        partial(ed, uri, (0, 0), (0, 0), "new top line\n")  # above both: they move down one line
        first, second = await until(
            lambda: (lambda d: d if d and d[0].range.start.line == 2 else None)(
                sorted(ours(ed, uri), key=lambda d: d.range.start.line)
            ),
            "the hunks moved down",
        )
        assert second.range.start.line == 5
        partial(ed, uri, (0, 3), (0, 3), "é")  # on a line above, not a new line: nothing moves
        partial(ed, uri, (8, 0), (8, 0), "below\n")  # below both
        partial(ed, uri, (6, 4), (6, 6), "xy")  # inside the second: it is the user's now
        [left] = await diagnostics(ed, uri, 1)
        assert left.range.start.line == 2
        assert (left.range.end.line, left.range.end.character) == (2, units("ONE ünï 🎉", ed_encoding(ed)))

        result = await ed.command("acp.changes.revert", {"uri": uri})
        assert len(result["reverted"]) == 1
        await diagnostics(ed, uri, 0)
        assert ed.docs[uri][1] == "newé top line\nl0\nl1\nl2\nl3\nFOUR a\nFOURxy\nl5\nbelow\n"


async def test_hunks_follow_whole_texts_of_a_big_buffer_in_order(workspace: Path, state_dir: Path) -> None:
    """An editor that sends whole texts (as the test editor does): past buffer_steps.SYNC_BREAKS
    the diff runs on the kernel's worker; the changes sent while it runs wait behind it, and the
    hunks move exactly as they would on a small buffer."""
    target = workspace / "big.txt"
    lines = [f"line {i}\n" for i in range(3000)]
    target.write_text("".join(lines))
    async with open_editor("vscode", workspace, state_dir, extra_args=SCRIPTED_ARGS) as ed:
        Buffers.attach(ed)
        await ed.command("acp.session.new")
        uri = ed.open(target)
        written = list(lines)
        written[1000], written[1500] = "AGENT 1000\n", "AGENT 1500\n"
        await agent_writes(ed, target, "".join(written))
        assert [d.range.start.line for d in await diagnostics(ed, uri, 2)] == [1000, 1500]
        ed.change(uri, "one\n" + "".join(written))  # diffed on the worker
        ed.change(uri, "one\ntwo\n" + "".join(written))  # behind it
        # Behind them: the user types into the agent's line 1500, line 1502 only after the two.
        partial(ed, uri, (1502, 0), (1502, 5), "typed")
        [left] = await diagnostics(ed, uri, 1)
        assert left.range.start.line == 1002
        [entry] = (await ed.command("acp.changes.list", {"uri": uri}))["files"]
        assert [h["newText"] for h in entry["hunks"]] == ["AGENT 1000\n"]


def ed_encoding(ed: Editor) -> str:
    assert ed.init_result is not None
    negotiated = ed.init_result.capabilities.position_encoding
    return str(getattr(negotiated, "value", negotiated) or "utf-16")


async def test_closed_file_revert_and_refusal(workspace: Path, state_dir: Path) -> None:
    target = workspace / "closed.txt"
    target.write_text(ORIGINAL)
    async with open_editor("neovim", workspace, state_dir, extra_args=SCRIPTED_ARGS) as ed:
        await ed.command("acp.session.new")
        await agent_writes(ed, target, AGENT)
        assert target.read_text() == AGENT, "a closed file: the sidecar wrote the disk"
        uri = target.as_uri()
        await diagnostics(ed, uri, 2)
        [entry] = (await ed.command("acp.changes.list"))["files"]
        first, second = entry["hunks"]

        target.write_text(AGENT.replace("FOUR b", "FOUR b (mine)"))  # the user changed the second
        result = await ed.command("acp.changes.revert", {"uri": uri})
        assert result["reverted"] == [first["hunkId"]]
        assert result["refused"] == [
            {"hunkId": second["hunkId"], "reason": "the lines changed since the agent wrote them"}
        ]
        await ed.wait_message(lambda m: "not reverted: the lines changed since the agent wrote them" in m)
        assert target.read_text() == "l0\nl1\nl2\nl3\nFOUR a\nFOUR b (mine)\nl5\n"


async def test_demo_agent_edit_reverted(workspace: Path, state_dir: Path) -> None:
    readme = workspace / "README.md"
    before = readme.read_text()
    async with open_editor("vscode", workspace, state_dir) as ed:
        buffers = Buffers.attach(ed)
        uri = ed.open(readme, language="markdown")
        await ed.prompt_and_wait("#edit add a line")
        assert buffers.text(uri) != before
        [diagnostic] = await diagnostics(ed, uri, 1)
        assert diagnostic.message.startswith("added by the agent · ")
        await run_action(ed, uri, diagnostic.range.start.line, "Revert this agent change")
        await diagnostics(ed, uri, 0)
        assert buffers.text(uri) == before


async def test_no_ask_agent_to_fix_for_its_own_change(workspace: Path, state_dir: Path) -> None:
    # VS Code sends the diagnostics under the cursor with the request: the mark of the agent's
    # change is no problem to fix (the menu showed "Ask agent to fix: added by the agent · …"),
    # another server's diagnostic still is.
    readme = workspace / "README.md"
    async with open_editor("vscode", workspace, state_dir) as ed:
        Buffers.attach(ed)
        uri = ed.open(readme, language="markdown")
        await ed.prompt_and_wait("#edit add a line")
        [mark] = await diagnostics(ed, uri, 1)
        # Another server's, even with the same code: only the sidecar's source is left out.
        other = types.Diagnostic(range=mark.range, message="Unknown word", source="spell", code=mark.code)
        found = await ed.client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                range=types.Range(start=mark.range.end, end=mark.range.end),
                context=types.CodeActionContext(diagnostics=[mark, other]),
            )
        )
        titles = [a.title for a in found or []]
        assert "Revert this agent change" in titles and "Keep this agent change" in titles, titles
        assert [t for t in titles if t.startswith("Ask agent to fix")] == ["Ask agent to fix: Unknown word"]


async def test_diagnostics_off(workspace: Path, state_dir: Path) -> None:
    target = workspace / "notes.txt"
    target.write_text(ORIGINAL)
    off = {"changes": {"diagnostics": False}}
    async with open_editor("neovim", workspace, state_dir, extra_args=SCRIPTED_ARGS, init_options=off) as ed:
        Buffers.attach(ed)
        await ed.command("acp.session.new")
        uri = ed.open(target)
        await agent_writes(ed, target, AGENT)
        listed = await ed.command("acp.changes.list", {"uri": uri})
        assert len(listed["files"][0]["hunks"]) == 2, "still tracked, for plugins"
        assert ours(ed, uri) == []
        titles = [a.title for a in await ed.code_actions(uri, 1)]
        assert not any("agent change" in t for t in titles), titles


@pytest.mark.parametrize("diffs", ["whole", "snippet"])
async def test_agent_that_writes_the_disk_itself(diffs: str, workspace: Path, state_dir: Path) -> None:
    """claude-agent-acp style: the agent writes the disk and completes its tool call with a diff
    (the whole file, or only the changed part as claude's Edit); the sidecar tracks that too."""
    readme = workspace / "README.md"
    readme.write_text("# Practice repo\n\nA small project for tests.\nLine four.")  # no final line end
    before = readme.read_text()
    env = {"ACP_DEMO_CAPS": "own-writes", "ACP_DEMO_DIFFS": diffs}
    async with open_editor("helix", workspace, state_dir, env=env) as ed:
        await ed.prompt_and_wait("#edit add a line")
        assert readme.read_text() != before, "the agent wrote it itself"
        uri = readme.as_uri()
        [diagnostic] = await diagnostics(ed, uri, 1)
        assert diagnostic.message.startswith("changed by the agent · ")
        assert diagnostic.message.endswith("was:\nLine four.")
        listed = await ed.command("acp.changes.list", uri)
        [hunk] = listed["files"][0]["hunks"]
        assert hunk["oldText"] == "Line four."
        result = await ed.command("acp.changes.revert", hunk["hunkId"])
        assert result == {"reverted": [hunk["hunkId"]], "refused": []}
        assert readme.read_text() == before, "a closed file: written back by the sidecar, exactly"
        await diagnostics(ed, uri, 0)


async def test_hunks_survive_a_restart(workspace: Path, state_dir: Path) -> None:
    target, other = workspace / "notes.txt", workspace / "other.txt"
    target.write_text(ORIGINAL)
    other.write_text(ORIGINAL)
    async with open_editor("neovim", workspace, state_dir, extra_args=SCRIPTED_ARGS) as ed:
        await ed.command("acp.session.new")
        await agent_writes(ed, target, AGENT)
        await agent_writes(ed, other, AGENT)
        await diagnostics(ed, target.as_uri(), 2)
        listed = await ed.command("acp.changes.list", target.as_uri())
        before = listed["files"][0]["hunks"]
    [stored] = list((state_dir / "changes").rglob("*.json"))
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600
    assert stat.S_IMODE(stored.parent.stat().st_mode) == 0o700
    other.write_text(AGENT.replace("FOUR a", "FOUR mine"))  # changed while no sidecar ran

    async with open_editor("helix", workspace, state_dir, extra_args=SCRIPTED_ARGS) as ed:
        buffers = Buffers.attach(ed)
        await diagnostics(ed, target.as_uri(), 2)  # back, with no session loaded
        listed = await ed.command("acp.changes.list", target.as_uri())
        assert [h["hunkId"] for h in listed["files"][0]["hunks"]] == [h["hunkId"] for h in before]
        [kept] = await diagnostics(ed, other.as_uri(), 1)
        assert kept.range.start.line == 1, "the hunk the user changed meanwhile is gone"

        result = await ed.command("acp.changes.revert", before[1]["hunkId"])  # a closed file
        assert result["reverted"] == [before[1]["hunkId"]]
        assert target.read_text() == "l0\nONE ünï 🎉\nl2\nl3\nl4\nl5\n"
        uri = ed.open(target)
        await run_action(ed, uri, 1, "Revert this agent change")  # an open one
        assert buffers.text(uri) == ORIGINAL
        await diagnostics(ed, uri, 0)


@pytest.mark.parametrize("follow", [True, False])
async def test_follow_the_agent(follow: bool, workspace: Path, state_dir: Path) -> None:
    """changes.follow: the file the agent edits is shown (takeFocus false); off by default."""
    readme = workspace / "README.md"
    options = {"changes": {"follow": True}} if follow else {}
    async with open_editor("vscode", workspace, state_dir, init_options=options) as ed:
        await ed.prompt_and_wait("#edit add a line")
        await ed.command("acp.status")
        followed = [d for d in ed.client.shown_documents if d.uri == readme.as_uri()]
        if follow:
            assert followed and all(d.take_focus is False for d in followed), ed.client.shown_documents
        else:
            assert followed == []


async def test_a_replayed_edit_is_history_not_a_new_change(workspace: Path, state_dir: Path) -> None:
    """A loaded session's completed tool calls with diffs are history: the change the user kept
    yesterday does not come back for review when the session is loaded again."""
    readme = workspace / "README.md"
    readme.write_text("# Practice repo\n\nA small project for tests.\nLine four.")
    env = {"ACP_DEMO_CAPS": "own-writes,no-resume", "ACP_DEMO_DIFFS": "whole"}  # loads replay
    async with open_editor("helix", workspace, state_dir, env=env) as ed:
        sid = (await ed.command("acp.session.new"))["sessionId"]
        await ed.prompt_and_wait("#edit add a line")
        await diagnostics(ed, readme.as_uri(), 1)  # tracked once the disk is read after the call
        [hunk] = (await ed.command("acp.changes.list", readme.as_uri()))["files"][0]["hunks"]
        await ed.command("acp.changes.keep", hunk["hunkId"])
        assert (await ed.command("acp.changes.list"))["files"] == []
    replays = {"notify": {"replayUpdates": True}}
    async with open_editor("helix", workspace, state_dir, env=env, init_options=replays) as ed:
        await ed.command("acp.session.load", sid)
        replayed = [u["update"] for u in ed.of("acp/sessionUpdate") if u["replay"]]
        assert any(u.get("status") == "completed" and u.get("content") for u in replayed), replayed
        await ed.command("acp.status")  # what a replayed update would start has had its turn
        await asyncio.sleep(0.3)
        assert (await ed.command("acp.changes.list"))["files"] == []
        assert ours(ed, readme.as_uri()) == []
