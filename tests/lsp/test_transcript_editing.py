"""Conversation documents open in the editor (docs/protocol.md, "Conversation documents"): they grow
live through workspace/applyEdit, the user's unsent prompt survives, the prompt area is a prompt
(code action, acp.prompt {uri}), showDocument, acp.session.transcript.

The test editor applies each edit to its own copy of the document and answers with a didChange,
as a real editor does (tests/lsp/buffers.py).
"""

from __future__ import annotations

import asyncio
import difflib
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from sidecar.acp.client import MAX_SESSION_ID_CHARS
from sidecar.features.conversation.api import MARKER, prompt_text
from tests.chunks import shows_chunk
from tests.lsp.buffers import Buffers
from tests.lsp.editor import Editor, open_editor
from tests.lsp.test_transcripts import (
    conversation,
    path_of,
    transcript_path,
    turn_ends,
    wait_file,
    well_formed,
)

NO_SHOW = {"transcript": {"showOnPrompt": False}}


async def until(check: Callable[[], bool], what: str, timeout: float = 30) -> None:
    try:
        async with asyncio.timeout(timeout):
            while not check():
                await asyncio.sleep(0.02)
    except TimeoutError:
        raise AssertionError(f"timed out after {timeout} s waiting for {what}") from None


async def open_transcript(ed: Editor) -> tuple[Path, str]:
    path = await transcript_path(ed)
    await wait_file(path, lambda t: MARKER in t)
    uri = ed.open(path, language="markdown")
    return path, uri


def in_sync(buffers: Buffers, uri: str, path: Path, typed: str = "") -> Callable[[], bool]:
    """The buffer shows the file, plus what the user typed in the prompt area and did not send."""
    return lambda: buffers.text(uri) == path.read_text() + typed


async def settled(buffers: Buffers, uri: str, path: Path, turns: int, typed: str = "") -> str:
    """Once the file shows `turns` turn ends: the buffer shows the file (and the unsent prompt)."""
    await wait_file(path, lambda t: turn_ends(t) >= turns)
    try:
        await until(in_sync(buffers, uri, path, typed), "the buffer to show the file and the unsent prompt")
    except AssertionError as exc:
        expected, shown = (path.read_text() + typed).splitlines(), buffers.text(uri).splitlines()
        diff = difflib.unified_diff(expected, shown, "file", "buffer", lineterm="")
        raise AssertionError(f"{exc}\n" + "\n".join(diff)) from None
    return buffers.text(uri)


async def code_actions(ed: Editor, uri: str) -> list[types.CodeAction]:
    """The actions at the end of a document (its prompt area, in a transcript)."""
    last = len(ed.docs[uri][1].split("\n")) - 1
    async with asyncio.timeout(30):
        return await ed.code_actions(uri, line=last)


async def run_action(ed: Editor, action: types.CodeAction) -> Any:
    assert action.command is not None
    return await ed.command(action.command.command, *(action.command.arguments or []))


@pytest.mark.parametrize(
    ("profile", "pace"),
    # Paced (a chunk every millisecond or two: many flushes while the user types) where edits are
    # versioned (Helix) and where they are not (Neovim); as fast as the agent can (VS Code).
    [("helix", "#slow=1"), ("neovim", "#slow=1"), ("vscode", "")],
)
async def test_a_ten_thousand_chunk_turn_reaches_the_open_document_and_spares_the_users_prompt(
    profile: str, pace: str, workspace: Path, state_dir: Path
) -> None:
    async with open_editor(profile, workspace, state_dir, init_options=NO_SHOW) as ed:
        buffers = Buffers.attach(ed)
        await ed.command("acp.session.new")
        await ed.prompt_and_wait("Where is the README? “quoted” ✓ 😀")  # text wider than one unit
        path, uri = await open_transcript(ed)
        typed = "my next question ✓ 😀, "
        buffers.type_at_end(uri, typed)
        started = time.monotonic()
        admitted = await ed.command("acp.prompt", {"text": f"#chunks=10000 {pace} flood"})
        ended = asyncio.ensure_future(ed.wait_turn_end(admitted["turnId"], timeout=120))
        while not ended.done():  # the user keeps typing while the answer streams
            buffers.type_at_end(uri, "x")
            typed += "x"
            await asyncio.sleep(0.05)
        end = await ended
        took = time.monotonic() - started
        text = await settled(buffers, uri, path, 2, typed)
        synced = time.monotonic() - started
    assert end["stopReason"] == "end_turn"
    assert prompt_text(text) == typed.strip()
    body = conversation(path.read_text())
    assert "".join(f"c{i} " for i in range(10_000)).strip() in body
    edits = buffers.applied_to(uri, since=started)
    print(
        f"\n[{profile}] 10 000-chunk turn: {took:.2f} s, {len(edits)} applyEdits, "
        f"in sync after {synced:.2f} s"
    )
    # A few edits per second at most, never one per chunk; the prompt, a big chunk and the turn's
    # end each go at once (a turn as fast as the agent can is over in a fraction of a second).
    assert 1 <= len(edits) <= 4 * synced + 3, (len(edits), synced)


