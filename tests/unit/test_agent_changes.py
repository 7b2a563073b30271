"""The agent's hunks (features/edits/agent_changes.py): recorded from a write, reverted exactly, kept aligned
through any edit (hypothesis), bounded per session."""

from __future__ import annotations

import itertools
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sidecar.features.edits import agent_changes
from sidecar.features.edits.agent_changes import (
    AgentChanges,
    Hunk,
    in_file_order,
    line_edit,
    line_edits_between,
    lines_of,
)

PATH = "/ws/file.txt"
# Lines as editors have them; no lone \r (an edit between \r and \n would split a line end).
texts = st.lists(st.sampled_from(["a", "b", "cd", "\n", "\r\n", "é"]), max_size=40).map("".join)


def position(text: str, offset: int) -> tuple[int, int]:
    """The LSP line of `offset` and its character in code points (only whether it is 0 matters)."""
    before = lines_of(text[:offset])
    if not before or before[-1].endswith("\n"):
        return len(before), 0
    return len(before) - 1, len(before[-1])


def _not_in_a_line_end(text: str, offset: int) -> int:
    """No LSP position lies between the \r and \n of a line end."""
    return offset - 1 if text[offset - 1 : offset + 1] == "\r\n" else offset


def revert_all(text: str, hunks: list[Hunk]) -> str:
    lines = lines_of(text)
    for hunk in sorted(hunks, key=in_file_order, reverse=True):
        assert hunk.holds_agent_text(lines)
        lines[hunk.start : hunk.end] = hunk.old
    return "".join(lines)


@settings(max_examples=300, deadline=None)
@given(before=texts, after=texts)
def test_a_write_is_its_hunks_and_reverting_them_gives_the_text_before(before: str, after: str) -> None:
    changes = AgentChanges()
    added = changes.record("s1", PATH, before, after)
    assert changes.hunks(PATH) == sorted(added, key=in_file_order)
    assert all(h.holds_agent_text(lines_of(after)) for h in added)
    assert revert_all(after, added) == before


@settings(max_examples=500, deadline=None)
@given(
    before=texts,
    after=texts,
    edits=st.lists(st.tuples(st.integers(0, 400), st.integers(0, 400), texts), min_size=1, max_size=4),
)
def test_hunks_follow_any_edit(before: str, after: str, edits: list[tuple[int, int, str]]) -> None:
    """Whatever the user types, a hunk still shown holds exactly the agent's lines where it says,
    and reverting what is left changes only those lines."""
    changes = AgentChanges()
    changes.record("s1", PATH, before, after)
    text = after
    for a, b, typed in edits:
        start, end = sorted(_not_in_a_line_end(text, min(x, len(text))) for x in (a, b))
        (sl, sc), (el, ec) = position(text, start), position(text, end)
        text = text[:start] + typed + text[end:]
        changes.edited(PATH, [line_edit(sl, sc, el, ec, typed)])
        lines = lines_of(text)
        assert all(h.holds_agent_text(lines) for h in changes.hunks(PATH)), (text, changes.hunks(PATH))
    revert_all(text, changes.hunks(PATH))


@settings(max_examples=300, deadline=None)
@given(before=texts, after=texts, user=texts)
def test_hunks_follow_a_whole_document_change(before: str, after: str, user: str) -> None:
    changes = AgentChanges()
    changes.record("s1", PATH, before, after)
    changes.edited(PATH, line_edits_between(lines_of(after), lines_of(user)))
    assert all(h.holds_agent_text(lines_of(user)) for h in changes.hunks(PATH))


def test_above_inside_below() -> None:
    changes = AgentChanges()
    [hunk] = changes.record("s1", PATH, "a\nb\nc\nd\n", "a\nB\nB2\nc\nd\n")
    assert (hunk.start, hunk.end, hunk.old) == (1, 3, ["b\n"])
    changes.edited(PATH, [line_edit(0, 0, 0, 0, "top\n")])  # a new line above
    assert changes.hunks(PATH)[0].start == 2
    changes.edited(PATH, [line_edit(0, 1, 0, 1, "x")])  # typing on a line above: no move
    changes.edited(PATH, [line_edit(5, 0, 5, 1, "D")])  # below
    assert changes.hunks(PATH)[0].start == 2
    changes.edited(PATH, [line_edit(1, 1, 1, 1, "\n")])  # a line split above: one down
    assert changes.hunks(PATH)[0].start == 3
    changes.edited(PATH, [line_edit(4, 1, 4, 1, "!")])  # on the hunk's last line: the user's now
    assert changes.hunks(PATH) == []


def test_a_later_write_moves_the_hunks_it_does_not_touch() -> None:
    changes = AgentChanges()
    changes.record("s1", PATH, "a\nb\nc\n", "a\nb\nC\n")
    changes.record("s1", PATH, "a\nb\nC\n", "A\nA2\nb\nC\n")
    assert [(h.start, h.new, h.old) for h in changes.hunks(PATH)] == [
        (0, ["A\n", "A2\n"], ["a\n"]),
        (3, ["C\n"], ["c\n"]),
    ]


def test_bounded_per_session(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(agent_changes, "MAX_HUNKS", 3)
    clock = itertools.count()
    changes = AgentChanges(now=lambda: float(next(clock)))
    for n in range(5):
        changes.record("s1", f"/ws/{n}.txt", "a\n", f"a{n}\n")
    changes.record("s2", "/ws/other.txt", "a\n", "b\n")
    assert sorted(h.path for h in changes.all_hunks() if h.session_id == "s1") == [
        "/ws/2.txt",
        "/ws/3.txt",
        "/ws/4.txt",
    ], "the oldest went first"
    assert [h.path for h in changes.all_hunks() if h.session_id == "s2"] == ["/ws/other.txt"]


def test_stored_and_read_back() -> None:
    changes = AgentChanges()
    [hunk] = changes.record("s1", PATH, "a\n", "b\n")
    again = Hunk.from_json(hunk.to_json())
    assert again == hunk
    assert Hunk.from_json({"id": 1}) is None


def test_a_write_changed_all_over_is_one_coarse_hunk_past_the_diff_budget() -> None:
    from sidecar.features.edits.agent_changes import diff_write

    old = [f"line {i}\n" for i in range(20_000)]
    new = [line.upper() if i % 2 and 0 < i < 19_999 else line for i, line in enumerate(old)]
    began = time.monotonic()
    diff = diff_write("".join(old), "".join(new), budget=0.2)
    assert time.monotonic() - began < 5
    assert diff.blocks == [(1, 19_998, 1, 19_998)]  # the common first and last lines left out


def test_an_ordinary_write_is_diffed_as_difflib_does() -> None:
    import difflib

    from sidecar.features.edits.agent_changes import diff_write

    old = [f"line {i}\n" for i in range(3000)]
    new = [*old[:10], "new\n", *old[12:2000], *old[2001:], "end\n"]
    diff = diff_write("".join(old), "".join(new), budget=10)
    opcodes = difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()
    assert diff.blocks == [(i1, i2, j1, j2) for tag, i1, i2, j1, j2 in opcodes if tag != "equal"]
