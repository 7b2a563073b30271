"""Composing prompts and finding one's way in conversations through plain LSP, over a real pipe
with the demo agent (docs/protocol.md, "Composing and navigating"): `/` commands and `@` files
completed in the prompt area only, mentions sent as context (embedded or linked) or refused by
name, the document's turns as symbols, its folds and links, and sessions as workspace symbols."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from lsprotocol import types

from sidecar.features.conversation.api import MARKER
from tests.lsp.editor import Editor, open_editor
from tests.lsp.test_transcripts import transcript_path, wait_file
from tests.schema_check import assert_valid

TEE = Path(__file__).resolve().parents[1] / "agents" / "tee_agent.py"


def tee_args(frames: Path) -> list[str]:
    return ["--agent", f"{sys.executable} {TEE} {frames} {sys.executable} -m sidecar.demo_agent"]


def prompts_sent(frames: Path) -> list[dict[str, Any]]:
    sent = [json.loads(line) for line in frames.read_text().splitlines() if line.strip()]
    return [f["params"] for f in sent if f.get("method") == "session/prompt"]


async def complete(ed: Editor, uri: str, line: int, character: int) -> types.CompletionList | None:
    async with asyncio.timeout(15):
        found = await ed.client.text_document_completion_async(
            types.CompletionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=types.Position(line=line, character=character),
            )
        )
    assert found is None or isinstance(found, types.CompletionList), found
    return found


def labels(found: types.CompletionList | None) -> list[str]:
    return [item.label for item in found.items] if found else []


async def open_transcript(ed: Editor, session_id: str | None = None) -> tuple[str, str]:
    path = await transcript_path(ed, session_id)
    text = await wait_file(path, lambda t: t.endswith(MARKER + "\n"))
    return ed.open(path, text, "markdown"), text


async def type_prompt(ed: Editor, uri: str, prompt: str) -> tuple[int, int]:
    """Write `prompt` below the marker (replacing what was there); the position at its end
    (line, UTF-16 character)."""
    current = ed.docs[uri][1]
    text = current[: current.rindex(MARKER) + len(MARKER)] + "\n"
    ed.change(uri, text + prompt)
    lines = (text + prompt).split("\n")
    return len(lines) - 1, len(lines[-1].encode("utf-16-le")) // 2


async def test_slash_offers_the_agents_commands_only_at_the_start_of_the_prompt(
    workspace: Path, state_dir: Path
) -> None:
    async with open_editor("neovim", workspace, state_dir) as ed:
        await ed.command("acp.session.new")
        uri, text = await open_transcript(ed)
        everything = None
        async with asyncio.timeout(15):  # the commands arrive right after session/new
            while not everything or len(everything.items) < 4:
                line, character = await type_prompt(ed, uri, "/")
                everything = await complete(ed, uri, line, character)
                await asyncio.sleep(0.05)
        assert labels(everything) == ["/help", "/edit", "/permission", "/title"]
        edit = next(i for i in everything.items if i.label == "/edit")
        assert edit.detail == "relative path (default: README)"
        assert "Propose an edit to a file" in str(edit.documentation)
        line, character = await type_prompt(ed, uri, "  /ed")
        found = await complete(ed, uri, line, character)
        assert labels(found) == ["/edit"]
        assert found is not None
        item_edit = found.items[0].text_edit
        assert isinstance(item_edit, types.TextEdit)
        assert item_edit.new_text == "/edit "
        assert (item_edit.range.start.character, item_edit.range.end.character) == (2, 5)
        assert item_edit.range.start.line == line
        # Not after other words, not above the marker line, not in another document.
        line, character = await type_prompt(ed, uri, "please /ed")
        assert labels(await complete(ed, uri, line, character)) == []
        assert labels(await complete(ed, uri, 0, 1)) == []
        marker_line = text.split("\n").index(MARKER)
        ed.change(uri, text.replace(MARKER, "/he\n" + MARKER))
        assert labels(await complete(ed, uri, marker_line, 3)) == []
        readme = ed.open(workspace / "README.md", "/he\n")
        assert labels(await complete(ed, readme, 0, 3)) == []


def git_workspace(workspace: Path) -> None:
    (workspace / "docs").mkdir()
    (workspace / "docs" / "my notes.md").write_text("notes\n")
    (workspace / "ignored.log").write_text("x\n")
    (workspace / ".gitignore").write_text("*.log\n")
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)


async def test_at_offers_workspace_files_and_open_buffers_with_gitignore(
    workspace: Path, state_dir: Path
) -> None:
    git_workspace(workspace)
    async with open_editor("helix", workspace, state_dir) as ed:  # Helix: UTF-8 positions
        await ed.command("acp.session.new")
        uri, _ = await open_transcript(ed)
        draft = workspace / "drafts" / "plan.md"  # open in the editor, never saved
        ed.open(draft, "unsaved plan\n")
        line, _ = await type_prompt(ed, uri, "é @")
        found = await complete(ed, uri, line, len("é @".encode()))
        shown = labels(found)
        assert '@"docs/my notes.md"' in shown and "@README.md" in shown and "@src/app.py" in shown
        assert "@drafts/plan.md" in shown and shown.index("@drafts/plan.md") < shown.index("@README.md")
        assert "@ignored.log" not in shown and not any(".git/" in s for s in shown)
        line, _ = await type_prompt(ed, uri, "é @REA")
        found = await complete(ed, uri, line, len("é @REA".encode()))
        assert found is not None and labels(found)[0] == "@README.md"
        first = found.items[0].text_edit
        assert isinstance(first, types.TextEdit)
        assert first.new_text == "@README.md "
        # In UTF-8 code units: "é " is three bytes, so the mention starts at 3.
        assert (first.range.start.character, first.range.end.character) == (3, 7)


async def test_mentions_go_along_embedded_with_unsaved_text(workspace: Path, state_dir: Path) -> None:
    (workspace / "docs").mkdir()
    (workspace / "docs" / "my notes.md").write_text("notes on disk\n")
    frames = state_dir / "frames.jsonl"
    async with open_editor("neovim", workspace, state_dir, extra_args=tee_args(frames)) as ed:
        await ed.command("acp.session.new")
        readme = ed.open(workspace / "README.md", "# Unsaved README text\n")
        uri, _ = await open_transcript(ed)
        await type_prompt(ed, uri, 'Compare @README.md with @"docs/my notes.md", not `@src/app.py`.')
        admitted = await ed.command("acp.prompt", {"uri": uri})
        await ed.wait_turn_end(admitted["turnId"])
        assert readme
    sent = prompts_sent(frames)[-1]
    assert_valid("PromptRequest", sent)
    blocks = sent["prompt"]
    assert blocks[0]["type"] == "text" and "@README.md" in blocks[0]["text"]
    resources = [b["resource"] for b in blocks if b["type"] == "resource"]
    assert [r["uri"] for r in resources] == [
        (workspace / "README.md").as_uri(),
        (workspace / "docs" / "my notes.md").as_uri(),
    ]
    assert resources[0]["text"] == "# Unsaved README text\n"  # the buffer, not the disk
    assert resources[1]["text"] == "notes on disk\n"
    assert len(blocks) == 3  # the code span's mention is text


async def test_mentions_are_linked_when_the_agent_takes_no_embedded_context(
    workspace: Path, state_dir: Path
) -> None:
    frames = state_dir / "frames.jsonl"
    env = {"ACP_DEMO_CAPS": "no-embedded"}
    async with open_editor("vscode", workspace, state_dir, extra_args=tee_args(frames), env=env) as ed:
        admitted, _ = await ed.prompt_and_wait("What does @src/app.py do?")
        # The demo agent says what it received.
        assert ed.text_of(admitted["turnId"]).startswith("Context received: src/app.py (linked). ")
    blocks = prompts_sent(frames)[-1]["prompt"]
    for block in blocks:
        assert_valid("ContentBlock", block)
    assert [b["type"] for b in blocks] == ["text", "resource_link", "text"]
    assert blocks[1]["uri"] == (workspace / "src" / "app.py").as_uri()
    assert "héllo wörld" in blocks[2]["text"]


async def test_a_mention_that_cannot_go_along_is_refused_by_name_and_nothing_is_sent(
    workspace: Path, state_dir: Path, tmp_path: Path
) -> None:
    (tmp_path / "outside.txt").write_text("secret\n")
    (workspace / "image.bin").write_bytes(b"\x89PNG\x00\x01\xff")
    (workspace / "zeros.dat").write_bytes(b"a\x00b")
    frames = state_dir / "frames.jsonl"
    async with open_editor("neovim", workspace, state_dir, extra_args=tee_args(frames)) as ed:
        await ed.command("acp.session.new")
        uri, _ = await open_transcript(ed)
        cases = {
            "@../outside.txt": "outside the session's directories",
            f"@{tmp_path / 'outside.txt'}": "outside the session's directories",
            "@missing/file.txt": "no such file",
            "@image.bin": "not UTF-8 text",
            "@zeros.dat": "binary file",
            "@src/": "it is a directory",
        }
        for mention, why in cases.items():
            await type_prompt(ed, uri, f"Look at {mention} please")
            try:
                await ed.command("acp.prompt", {"uri": uri})
            except Exception as exc:
                message = str(exc)
            else:
                raise AssertionError(f"{mention} was accepted")
            assert mention in message and why in message and "nothing was sent" in message
        assert f"Look at {mention} please" in ed.docs[uri][1]  # the prompt area is not cleared
    assert prompts_sent(frames) == []


async def turns_with_an_edit(ed: Editor) -> None:
    await ed.prompt_and_wait("Where is the README? Do not change files.")
    await ed.prompt_and_wait("Please add a line #edit")


async def test_turns_are_symbols_folds_and_paths_are_links(workspace: Path, state_dir: Path) -> None:
    async with open_editor("vscode", workspace, state_dir) as ed:
        await turns_with_an_edit(ed)
        path = await transcript_path(ed)
        text = await wait_file(path, lambda t: t.count("_Turn ended") == 2)
        uri = ed.open(path, text, "markdown")
        lines = text.split("\n")
        async with asyncio.timeout(15):
            symbols = await ed.client.text_document_document_symbol_async(
                types.DocumentSymbolParams(text_document=types.TextDocumentIdentifier(uri=uri))
            )
            folds = await ed.client.text_document_folding_range_async(
                types.FoldingRangeParams(text_document=types.TextDocumentIdentifier(uri=uri))
            )
            links = await ed.client.text_document_document_link_async(
                types.DocumentLinkParams(text_document=types.TextDocumentIdentifier(uri=uri))
            )
    assert symbols is not None and all(isinstance(s, types.DocumentSymbol) for s in symbols)
    turns = [s for s in symbols if isinstance(s, types.DocumentSymbol)]
    assert [s.name for s in turns] == ["Where is the README? Do not change files.", "Please add a line #edit"]
    you_lines = [n for n, line in enumerate(lines) if line == "## You"]
    assert [s.selection_range.start.line for s in turns] == you_lines
    assert turns[1].children and turns[1].children[0].name.startswith("Edit README.md")
    assert lines[turns[1].children[0].range.start.line].startswith("**Tool:** Edit README.md")
    assert folds is not None
    regions = [(f.start_line, f.end_line) for f in folds if f.kind == types.FoldingRangeKind.Region]
    assert [start for start, _ in regions] == you_lines
    assert regions[0][1] < you_lines[1]
    diff_folds = [f for f in folds if lines[f.start_line].startswith("Diff of ")]
    assert diff_folds and lines[diff_folds[0].end_line].startswith("```")
    assert links is not None
    targets = {link.target for link in links}
    assert (workspace / "README.md").as_uri() in targets
    for link in links:
        shown = lines[link.range.start.line][link.range.start.character : link.range.end.character]
        assert "README.md" in shown, shown


async def test_other_documents_get_no_symbols_folds_or_links(workspace: Path, state_dir: Path) -> None:
    async with open_editor("neovim", workspace, state_dir) as ed:
        uri = ed.open(workspace / "README.md", "## You\n\nnot a transcript `README.md`\n")
        ident = types.TextDocumentIdentifier(uri=uri)
        async with asyncio.timeout(15):
            assert not await ed.client.text_document_document_symbol_async(
                types.DocumentSymbolParams(text_document=ident)
            )
            assert not await ed.client.text_document_folding_range_async(
                types.FoldingRangeParams(text_document=ident)
            )
            assert not await ed.client.text_document_document_link_async(
                types.DocumentLinkParams(text_document=ident)
            )


async def test_sessions_are_workspace_symbols_that_open_their_document(
    workspace: Path, state_dir: Path
) -> None:
    async with open_editor("helix", workspace, state_dir) as ed:
        ids = []
        for prompt in ("Alpha refactor of the parser", "Beta fix for login", "Gamma docs pass"):
            ids.append((await ed.command("acp.session.new"))["sessionId"])
            await ed.prompt_and_wait(prompt)
        listed = await ed.command("acp.session.list")
        async with asyncio.timeout(15):
            everything = await ed.client.workspace_symbol_async(types.WorkspaceSymbolParams(query=""))
            beta = await ed.client.workspace_symbol_async(types.WorkspaceSymbolParams(query="BETA login"))
    assert everything is not None
    assert [s.name for s in everything] == [s["title"] for s in listed["sessions"]]
    assert len(everything) == 3
    assert beta is not None and [s.name for s in beta] == ["Beta fix for login"]
    found = beta[0]
    assert isinstance(found, types.SymbolInformation)
    document = Path(found.location.uri.removeprefix("file://"))
    assert document.is_file() and ids[1] in document.read_text()
    assert found.container_name and str(workspace) in found.container_name