@pytest.mark.parametrize("profile", ["helix", "neovim"])
async def test_the_answer_grows_in_the_open_document_while_it_streams(
    profile: str, workspace: Path, state_dir: Path
) -> None:
    async with open_editor(profile, workspace, state_dir, init_options=NO_SHOW) as ed:
        buffers = Buffers.attach(ed)
        await ed.command("acp.session.new")
        path, uri = await open_transcript(ed)
        admitted = await ed.command("acp.prompt", {"text": "#chunks=40 #slow=100 slowly"})
        await until(lambda: "c5 c6 " in buffers.text(uri), "the first chunks in the buffer")
        assert not shows_chunk(buffers.text(uri), 39)
        assert not [t for t in ed.turn_events(admitted["turnId"]) if t["state"] == "ended"]
        await ed.wait_turn_end(admitted["turnId"])
        text = await settled(buffers, uri, path, 1)
        assert "c39 " in text
        well_formed(text)


async def test_edits_the_editor_refuses_are_made_good_from_the_file(workspace: Path, state_dir: Path) -> None:
    async with open_editor("helix", workspace, state_dir, init_options=NO_SHOW) as ed:
        buffers = Buffers.attach(ed)
        await ed.command("acp.session.new")
        path = await transcript_path(ed)
        old = await wait_file(path, lambda t: MARKER in t)
        await ed.prompt_and_wait("#chunks=30 written while it was closed")
        await wait_file(path, lambda t: turn_ends(t) == 1)
        # The editor opens what it read before the turn (a stale view): the sidecar brings it up to
        # date, and when the editor refuses that edit, the next one tries again.
        buffers.refuse_next = 2
        uri = ed.open(path, old + "unsent", language="markdown")
        text = await settled(buffers, uri, path, 1, "unsent")
        assert buffers.refused == ["refused on purpose"] * 2
        assert "c29 " in text and prompt_text(text) == "unsent"


async def test_a_document_the_editor_read_during_an_append_is_repaired_whole(
    workspace: Path, state_dir: Path
) -> None:
    """An editor that reads the file while an append rewrites its end gets the old start and the
    new end (seen in Helix): what follows the marker then is no prompt of the user's."""
    async with open_editor("helix", workspace, state_dir, init_options=NO_SHOW) as ed:
        buffers = Buffers.attach(ed)
        await ed.command("acp.session.new")
        path = await transcript_path(ed)
        await ed.prompt_and_wait("#chunks=3 first")
        before = await wait_file(path, lambda t: turn_ends(t) == 1)
        # (Short: the new end must be shorter than the marker line, or the torn read holds all of it.)
        await ed.prompt_and_wait("#chunks=3 2")
        after = await wait_file(path, lambda t: turn_ends(t) == 2)
        torn = before + after[len(before) :]
        assert prompt_text(torn), "the torn read shows text below the marker"
        uri = ed.open(path, torn, language="markdown")
        text = await settled(buffers, uri, path, 2)
        assert text == after and prompt_text(text) == ""


