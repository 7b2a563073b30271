"""The transcript store in one process: files, modes, appends, trims, titles, repairs, editors."""

from __future__ import annotations

import os
import random
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from sidecar.features.conversation.appending import fits
from sidecar.features.conversation.document import PROMPT_AREA, TRIM_NOTE, apply_edits, prompt_text, resync
from sidecar.features.conversation.model import Batch, DocumentChange
from sidecar.features.conversation.store import ConversationStore

from .helpers import agent, assert_well_formed, renderer, user

AGENT, SESSION = "demo", "sess-1"


class Editor:
    """An editor buffer kept equal to the document by mirroring every change, as the LSP layer
    will (with the user typing in the prompt area meanwhile)."""

    def __init__(self, store: ConversationStore) -> None:
        self.store = store
        text = store.read(AGENT, SESSION)
        assert text is not None
        self.text = text
        self.fallbacks = 0

    def apply(self, change: DocumentChange | None) -> None:
        if change is None:
            return
        edits = change.mirror(self.text)
        if edits is None:
            self.fallbacks += 1
            file_text = self.store.read(AGENT, SESSION)
            assert file_text is not None
            edits = resync(self.text, file_text)
        self.text = apply_edits(self.text, edits)

    def assert_equal_to_file(self, typed: str = "") -> None:
        assert self.text == self.store.read(AGENT, SESSION) + typed


@pytest.fixture
def store(tmp_path: Path) -> ConversationStore:
    return ConversationStore(tmp_path / "state", durable=False)


@pytest.fixture
def umask() -> Iterator[None]:
    old = os.umask(0o022)
    yield
    os.umask(old)


def append_turn(store: ConversationStore, text: str, answer: str) -> DocumentChange | None:
    r = renderer()
    r.prompt([{"type": "text", "text": text}])
    r.update(agent(answer))
    r.turn_ended("end_turn")
    batch = r.take()
    assert batch is not None
    return store.append(AGENT, SESSION, batch)


@pytest.mark.parametrize("mask", [0o022, 0o000, 0o077, 0o277])
def test_files_and_directories_are_private_whatever_the_umask(tmp_path: Path, mask: int, umask: None) -> None:
    os.umask(mask)
    store = ConversationStore(tmp_path / "state", durable=False)
    path = store.path(AGENT, SESSION)

    def assert_private() -> None:
        for directory in (tmp_path / "state", store.root, path.parent):
            assert stat.S_IMODE(directory.stat().st_mode) == 0o700, directory
        for file in path.parent.iterdir():
            assert stat.S_IMODE(file.stat().st_mode) == 0o600, file

    append_turn(store, "hi", "hello")  # created, appended in place, keys written
    assert_private()
    store.set_title(AGENT, SESSION, "T")  # a rewrite (new inode) keeps the mode too
    assert_private()


def test_a_new_document_is_header_and_prompt_area(store: ConversationStore) -> None:
    change = store.ensure(AGENT, SESSION, "Fix auth")
    assert change is not None and change.created
    text = store.read(AGENT, SESSION)
    assert text == (
        "# Fix auth\n<!-- acp-sidecar transcript · agent demo · session sess-1 -->\n\n" + PROMPT_AREA
    )
    assert store.ensure(AGENT, SESSION, "Fix auth") is None
    assert_well_formed(text)


def test_appends_go_above_the_prompt_area_and_the_editor_follows(store: ConversationStore) -> None:
    store.ensure(AGENT, SESSION, "T")
    editor = Editor(store)
    typed = "my next prompt, half written"
    editor.text += typed
    r = renderer()
    r.prompt([{"type": "text", "text": "Explain"}])
    for piece in ["Hel", "lo wor", "ld\n```py\nx", " = 1\n", "```\nDone"]:
        r.update(agent(piece))
        batch = r.take()
        assert batch is not None
        editor.apply(store.append(AGENT, SESSION, batch))
        editor.assert_equal_to_file(typed)
    r.turn_ended("end_turn")
    batch = r.take()
    assert batch is not None
    editor.apply(store.append(AGENT, SESSION, batch))
    editor.assert_equal_to_file(typed)
    assert editor.fallbacks == 0
    assert prompt_text(editor.text) == typed
    text = store.read(AGENT, SESSION)
    assert text is not None
    assert "## You\n\n    Explain\n\n## Agent\n\nHello world\n```py\nx = 1\n```\nDone\n" in text
    assert_well_formed(text)


