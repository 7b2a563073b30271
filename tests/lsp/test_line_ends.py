"""The sidecar's copy of a buffer counts lines as LSP does: they end at \\n, \\r\\n and \\r only.

A form feed, \\v, \\x1c-\\x1e, \\x85, U+2028 or U+2029 is text on its line (str.splitlines would
split there, and an edit below it would land a line early). Each test edits the document as an
editor does (incremental `didChange` ranges, tests/lsp/buffers.py) and checks what the sidecar
does with its copy against the text the editor holds, computed by the test's own reference.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from lsprotocol import types

from sidecar.features.conversation.api import MARKER, prompt_text
from tests.lsp.buffers import Buffers, change_incrementally, position_at
from tests.lsp.editor import Editor, open_editor
from tests.lsp.test_permissions_files import SCRIPTED_ARGS, scripted
from tests.lsp.test_transcript_editing import NO_SHOW, code_actions, open_transcript, run_action

# Every character str.splitlines splits at that LSP does not, and LSP's own three line ends.
NOT_LINE_ENDS = "\f\v\x1c\x1d\x1e\x85\u2028\u2029"
SOURCE = "int a;\n\f\nint b;\r\nx\u2028y\x85z\vw\x1c\x1d\x1e\u2029end\rold\nlast line"


def encoding_of(ed: Editor) -> str:
    assert ed.init_result is not None
    negotiated = ed.init_result.capabilities.position_encoding
    return str(getattr(negotiated, "value", negotiated) or "utf-16")


async def read_back(ed: Editor, paths: list[Path]) -> list[str]:
    """Each file as the agent reads it (fs/read_text_file, through the open buffer)."""
    results = await scripted(ed, [{"read": str(path)} for path in paths])
    contents: list[str] = []
    for index in range(len(paths)):
        assert "result" in results[index], results[index]
        contents.append(results[index]["result"]["content"])
    return contents


def typing_below(text: str) -> list[tuple[int, int, str]]:
    """The user's edits below the special characters: a line inserted, a word replaced, text
    appended, a line end typed; each offset is in the text the previous edit left."""
    edits: list[tuple[int, int, str]] = []
    at = text.index("int b;")
    edits.append((at, at, "// typed ✓\n"))
    text = text[:at] + "// typed ✓\n" + text[at:]
    old = text.index("old")
    edits.append((old, old + 3, "new 😀"))
    text = text[:old] + "new 😀" + text[old + 3 :]
    edits.append((len(text), len(text), "\nappended"))
    return edits


@pytest.mark.parametrize("profile", ["neovim", "helix"])  # utf-16 and utf-8 positions
async def test_a_form_feed_file_reads_back_exactly_as_the_editor_holds_it(
    profile: str, workspace: Path, state_dir: Path
) -> None:
    path = workspace / "ff.c"
    path.write_text("on disk\n")
    async with open_editor(profile, workspace, state_dir, extra_args=SCRIPTED_ARGS) as ed:
        await ed.command("acp.session.new")
        uri = ed.open(path, text=SOURCE)
        held = change_incrementally(ed, uri, typing_below(SOURCE), encoding_of(ed))
        assert "// typed ✓\nint b;\r\n" in held and "\rnew 😀\n" in held and held.endswith("\nappended")
        [read] = await read_back(ed, [path])
    assert read == held


# ---------------------------------------------------------------------- a property over the pipe
PIECES = [*NOT_LINE_ENDS, "\n", "\r\n", "\r", "a", "é", "😀", " "]
TEXT = st.lists(st.sampled_from(PIECES), max_size=20).map("".join)


@st.composite
def edit_sequences(draw: st.DrawFn) -> tuple[str, list[list[tuple[int, int, str]]]]:
    """A document and the didChange batches an editor sends for it; offsets never split a CR LF."""
    start = text = "".join(draw(st.lists(TEXT.filter(bool), min_size=1, max_size=3)))
    batches: list[list[tuple[int, int, str]]] = []
    for _ in range(draw(st.integers(1, 4))):
        batch: list[tuple[int, int, str]] = []
        for _ in range(draw(st.integers(1, 3))):
            cuts = [
                i for i in range(len(text) + 1) if not (text[i - 1 : i] == "\r" and text[i : i + 1] == "\n")
            ]
            a, b = sorted((draw(st.sampled_from(cuts)), draw(st.sampled_from(cuts))))
            new_text = draw(TEXT)
            batch.append((a, b, new_text))
            text = text[:a] + new_text + text[b:]
        batches.append(batch)
    return start, batches


# Each example starts a sidecar: few examples of many documents each, and no shrinking (minutes
# a step); tests/unit/test_lsp_lines.py runs the same property in-process, with shrinking.
@settings(
    max_examples=4,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    profile=st.sampled_from(["neovim", "helix"]), documents=st.lists(edit_sequences(), min_size=8, max_size=8)
)
def test_incremental_edits_keep_the_sidecars_copy_equal_to_the_editors(
    profile: str, documents: list[tuple[str, list[list[tuple[int, int, str]]]]]
) -> None:
    async def run(root: Path) -> None:
        workspace, state_dir = root / "ws", root / "state"
        workspace.mkdir()
        state_dir.mkdir()
        async with open_editor(profile, workspace, state_dir, extra_args=SCRIPTED_ARGS) as ed:
            await ed.command("acp.session.new")
            encoding = encoding_of(ed)
            paths: list[Path] = []
            for index, (start_text, batches) in enumerate(documents):
                path = workspace / f"doc{index}.txt"
                path.write_text("")
                paths.append(path)
                uri = ed.open(path, text=start_text)
                for batch in batches:
                    change_incrementally(ed, uri, batch, encoding)
            expected = [ed.docs[path.as_uri()][1] for path in paths]
            assert await read_back(ed, paths) == expected

    with tempfile.TemporaryDirectory() as root:
        asyncio.run(run(Path(root)))


# ---------------------------------------------------------------------- writes back to the editor
async def test_agent_edits_land_on_the_users_text_not_on_a_shifted_copy(
    workspace: Path, state_dir: Path
) -> None:
    """acp.edit.apply and fs/write_text_file write the sidecar's copy back into the editor: with
    a copy a line off, the user's typing would move and the edit would replace the wrong text."""
    path = workspace / "ff.c"
    path.write_text(SOURCE)
    async with open_editor("neovim", workspace, state_dir, extra_args=SCRIPTED_ARGS) as ed:
        buffers = Buffers.attach(ed)
        sid = (await ed.command("acp.session.new"))["sessionId"]
        uri = ed.open(path, text=SOURCE)
        held = change_incrementally(ed, uri, typing_below(SOURCE), buffers.encoding)
        diff = {"type": "diff", "path": str(path), "oldText": "int b;", "newText": "int c;"}
        tool_call = {
            "sessionUpdate": "tool_call",
            "toolCallId": "edit-1",
            "title": "Edit ff.c",
            "kind": "edit",
            "status": "pending",
            "content": [diff],
        }
        await scripted(ed, [{"update": tool_call}])
        result = await ed.command("acp.edit.apply", {"sessionId": sid, "toolCallId": "edit-1"})
        assert result == {"applied": True}
        assert buffers.text(uri) == held.replace("int b;", "int c;")
        # The user types again, then the agent writes the whole file.
        held = change_incrementally(
            ed, uri, [(len(buffers.text(uri)), len(buffers.text(uri)), "\f more")], buffers.encoding
        )
        written = held.replace("// typed ✓", "// agent ✓")
        results = await scripted(ed, [{"write": str(path), "content": written}])
        assert results[0] == {"result": {}}, results[0]
        assert buffers.text(uri) == written
        assert buffers.refused == []