async def test_send_to_agent_runs_the_prompt_area_and_clears_it(workspace: Path, state_dir: Path) -> None:
    async with open_editor("helix", workspace, state_dir, init_options=NO_SHOW) as ed:
        buffers = Buffers.attach(ed)
        sid = (await ed.command("acp.session.new"))["sessionId"]
        path, uri = await open_transcript(ed)
        buffers.type_at_end(uri, "\nWhat is in src/app.py?\n\n")
        actions = await code_actions(ed, uri)
        assert [a.title for a in actions] == ["Send to agent", "Fork this session"], "no selection actions"
        admitted = await run_action(ed, actions[0])
        assert admitted["sessionId"] == sid
        end = await ed.wait_turn_end(admitted["turnId"])
        assert end["stopReason"] == "end_turn"
        assert prompt_text(await settled(buffers, uri, path, 1)) == ""
        assert "## You\n\n    What is in src/app.py?\n" in conversation(path.read_text())
        assert "app.py" in ed.text_of(admitted["turnId"])

        # While a turn runs, its transcript offers to cancel it.
        buffers.type_at_end(uri, "#chunks=500 #slow=50 a long one")
        running = await run_action(ed, (await code_actions(ed, uri))[0])
        await ed.wait_for("acp/turn", lambda t: t["turnId"] == running["turnId"] and t["state"] == "running")
        titles = [a.title for a in await code_actions(ed, uri)]
        assert titles == ["Send to agent", "Cancel the running turn", "Fork this session"]
        cancel = (await code_actions(ed, uri))[1]
        assert await run_action(ed, cancel) == {"cancelled": True}
        end = await ed.wait_turn_end(running["turnId"])
        assert end["stopReason"] == "cancelled"
        assert "_Cancelled (cancelled) · " in conversation(await settled(buffers, uri, path, 2))


async def test_acp_prompt_with_the_uri_of_a_closed_transcript_sends_its_saved_prompt(
    workspace: Path, state_dir: Path
) -> None:
    async with open_editor("vscode", workspace, state_dir, init_options=NO_SHOW) as ed:
        sid = (await ed.command("acp.session.new"))["sessionId"]
        path = await transcript_path(ed)
        text = await wait_file(path, lambda t: MARKER in t)
        with pytest.raises(JsonRpcException) as empty:
            await ed.command("acp.prompt", {"uri": path.as_uri()})
        assert "prompt area" in empty.value.message and empty.value.code == -32602
        path.write_text(text + "Where is the README?\n")  # an editor saved its buffer
        admitted = await ed.command("acp.prompt", {"uri": path.as_uri()})
        assert admitted["sessionId"] == sid
        end = await ed.wait_turn_end(admitted["turnId"])
        assert end["stopReason"] == "end_turn"
        after = await wait_file(path, lambda t: "_Turn ended" in t)
    assert prompt_text(after) == ""
    well_formed(after)
    assert "## You\n\n    Where is the README?\n" in conversation(after)
    # Nothing of the transcript went along as context: the agent read the README it was asked about.
    assert "**Tool:** Read README.md" in conversation(after)


async def test_acp_prompt_with_a_transcript_uri_loads_its_session_after_a_restart(
    workspace: Path, state_dir: Path
) -> None:
    async with open_editor("vscode", workspace, state_dir, init_options=NO_SHOW) as ed:
        sid = (await ed.command("acp.session.new"))["sessionId"]
        await ed.prompt_and_wait("#chunks=3 first")
        path = await transcript_path(ed)
    async with open_editor("vscode", workspace, state_dir, init_options=NO_SHOW) as ed:
        buffers = Buffers.attach(ed)
        uri = ed.open(path, language="markdown")
        buffers.type_at_end(uri, "#chunks=4 second")
        actions = await code_actions(ed, uri)
        assert [a.title for a in actions] == ["Send to agent"]
        admitted = await run_action(ed, actions[0])
        assert admitted["sessionId"] == sid
        await ed.wait_turn_end(admitted["turnId"])
        await settled(buffers, uri, path, 2)
    body = conversation(path.read_text())
    assert body.index("#chunks=3 first") < body.index("#chunks=4 second") < body.index("c3 ")