def test_title_changes_rewrite_the_first_line(store: ConversationStore) -> None:
    append_turn(store, "a", "b")
    editor = Editor(store)
    change = store.set_title(AGENT, SESSION, "New # title")
    assert change is not None and change.title_changed
    editor.apply(change)
    editor.assert_equal_to_file()
    text = store.read(AGENT, SESSION)
    assert text is not None and text.startswith("# New # title\n<!-- acp-sidecar transcript")
    assert store.set_title(AGENT, SESSION, "New # title") is None
    assert editor.fallbacks == 0


def test_the_bound_trims_the_head_and_leaves_a_marker(tmp_path: Path) -> None:
    bound = 64 * 1024
    store = ConversationStore(tmp_path, max_bytes=bound, durable=False)
    store.ensure(AGENT, SESSION, "T")
    editor = Editor(store)
    for turn in range(200):
        change = append_turn(store, f"question {turn}", f"answer {turn}\n```\ncode {turn}\n" + "z" * 700)
        editor.apply(change)
        path = store.path(AGENT, SESSION)
        assert path.stat().st_size <= bound
    editor.assert_equal_to_file()
    text = store.read(AGENT, SESSION)
    assert text is not None
    note = TRIM_NOTE.search(text.split("\n\n", 1)[1])
    assert note is not None and int(note.group(1)) > 100_000
    assert "question 199" in text and "question 0\n" not in text
    assert_well_formed(text)