# ---------------------------------------------------------------------- prompt context
def plain(position: types.Position) -> dict[str, int]:
    return {"line": position.line, "character": position.character}


def echoed(ed: Editor, turn_id: str) -> str:
    """The prompt blocks the demo agent echoed back (#echo): text and embedded resources."""
    out: list[str] = []
    for note in ed.of("acp/sessionUpdate"):
        update = note["update"]
        if note["turnId"] != turn_id or update.get("sessionUpdate") != "user_message_chunk":
            continue
        content = update["content"]
        if content.get("type") == "resource":
            out.append(content["resource"].get("text", ""))
        elif isinstance(content.get("text"), str):
            out.append(content["text"])
    return "\n".join(out)


@pytest.mark.parametrize("profile", ["vscode", "helix"])
async def test_ask_about_selection_sends_the_selected_lines(
    profile: str, workspace: Path, state_dir: Path
) -> None:
    path = workspace / "sel.txt"
    path.write_text("")
    source = "one\u2028two\fthree\x85four\nfive\nsix ✓\nseven\n"
    async with open_editor(profile, workspace, state_dir) as ed:
        await ed.command("acp.session.new")
        encoding = encoding_of(ed)
        uri = ed.open(path, text=source)
        at = source.index("six")
        held = change_incrementally(ed, uri, [(at, at, "inserted\u2028here\n")], encoding)
        start = held.index("inserted")
        end = held.index("seven")
        rng = {
            "start": plain(position_at(held, start, encoding)),
            "end": plain(position_at(held, end, encoding)),
        }
        admitted, _ = await ed.prompt_and_wait("#echo explain", uri=uri, range=rng)
        sent = echoed(ed, admitted["turnId"])
        # Past the end of a line is its end (not the next line); past the last line, the end.
        whole_line = {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 999}}
        admitted, _ = await ed.prompt_and_wait("#echo one line", uri=uri, range=whole_line)
        one_line = echoed(ed, admitted["turnId"])
        to_the_end = {"start": {"line": 4, "character": 2}, "end": {"line": 99, "character": 0}}
        admitted, _ = await ed.prompt_and_wait("#echo the rest", uri=uri, range=to_the_end)
        the_rest = echoed(ed, admitted["turnId"])
    assert held[start:end] == "inserted\u2028here\nsix ✓\n"
    assert held[start:end] in sent, sent
    assert "five" not in sent and "seven" not in sent
    assert one_line == "five", repr(one_line)
    assert the_rest == "ven\n", repr(the_rest)