@pytest.mark.parametrize(
    ("profile", "options", "shown"),
    [
        ("neovim", {}, True),
        ("helix", {}, True),
        ("neovim", NO_SHOW, False),
        ("helix-release", {}, False),  # no window/showDocument
    ],
)
async def test_a_prompt_shows_the_transcript_unless_it_is_open(
    profile: str, options: dict[str, Any], shown: bool, workspace: Path, state_dir: Path
) -> None:
    async with open_editor(profile, workspace, state_dir, init_options=options) as ed:
        admitted, _ = await ed.prompt_and_wait("#chunks=3 first")
        status = await ed.command("acp.status")
        uri = status["transcriptUri"]
        if shown:
            await until(lambda: len(ed.client.shown_documents) == 1, "window/showDocument")
            [params] = ed.client.shown_documents
            assert params.uri == uri and params.take_focus is True
            # The editor read it once it was written: the prompt is there.
            assert "#chunks=3 first" in path_of(uri).read_text()
            ed.open(path_of(uri), language="markdown")
            await asyncio.sleep(0.5)  # didOpen is handled in the background
            await ed.prompt_and_wait("#chunks=3 second")
            await asyncio.sleep(0.5)
            assert len(ed.client.shown_documents) == 1, "open already: not shown again"
        else:
            await asyncio.sleep(1.0)
            assert ed.client.shown_documents == []


async def test_transcript_command_and_load_with_show(workspace: Path, state_dir: Path) -> None:
    async with open_editor("vscode", workspace, state_dir, init_options=NO_SHOW) as ed:
        status = await ed.command("acp.status")
        assert status["transcriptUri"] is None
        with pytest.raises(JsonRpcException) as none:
            await ed.command("acp.session.transcript", {})
        assert "no active session" in none.value.message
        sid = (await ed.command("acp.session.new"))["sessionId"]
        await ed.prompt_and_wait("#chunks=3 remembered")
        result = await ed.command("acp.session.transcript", {"show": True})
        assert result["sessionId"] == sid
        await until(lambda: [d.uri for d in ed.client.shown_documents] == [result["uri"]], "showDocument")
    path = path_of(result["uri"])
    path.unlink()
    async with open_editor("vscode", workspace, state_dir, init_options=NO_SHOW) as ed:
        # Known from the title cache only (not loaded here): created when missing.
        again = await ed.command("acp.session.transcript", sid)
        assert again == result and MARKER in path.read_text()
        with pytest.raises(JsonRpcException) as unknown:
            await ed.command("acp.session.transcript", {"sessionId": "no-such-session"})
        assert "unknown session" in unknown.value.message
        loaded = await ed.command("acp.session.load", {"sessionId": sid, "show": True})
        assert loaded == {"sessionId": sid}
        await until(lambda: [d.uri for d in ed.client.shown_documents] == [result["uri"]], "showDocument")
        status = await ed.command("acp.status")
        assert status["transcriptUri"] == result["uri"]


async def test_send_to_agent_right_after_opening_sends_the_buffer_not_the_file(
    workspace: Path, state_dir: Path
) -> None:
    """The editor opens the document with a buffer that differs from the file (its own unsaved
    copy) and sends at once, before the sidecar has identified the document: the prompt is the
    buffer's, every time, and the buffer's prompt area is cleared."""
    async with open_editor("helix", workspace, state_dir, init_options=NO_SHOW) as ed:
        buffers = Buffers.attach(ed)
        sid = (await ed.command("acp.session.new"))["sessionId"]
        path = await transcript_path(ed)
        for attempt in range(12):
            saved = await wait_file(path, lambda t: MARKER in t and prompt_text(t) == "")
            path.write_text(saved + f"stale file prompt {attempt}\n")
            uri = ed.open(path, text=saved + f"buffer prompt {attempt} #chunks=2\n", language="markdown")
            admitted = await ed.command("acp.prompt", {"uri": uri})
            assert admitted["sessionId"] == sid
            await ed.wait_turn_end(admitted["turnId"])
            turns = attempt + 1
            body = conversation(await wait_file(path, lambda t, turns=turns: turn_ends(t) == turns))
            assert f"## You\n\n    buffer prompt {attempt} #chunks=2\n" in body, body[-600:]
            assert "stale file prompt" not in body
            cleared = lambda uri=uri: prompt_text(buffers.text(uri)) == ""  # noqa: E731
            await until(cleared, "the buffer's prompt area to be cleared")
            ed.client.text_document_did_close(
                types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
            )
            del ed.docs[uri]


SCRIPTED_AGENT = Path(__file__).resolve().parents[1] / "agents" / "scripted_agent.py"


