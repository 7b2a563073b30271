"""The transcript store when its files misbehave, in one process on a real disk: a disk that refuses
a write (a file size limit, as a full disk answers: EFBIG/ENOSPC mid-write), an index that cannot
be written, special files in the index's place. Retries write exactly what is missing, once."""

from __future__ import annotations

import os
import resource
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from sidecar.features.conversation.model import Batch
from sidecar.features.conversation.store import ConversationStore
from tests.unit.transcripts.helpers import agent, assert_well_formed, renderer

AGENT, SESSION = "demo", "sess-1"


@pytest.fixture
def store(tmp_path: Path) -> ConversationStore:
    return ConversationStore(tmp_path / "state", durable=False)


def turn(text: str, answer: str) -> Batch:
    r = renderer()
    r.prompt([{"type": "text", "text": text}])
    r.update(agent(answer))
    r.turn_ended("end_turn")
    batch = r.take()
    assert batch is not None
    return batch


@contextmanager
def file_size_limit(limit: int) -> Iterator[None]:
    """Writes past `limit` bytes fail with EFBIG for this process (Python ignores SIGXFSZ), as
    writes to a full disk fail: part of the data may be written first."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))


def text_of(store: ConversationStore) -> str:
    text = store.read(AGENT, SESSION)
    assert text is not None
    return text


def test_an_append_the_disk_cuts_short_is_written_once_on_retry(store: ConversationStore) -> None:
    store.append(AGENT, SESSION, turn("first prompt", "first answer"))
    size = store.path(AGENT, SESSION).stat().st_size
    batch = turn("second prompt", "a long answer " * 200)
    with file_size_limit(size + 100), pytest.raises(OSError):
        store.append(AGENT, SESSION, batch)
    cut = text_of(store)
    assert_well_formed(cut)  # put back as it was: no half of the text, the prompt area in place
    assert "second prompt" not in cut
    store.append(AGENT, SESSION, batch)  # the disk takes it again: the same batch, retried
    text = text_of(store)
    assert_well_formed(text)
    assert text.count("second prompt") == 1 and text.count("a long answer ") == 200
    assert text.index("first answer") < text.index("second prompt")


def test_a_new_document_the_disk_cuts_short_is_written_whole_on_retry(tmp_path: Path) -> None:
    store = ConversationStore(tmp_path / "state", durable=False)
    store.ensure(AGENT, "other")  # the directories exist: only the document's write fails
    batch = turn("only prompt", "an answer " * 300)
    with file_size_limit(300), pytest.raises(OSError):
        store.append(AGENT, SESSION, batch)
    assert store.path(AGENT, SESSION).stat().st_size in (0, len(text_of(store).encode()))
    store.append(AGENT, SESSION, batch)
    text = text_of(store)
    assert_well_formed(text)
    assert text.count("only prompt") == 1 and text.count("an answer ") == 300


def test_an_index_that_cannot_be_written_repeats_and_loses_nothing(store: ConversationStore) -> None:
    store.append(AGENT, SESSION, turn("before", "answer 0"))
    index = store.paths.keys_file(AGENT, SESSION)
    index.unlink()
    index.mkdir()  # every open for writing fails now
    for n in range(3):
        store.append(AGENT, SESSION, turn(f"refused {n}", f"answer {n + 1}"))  # never raises
    notices = store.take_notices()
    assert len(notices) == 1 and index.name in notices[0], notices
    assert sum(store.keys(AGENT, SESSION).values()) == 8, "kept in memory meanwhile"
    index.rmdir()
    store.append(AGENT, SESSION, turn("after", "answer 4"))
    assert "saved again" in " ".join(store.take_notices())
    text = text_of(store)
    assert_well_formed(text)
    for prompt in ["before", "refused 0", "refused 1", "refused 2", "after"]:
        assert text.count(f"## You\n\n    {prompt}\n") == 1
    # The file holds the keys missing since the failure and the new ones, once each.
    lines = index.read_text().splitlines()
    assert len(lines) == len(set(lines)) == 8
    fresh = ConversationStore(store.state_dir, durable=False)
    assert sum(fresh.keys(AGENT, SESSION).values()) == 8


@pytest.mark.parametrize("kind", ["fifo", "fifo with a reader", "symlink", "socket"])
def test_a_special_file_as_the_index_is_moved_aside_and_never_waited_on(
    store: ConversationStore, kind: str
) -> None:
    store.append(AGENT, SESSION, turn("before", "answer 0"))
    index = store.paths.keys_file(AGENT, SESSION)
    known = store.keys(AGENT, SESSION)
    index.unlink()
    reader: int | None = None
    if kind.startswith("fifo"):
        os.mkfifo(index, 0o600)
        if kind == "fifo with a reader":
            reader = os.open(index, os.O_RDONLY | os.O_NONBLOCK)
    elif kind == "symlink":
        index.symlink_to(index.parent / "elsewhere")
    else:
        import socket

        sock = socket.socket(socket.AF_UNIX)
        here = os.getcwd()
        os.chdir(index.parent)  # a socket path is limited to 108 bytes: bind it by its name
        try:
            sock.bind(index.name)
        finally:
            os.chdir(here)
            sock.close()
    done = threading.Event()

    def work() -> None:
        store.append(AGENT, SESSION, turn("after", "answer 1"))
        fresh = ConversationStore(store.state_dir, durable=False)  # another sidecar, later
        fresh.append(AGENT, SESSION, turn("again", "answer 2"))
        done.set()

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    try:
        assert done.wait(20), "the store waited on a special file"
    finally:
        if reader is not None:
            os.close(reader)
    text = text_of(store)
    assert_well_formed(text)
    assert [text.count(f"## You\n\n    {p}\n") for p in ("before", "after", "again")] == [1, 1, 1]
    assert stat.S_ISREG(os.lstat(index).st_mode)
    moved = [p for p in index.parent.iterdir() if p.name.startswith(f"{index.name}.moved-")]
    assert len(moved) == 1 and not stat.S_ISREG(os.lstat(moved[0]).st_mode)
    # The store that knew the index wrote what it knew into the new one: a replay still merges.
    assert ConversationStore(store.state_dir).keys(AGENT, SESSION) >= known
    assert sum(store.keys(AGENT, SESSION).values()) == 6


def test_a_fifo_as_the_document_is_refused_at_once(store: ConversationStore) -> None:
    path = store.path(AGENT, SESSION)
    path.parent.mkdir(parents=True)
    os.mkfifo(path, 0o600)
    with pytest.raises(OSError, match="not a regular file"):
        store.read(AGENT, SESSION)
    with pytest.raises(OSError, match="not a regular file"):
        store.append(AGENT, SESSION, turn("p", "a"))