@pytest.mark.parametrize("pasted", ["\u2028", "\f"])
async def test_send_to_agent_sends_the_prompt_as_typed(pasted: str, workspace: Path, state_dir: Path) -> None:
    """The transcript's prompt area, pasted into and typed after: the scripted agent says back the
    text of its one step, so the chunk shows the prompt exactly as the agent got it."""
    async with open_editor(
        "neovim", workspace, state_dir, init_options=NO_SHOW, extra_args=SCRIPTED_ARGS
    ) as ed:
        buffers = Buffers.attach(ed)
        await ed.command("acp.session.new")
        _, uri = await open_transcript(ed)
        assert MARKER in buffers.text(uri)
        end = len(buffers.text(uri))
        change_incrementally(ed, uri, [(end, end, f'[{{"chunk": "first{pasted}pasted')], buffers.encoding)
        end = len(buffers.text(uri))
        change_incrementally(ed, uri, [(end, end, " then typed")], buffers.encoding)
        change_incrementally(ed, uri, [(end + 1, end + 1, "and ")], buffers.encoding)
        end = len(buffers.text(uri))
        change_incrementally(ed, uri, [(end, end, '"}]')], buffers.encoding)
        typed = f'[{{"chunk": "first{pasted}pasted and then typed"}}]'
        assert prompt_text(buffers.text(uri)) == typed
        actions = await code_actions(ed, uri)
        assert [a.title for a in actions] == ["Send to agent"]
        admitted = await run_action(ed, actions[0])
        await ed.wait_turn_end(admitted["turnId"])
        said = ed.text_of(admitted["turnId"])
    assert said == f"first{pasted}pasted and then typed", repr(said)


async def test_a_change_past_the_end_of_a_line_or_the_document_lands_at_that_end(
    workspace: Path, state_dir: Path
) -> None:
    path = workspace / "ends.txt"
    path.write_text("")
    async with open_editor("vscode", workspace, state_dir, extra_args=SCRIPTED_ARGS) as ed:
        await ed.command("acp.session.new")
        uri = ed.open(path, text="ab\fcd\r\nef\n")

        def at(line: int, character: int) -> types.Position:
            return types.Position(line=line, character=character)

        changes: list[types.TextDocumentContentChangeEvent] = [
            types.TextDocumentContentChangePartial(
                range=types.Range(start=at(0, 99), end=at(0, 99)), text="!"
            ),
            types.TextDocumentContentChangePartial(
                range=types.Range(start=at(9, 0), end=at(9, 5)), text="tail"
            ),
        ]
        ed.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
                content_changes=changes,
            )
        )
        [read] = await read_back(ed, [path])
    assert read == "ab\fcd!\r\nef\ntail"