@pytest.mark.parametrize(
    ("length", "accepted"),
    [(300_000, False), (MAX_SESSION_ID_CHARS + 1, False), (MAX_SESSION_ID_CHARS, True)],
)
async def test_a_session_id_over_the_bound_is_refused_at_creation_and_one_at_it_works(
    workspace: Path, state_dir: Path, length: int, accepted: bool
) -> None:
    """A hostile agent answers session/new (and session/list) with a huge session id: refused with
    a clear message, nothing written for it, the next session works. An id at the bound works,
    "Send to agent" included (its document names it in full)."""
    env = {"SCRIPTED_LONG_ID": str(length), "SCRIPTED_LIST": "1"}
    args = ["--agent", f"{sys.executable} {SCRIPTED_AGENT}"]
    async with open_editor(
        "neovim", workspace, state_dir, init_options=NO_SHOW, env=env, extra_args=args
    ) as ed:
        buffers = Buffers.attach(ed)
        if not accepted:
            with pytest.raises(JsonRpcException) as refused:
                await ed.command("acp.session.new")
            message = refused.value.message or ""
            assert f"{length} characters" in message and str(MAX_SESSION_ID_CHARS) in message, message
            assert len(message) < 500
            transcripts = state_dir / "transcripts"
            assert not transcripts.exists() or not [p for p in transcripts.rglob("*.md")]
            with pytest.raises(JsonRpcException) as load:
                await ed.command("acp.session.load", {"sessionId": "l" * length, "cwd": str(workspace)})
            assert f"{length} characters" in (load.value.message or "")
        sid = (await ed.command("acp.session.new"))["sessionId"]
        assert len(sid) == (length if accepted else len("scripted-2"))
        path = await transcript_path(ed, sid)
        await wait_file(path, lambda t: MARKER in t)
        uri = ed.open(path, language="markdown")
        buffers.type_at_end(uri, '[{"chunk": "answered from the document"}]')
        actions = await code_actions(ed, uri)
        assert [a.title for a in actions] == ["Send to agent"]
        admitted = await run_action(ed, actions[0])
        assert admitted["sessionId"] == sid
        await ed.wait_turn_end(admitted["turnId"])
        assert "answered from the document" in await wait_file(path, lambda t: "_Turn ended" in t)
        listed = await ed.command("acp.session.list", {"refresh": True})
        ids = [s["sessionId"] for s in listed["sessions"]]
        assert sid in ids and all(len(i) <= MAX_SESSION_ID_CHARS for i in ids), [len(i) for i in ids]


async def test_an_agent_with_a_huge_name_keeps_send_to_agent_working(
    workspace: Path, state_dir: Path
) -> None:
    """The agent's name (its key for titles and transcripts) is 300 000 characters: the document's
    directory and header stay small, and "Send to agent" finds its session."""
    env = {"SCRIPTED_LONG_NAME": "300000"}
    args = ["--agent", f"{sys.executable} {SCRIPTED_AGENT}"]
    options = {"init_options": NO_SHOW, "env": env, "extra_args": args}
    async with open_editor("neovim", workspace, state_dir, **options) as ed:
        buffers = Buffers.attach(ed)
        sid = (await ed.command("acp.session.new"))["sessionId"]
        path = await transcript_path(ed, sid)
        text = await wait_file(path, lambda t: MARKER in t)
        assert len(text) < 2000 and len(path.parent.name) < 120
        uri = ed.open(path, language="markdown")
        buffers.type_at_end(uri, '[{"chunk": "answered from the document"}]')
        actions = await code_actions(ed, uri)
        assert [a.title for a in actions] == ["Send to agent"]
        admitted = await run_action(ed, actions[0])
        assert admitted["sessionId"] == sid
        await ed.wait_turn_end(admitted["turnId"])
        assert "answered from the document" in await wait_file(path, lambda t: "_Turn ended" in t)


# The interval between two edits of a streaming document stretched far beyond any wait below: what
# reaches the buffer within those waits was sent at once, not one interval later.
LONG_INTERVAL = {"ACP_SIDECAR_TRANSCRIPT_INTERVAL_MS": "120000"}


def snapshots(buffers: Buffers, uri: str) -> list[str]:
    """The buffer's text after each edit the sidecar makes to it (recorded from now on)."""
    seen: list[str] = []
    apply = buffers.apply

    async def recording(params: Any) -> types.ApplyWorkspaceEditResult:
        result = await apply(params)
        seen.append(buffers.text(uri))
        return result

    buffers.editor.edit_applier = recording
    return seen