def test_a_ten_megabyte_hostile_message_cannot_pass_the_ceiling(tmp_path: Path) -> None:
    # The current turn is kept whole over the bound, up to the ceiling: beyond, it is trimmed too.
    bound = 4 * 1024 * 1024
    store = ConversationStore(tmp_path, max_bytes=1024 * 1024, ceiling=bound, durable=False)
    r = renderer()
    r.prompt([{"type": "text", "text": "go"}])
    hostile = ("# fake heading\n```\n<!--\n---\n\x1b[31m\x00" + "A" * 200 + "\n") * (10_000_000 // 230)
    for start in range(0, len(hostile), 500_000):
        # One message is shown up to 1 MiB: the flood comes as many messages.
        r.update(agent(hostile[start : start + 500_000], message_id=f"m{start // 1_000_000}"))
        batch = r.take()
        assert batch is not None
        store.append(AGENT, SESSION, batch)
        assert store.path(AGENT, SESSION).stat().st_size <= bound
    r.turn_ended("end_turn")
    batch = r.take()
    assert batch is not None
    store.append(AGENT, SESSION, batch)
    text = store.read(AGENT, SESSION)
    assert text is not None and len(text.encode()) <= bound
    assert "\x00" not in text and "\x1b" not in text
    assert_well_formed(text)


def test_a_single_batch_over_the_ceiling_is_trimmed_before_it_lands(tmp_path: Path) -> None:
    store = ConversationStore(tmp_path, max_bytes=32768, ceiling=65536, durable=False)
    batch = Batch(text="## Agent\n\n" + "word " * 100_000 + "\n", keys=["a:" + "0" * 24])
    store.append(AGENT, SESSION, batch)
    text = store.read(AGENT, SESSION)
    assert text is not None and len(text.encode()) <= 65536
    assert "earlier bytes trimmed" in text and text.endswith(PROMPT_AREA)


def test_the_current_answer_is_kept_whole_and_older_turns_are_trimmed_first(tmp_path: Path) -> None:
    bound = 1024 * 1024
    store = ConversationStore(tmp_path, max_bytes=bound, durable=False)
    for index in range(3):
        append_turn(store, f"question {index}", f"answer {index} " + "older words " * 30_000)
    r = renderer()
    r.prompt([{"type": "text", "text": "the long one"}])
    whole = "".join(f"line {i:07d} of a two megabyte answer\n" for i in range(2_000_000 // 37))
    for start in range(0, len(whole), 65536):  # streamed: many appends, as a session does
        r.update(agent(whole[start : start + 65536]))
        batch = r.take()
        assert batch is not None
        store.append(AGENT, SESSION, batch)
    r.turn_ended("end_turn")
    batch = r.take()
    assert batch is not None
    store.append(AGENT, SESSION, batch)
    text = store.read(AGENT, SESSION)
    assert text is not None
    body = text.split("\n\n", 1)[1]
    note = TRIM_NOTE.search(body)
    assert note is not None and int(note.group(1)) > 300_000  # the older turns went first
    assert "question 0" not in text and "    the long one\n" in text
    assert whole in text  # every line of the current answer, none cut
    assert "more characters of this message not shown" not in text
    assert bound < len(text.encode()) < 2 * bound + 500_000  # raised just enough
    assert_well_formed(text)


@pytest.mark.parametrize("seed", range(8))
def test_a_torn_write_never_loses_earlier_content(store: ConversationStore, seed: int) -> None:
    rng = random.Random(seed)
    append_turn(store, "first", "the first answer\n```\ncode")
    path = store.path(AGENT, SESSION)
    before = path.read_bytes()
    body_end = before.index(b"---\n\n## Your prompt")
    append_turn(store, "second", "the second answer")
    after = path.read_bytes()
    # A crash in the middle of the second append: the file is cut somewhere in what it wrote.
    cut = rng.randrange(body_end - 2, len(after))
    path.write_bytes(after[:cut])
    fresh = ConversationStore(store.state_dir, durable=False)  # another process, after the crash
    change = fresh.ensure(AGENT, SESSION)
    text = fresh.read(AGENT, SESSION)
    assert text is not None
    assert text.startswith(before[: body_end - 2].decode())  # everything before the tear is intact
    assert_well_formed(text)
    assert change is None or change.document == text
    append_turn(fresh, "third", "the third answer")
    text = fresh.read(AGENT, SESSION)
    assert text is not None and "the third answer" in text
    assert_well_formed(text)


def test_a_document_cut_inside_a_code_block_is_closed(store: ConversationStore) -> None:
    store.ensure(AGENT, SESSION, "T")
    r = renderer()
    r.update(agent("Code:\n```py\n# still code\n"))
    batch = r.take()
    assert batch is not None
    store.append(AGENT, SESSION, batch)  # the sidecar dies here, mid-block
    fresh = ConversationStore(store.state_dir, durable=False)
    r2 = renderer()
    r2.prompt([{"type": "text", "text": "next"}])
    batch = r2.take()
    assert batch is not None
    fresh.append(AGENT, SESSION, batch)
    text = fresh.read(AGENT, SESSION)
    assert text is not None
    assert_well_formed(text)
    assert "# still code\n```\n" in text


def test_a_torn_write_inside_a_code_block_is_closed_and_given_its_area(store: ConversationStore) -> None:
    store.ensure(AGENT, SESSION, "T")
    path = store.path(AGENT, SESSION)
    text = path.read_text()
    header = text[: text.index("---\n\n## Your prompt")]
    # What a writer killed between cutting the file and writing its tail leaves behind.
    path.write_text(header + "## Agent\n\nCode:\n```py\n# still code\n---\n\n## Your pr")
    change = ConversationStore(store.state_dir, durable=False).ensure(AGENT, SESSION)
    assert change is not None
    repaired = store.read(AGENT, SESSION)
    assert repaired is not None
    assert repaired.startswith(header + "## Agent\n\nCode:\n```py\n# still code\n")
    assert "# still code\n```\n" in repaired
    assert_well_formed(repaired)


def test_two_writers_alternating_mid_message(tmp_path: Path) -> None:
    """Two sidecars on one state dir, each inside a code block, appending in turn."""
    stores = [ConversationStore(tmp_path, durable=False) for _ in range(2)]
    renderers = [renderer(), renderer()]
    for step in range(12):
        who = step % 2
        r = renderers[who]
        r.update(agent(["```py\n", f"# writer {who} step {step}\n", "- item\n  ```\n", "text "][step % 4]))
        batch = r.take()
        if batch is not None:
            stores[who].append(AGENT, SESSION, batch)
        text = stores[0].read(AGENT, SESSION)
        assert text is not None
        assert_well_formed(text)
    for who in range(2):
        renderers[who].turn_ended("end_turn")
        batch = renderers[who].take()
        assert batch is not None
        stores[who].append(AGENT, SESSION, batch)
    text = stores[0].read(AGENT, SESSION)
    assert text is not None
    assert_well_formed(text)


def test_the_file_prompt_area_is_kept_and_can_be_cleared(store: ConversationStore) -> None:
    append_turn(store, "q", "a")
    path = store.path(AGENT, SESSION)
    path.write_text(path.read_text() + "saved by the editor\n")  # an editor saved a typed prompt
    append_turn(store, "q2", "a2")
    text = store.read(AGENT, SESSION)
    assert text is not None and prompt_text(text) == "saved by the editor"
    assert store.clear_prompt(AGENT, SESSION) is not None
    text = store.read(AGENT, SESSION)
    assert text is not None and text.endswith(PROMPT_AREA) and "q2" in text


def test_user_text_in_the_area_of_the_buffer_survives_many_appends(store: ConversationStore) -> None:
    store.ensure(AGENT, SESSION, "T")
    editor = Editor(store)
    r = renderer()
    r.prompt([{"type": "text", "text": "stream"}])
    for i in range(2000):
        r.update(agent(f"chunk {i} "))
        if i % 50 == 0:
            editor.text += f"typing {i} "
            batch = r.take()
            assert batch is not None
            editor.apply(store.append(AGENT, SESSION, batch))
    r.turn_ended("end_turn")
    batch = r.take()
    assert batch is not None
    editor.apply(store.append(AGENT, SESSION, batch))
    typed = "".join(f"typing {i} " for i in range(0, 2000, 50))
    assert prompt_text(editor.text) == typed.strip()
    editor.assert_equal_to_file(typed)
    assert editor.fallbacks == 0


def test_a_user_message_outside_a_turn_and_keys_are_recorded(store: ConversationStore) -> None:
    r = renderer()
    r.update(user("from another client"))
    r.update(agent("answer"))
    batch = r.take()
    assert batch is not None
    store.append(AGENT, SESSION, batch)
    keys = store.keys(AGENT, SESSION)
    assert sum(keys.values()) == 1  # the user message; the agent message is still open
    r.turn_ended("end_turn")
    batch = r.take()
    assert batch is not None
    store.append(AGENT, SESSION, batch)
    assert sum(store.keys(AGENT, SESSION).values()) == 2


@pytest.mark.parametrize("operation", ["set_title", "clear_prompt"])
@pytest.mark.parametrize(
    ("first", "rest"), [("canned ", "and deterministic\n"), ("\n```py\nfoo = ba", "r()\nmore\n```\n")]
)
def test_a_rewrite_between_two_batches_of_one_message_keeps_it_whole(
    store: ConversationStore, operation: str, first: str, rest: str
) -> None:
    """A title change (or a cleared prompt area) that lands while a message streams, between two
    of its batches, must not break the line (or the code block) it is in."""
    r = renderer()
    r.prompt([{"type": "text", "text": "question"}])
    r.update(agent("Answer: " + first))
    batch = r.take()
    assert batch is not None
    assert store.ensure(AGENT, SESSION) is not None
    editor = Editor(store)
    editor.apply(store.append(AGENT, SESSION, batch))
    if operation == "set_title":
        editor.apply(store.set_title(AGENT, SESSION, "A new title"))
    else:
        path = store.path(AGENT, SESSION)
        path.write_text(path.read_text() + "a saved prompt\n")  # an editor saved its buffer
        editor.apply(store.clear_prompt(AGENT, SESSION))
    r.update(agent(rest))
    r.turn_ended("end_turn")
    last = r.take()
    assert last is not None and last.mid_line
    editor.apply(store.append(AGENT, SESSION, last))
    text = store.read(AGENT, SESSION)
    assert text is not None
    assert "Answer: " + first + rest in text, text
    assert_well_formed(text)
    editor.assert_equal_to_file()


def test_a_read_never_sees_half_an_append(tmp_path: Path) -> None:
    """Appends rewrite the end of the file in place; `read` (what the editor side compares its
    buffers with) waits for a write under way, so it always sees a whole document."""
    import threading

    store = ConversationStore(tmp_path / "state", durable=False)
    reader_store = ConversationStore(tmp_path / "state", durable=False)  # as another thread or process
    store.ensure(AGENT, SESSION)
    done = threading.Event()
    torn: list[str] = []

    def read_all_the_time() -> None:
        while not done.is_set():
            text = reader_store.read(AGENT, SESSION)
            if text is not None and not text.endswith(PROMPT_AREA):
                torn.append(text[-200:])

    reader = threading.Thread(target=read_all_the_time)
    reader.start()
    try:
        r = renderer()
        r.prompt([{"type": "text", "text": "go"}])
        for i in range(1500):
            r.update(agent(f"chunk {i} " * 20))
            batch = r.take()
            assert batch is not None
            store.append(AGENT, SESSION, batch)
    finally:
        done.set()
        reader.join()
    assert torn == [], f"{len(torn)} torn reads, e.g. {torn[0]!r}"


@example(0, "\U0001f600" * 3, 13)  # 14 bytes: over, though 3 bytes a character would fit
@example(1, "\u2014" * 2, 9)  # 9 bytes: exactly at the bound
@given(st.integers(0, 64), st.text(alphabet="a\u00e9\u2014\U0001f600\ud800", max_size=24), st.integers(0, 99))
def test_whether_a_batch_fits_is_decided_by_its_utf8_size(size: int, text: str, bound: int) -> None:
    """Decided without encoding where the number of characters settles it, always as the
    encoded size would."""
    assert fits(size, text, bound) == (size + len(text.encode("utf-8", "surrogatepass")) + 2 <= bound)
