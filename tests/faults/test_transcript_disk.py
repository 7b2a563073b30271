"""The transcript's files misbehave under the sidecar, over a real LSP pipe with the demo agent:
a special file planted where the index is, an index the disk refuses to write. The transcript is
written all the same, nothing twice, nothing lost, and the sidecar stops when it is told to."""

from __future__ import annotations

import asyncio
import fcntl
import os
import stat
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from sidecar.features.conversation.api import ConversationStore, locate_prompt_area
from sidecar.features.conversation.names import ConversationPaths
from tests.faults.figures import FIGURES
from tests.lsp.editor import Editor, open_editor
from tests.lsp.test_transcripts import conversation, transcript_path, turn_ends, wait_file, well_formed
from tests.procs import alive, descendants, wait_gone

pytestmark = pytest.mark.fault

DEMO = "acp-sidecar-demo"


async def logged(ed: Editor, pred: Callable[[str], bool], timeout: float = 10) -> str:
    """A window/logMessage whose text matches."""
    async with asyncio.timeout(timeout):
        while True:
            for message in ed.client.log_messages:
                if pred(message.message):
                    return message.message
            await asyncio.sleep(0.05)


async def settled_keys(state_dir: Path, session_id: str, total: int, timeout: float = 10) -> Counter[str]:
    """The session's index once it counts `total` items (it is saved right after the text)."""
    store = ConversationStore(state_dir)
    deadline = asyncio.get_running_loop().time() + timeout
    while (keys := store.keys(DEMO, session_id)).total() < total:
        assert asyncio.get_running_loop().time() < deadline, f"the index holds {keys}"
        await asyncio.sleep(0.05)
    return keys


def index_of(state_dir: Path, session_id: str) -> Path:
    return ConversationPaths(state_dir / "transcripts").keys_file(DEMO, session_id)


async def test_a_fifo_planted_as_the_index_blocks_nothing(workspace: Path, state_dir: Path) -> None:
    """Another local process replaces the index by a FIFO (nobody writes or reads its other end):
    the prompts are still written to the document, the FIFO is moved aside and never opened in a
    way that waits, and shutdown + exit ends the sidecar and its agent in time."""
    async with open_editor("neovim", workspace, state_dir) as ed:
        server = ed.client._server
        sid = (await ed.command("acp.session.new"))["sessionId"]
        path = await transcript_path(ed)
        await ed.prompt_and_wait("#chunks=2 before the fifo")
        await wait_file(path, lambda t: turn_ends(t) == 1)
        index = index_of(state_dir, sid)
        assert index.is_file()
        index.unlink()
        os.mkfifo(index, 0o600)
        FIGURES["disk faults: fifo as transcript index"] += 1
        for n in range(3):
            await ed.prompt_and_wait(f"#chunks=2 after the fifo {n}")
        text = await wait_file(path, lambda t: turn_ends(t) == 4, timeout=30)
        await logged(ed, lambda m: "not a regular file" in m and index.name in m)
        kids = descendants(server.pid)
        async with asyncio.timeout(30):
            await ed.client.shutdown_session()
        assert server.returncode == 0
        assert not await asyncio.to_thread(wait_gone, kids, 10)
    well_formed(text)
    body = conversation(text)
    for n in range(3):
        assert body.count(f"#chunks=2 after the fifo {n}\n") == 1, body
    assert stat.S_ISREG(os.lstat(index).st_mode), "a new index replaced the FIFO"
    moved = [p for p in index.parent.iterdir() if stat.S_ISFIFO(os.lstat(p).st_mode)]
    assert len(moved) == 1 and moved[0] != index, "the FIFO was moved aside, not deleted"
    assert not [p for p in kids if alive(p)]


async def test_a_document_locked_for_ever_does_not_keep_the_sidecar_alive(
    workspace: Path, state_dir: Path
) -> None:
    """Another process holds the document's lock and never lets go: the transcript writer waits
    in the kernel, yet shutdown + exit ends the sidecar (it gives up on the last writes in time)."""
    async with open_editor("neovim", workspace, state_dir) as ed:
        server = ed.client._server
        await ed.command("acp.session.new")
        path = await transcript_path(ed)
        await wait_file(path, lambda t: "## Your prompt" in t)
        holder = os.open(path, os.O_RDWR)
        try:
            fcntl.flock(holder, fcntl.LOCK_EX)
            await ed.prompt_and_wait("#chunks=2 written while locked")
            kids = descendants(server.pid)
            async with asyncio.timeout(40):
                await ed.client.shutdown_session()
            assert server.returncode == 0
            assert not await asyncio.to_thread(wait_gone, kids, 10)
        finally:
            os.close(holder)


async def test_an_index_the_disk_refuses_repeats_nothing_and_loses_nothing(
    workspace: Path, state_dir: Path
) -> None:
    """The index cannot be written for a while (a directory in its place: every open for writing
    fails, as on a full or read-only disk): each prompt and answer lands in the document exactly
    once meanwhile, and once the disk takes it again the index gets exactly the missing keys."""
    async with open_editor("neovim", workspace, state_dir) as ed:
        sid = (await ed.command("acp.session.new"))["sessionId"]
        path = await transcript_path(ed)
        await ed.prompt_and_wait("before the failure #chunks=2")
        await wait_file(path, lambda t: turn_ends(t) == 1)
        index = index_of(state_dir, sid)
        # The keys are saved just after the text (see store.append): wait for the prompt's and
        # the answer's.
        before = await settled_keys(state_dir, sid, 2)
        saved = index.read_bytes()
        index.unlink()
        index.mkdir()
        FIGURES["disk faults: transcript index refused"] += 1
        for n in range(4):
            await ed.prompt_and_wait(f"while refused {n} #chunks=3")
            await wait_file(path, lambda t, turns=n + 2: turn_ends(t) == turns)
        await logged(ed, lambda m: "cannot" in m and index.name in m)
        # The document shows a turn's end a moment before its keys are added (same transaction):
        # acp.session.transcript answers once everything queued is written, so the last add has
        # been tried. Without this the sidecar may create the index between rmdir and the restore
        # below, which then overwrites what it wrote (the test's doing, not a user's disk).
        await transcript_path(ed)
        during = path.read_text()
        index.rmdir()
        index.write_bytes(saved)  # the disk takes writes again
        await ed.prompt_and_wait("after the recovery #chunks=2")
        text = await wait_file(path, lambda t: turn_ends(t) == 6)
        await logged(ed, lambda m: "saved again" in m and index.name in m)
    well_formed(text)
    area = locate_prompt_area(during)
    assert area is not None and text.startswith(during[: area.start]), "later turns went below, nothing moved"
    body = conversation(text)
    prompts = [f"while refused {n} #chunks=3" for n in range(4)] + ["after the recovery #chunks=2"]
    for prompt in ["before the failure #chunks=2", *prompts]:
        assert body.count(f"## You\n\n    {prompt}\n") == 1, (prompt, body)
    assert body.count("c0 c1 c2 ") == 4 and body.count("_Turn ended") == 6, body
    # One key per item the document holds: six prompts (all different), four answers "c0 c1 c2"
    # and two "c0 c1" (an answer's key is its text).
    after = ConversationStore(state_dir).keys(DEMO, sid)
    assert sorted(after.values()) == [1, 1, 1, 1, 1, 1, 2, 4], after
    assert sum((after - before).values()) == 10