@pytest.mark.parametrize("profile", ["helix", "neovim"])
async def test_the_open_document_holds_the_whole_answer_once_the_turn_ends(
    profile: str, workspace: Path, state_dir: Path
) -> None:
    async with open_editor(profile, workspace, state_dir, init_options=NO_SHOW, env=LONG_INTERVAL) as ed:
        buffers = Buffers.attach(ed)
        await ed.command("acp.session.new")
        path, uri = await open_transcript(ed)
        seen = snapshots(buffers, uri)
        # Each turn's end is written at once; the second comes well within the interval after the
        # edit that showed the first.
        for turn, prompt in enumerate(["#chunks=5 a first turn", "#chunks=40 #slow=20 a second turn"], 1):
            admitted = await ed.command("acp.prompt", {"text": prompt})
            end = await ed.wait_turn_end(admitted["turnId"])
            edits_at_end = len(seen)
            # Within one transcript write and one edit of the turn's end, not an interval later.
            await until(lambda: turn_ends(buffers.text(uri)) == turn, f"turn {turn}'s end in the buffer", 20)  # noqa: B023
            assert end["stopReason"] == "end_turn"
            # A quick turn may end before the editor took the prompt's edit: that one, the new
            # title's (first turn) and the end's may all come after it; never one per chunk.
            assert len(seen) - edits_at_end <= 3, (edits_at_end, len(seen))
        text = buffers.text(uri)
    assert " ".join(f"c{i}" for i in range(40)) in conversation(text)
    assert text == path.read_text()
    well_formed(text)


async def test_a_big_chunk_reaches_the_open_document_at_once(workspace: Path, state_dir: Path) -> None:
    from sidecar.demo_agent.behaviours import answer_text

    whole = answer_text(40_000)
    first, second = whole[:20_000], whole[20_000:]
    async with open_editor("neovim", workspace, state_dir, init_options=NO_SHOW, env=LONG_INTERVAL) as ed:
        buffers = Buffers.attach(ed)
        await ed.command("acp.session.new")
        path, uri = await open_transcript(ed)
        seen = snapshots(buffers, uri)
        # Two chunks of 20 000 characters, 3 s apart. The prompt was written just before the
        # first (at once: nothing was written for a while), so only its size brings the first
        # forward; the second waits (one early write per interval) until the turn ends.
        admitted = await ed.command("acp.prompt", {"text": "#answer=40000 #piece=20000 #slow=3000 big"})
        await ed.wait_turn_end(admitted["turnId"], timeout=60)
        await until(lambda: turn_ends(buffers.text(uri)) == 1, "the turn's end in the buffer", timeout=20)
        final = buffers.text(uri)  # (a later title change waits for the long interval)
    flat = [conversation(text).replace("\n", "") for text in seen]
    early = [b for b in flat if first.replace("\n", "") in b and second[:100].replace("\n", "") not in b]
    assert early, [len(b) for b in flat]
    assert turn_ends(final) == 1 and whole.replace("\n", "") in conversation(final).replace("\n", "")


@pytest.mark.parametrize("profile", ["helix", "neovim"])
async def test_a_two_megabyte_answer_is_whole_in_the_open_document(
    profile: str, workspace: Path, state_dir: Path
) -> None:
    from sidecar.demo_agent.behaviours import answer_text

    options = {"transcript": {"showOnPrompt": False, "maxBytes": 1 << 20}}
    async with open_editor(profile, workspace, state_dir, init_options=options) as ed:
        buffers = Buffers.attach(ed)
        await ed.command("acp.session.new")
        await ed.prompt_and_wait("#chunks=20000 an older turn")  # trimmed before this one
        path, uri = await open_transcript(ed)
        admitted = await ed.command("acp.prompt", {"text": "#answer=2000000 a long answer"})
        await ed.wait_turn_end(admitted["turnId"], timeout=120)
        done = await wait_file(
            path, lambda t: "END OF ANSWER" in t and turn_ends(t.split("END OF ANSWER")[-1]) == 1, 60
        )
        await until(in_sync(buffers, uri, path), "the buffer to show the file")
        text = buffers.text(uri)
    assert text == done
    body = conversation(text)
    assert answer_text(2_000_000) in body
    assert "not shown" not in text and "c19999" not in body  # the older turn went first
    assert body.startswith("_… ") and "earlier bytes trimmed …_" in body.split("\n", 1)[0]
    well_formed(text)
