"""What a file becomes under an agent's diff: whole-file diffs, snippets (claude-agent-acp's Edit),
hunks in order, diffs already applied, and diffs that do not fit."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sidecar.features.edits.diff_apply import Fit, Proposal, apply_diff, apply_diffs, by_path

README = "# Demo\n\nline one\nline two\n"


def test_a_whole_file_diff_gives_its_new_text() -> None:
    assert apply_diff(README, README, README + "added\n") == Proposal(Fit.APPLIES, README + "added\n")
    assert apply_diff(None, None, "new file\n") == Proposal(Fit.APPLIES, "new file\n")
    assert apply_diff(README, None, "rewritten\n") == Proposal(Fit.APPLIES, "rewritten\n")


def test_a_snippet_changes_only_its_part_of_the_file() -> None:
    assert apply_diff(README, "line two", "line 2") == Proposal(Fit.APPLIES, "# Demo\n\nline one\nline 2\n")
    # A deletion.
    assert apply_diff(README, "line one\n", "") == Proposal(Fit.APPLIES, "# Demo\n\nline two\n")


def test_a_diff_already_applied_is_recognised() -> None:
    after = README + "added\n"
    assert apply_diff(after, README, after) == Proposal(Fit.APPLIED, after)
    # Lines appended after the snippet: the new text contains the old one.
    assert apply_diff("a\nb\nc\n", "b\n", "b\nc\n") == Proposal(Fit.APPLIED, "a\nb\nc\n")
    assert apply_diff("a\nB\n", "b", "B") == Proposal(Fit.APPLIED, "a\nB\n")


def test_a_diff_that_does_not_fit_is_a_conflict() -> None:
    assert apply_diff(README, "not there", "x") == Proposal(Fit.CONFLICT, None)
    assert apply_diff("x\nx\n", "x", "y") == Proposal(Fit.CONFLICT, None)  # which one?
    assert apply_diff(None, "old", "new") == Proposal(Fit.CONFLICT, None)  # the file is gone
    assert apply_diff("text", "", "new") == Proposal(Fit.CONFLICT, None)
    assert apply_diff("", "", "new") == Proposal(Fit.APPLIES, "new")


def test_hunks_apply_in_order_and_a_bad_one_spoils_the_file() -> None:
    hunks = [
        {"path": "/w/f", "oldText": "line one", "newText": "line 1"},
        {"path": "/w/f", "oldText": "line 1\nline two", "newText": "line 1\nline 2"},
    ]
    assert apply_diffs(README, hunks) == Proposal(Fit.APPLIES, "# Demo\n\nline 1\nline 2\n")
    assert apply_diffs("# Demo\n\nline 1\nline 2\n", hunks).fit is Fit.APPLIED
    assert (
        apply_diffs(README, [*hunks, {"path": "/w/f", "oldText": "gone", "newText": "x"}]).fit is Fit.CONFLICT
    )
    assert apply_diffs(README, [{"path": "/w/f", "oldText": 3, "newText": "x"}]).fit is Fit.CONFLICT
    assert by_path([{"path": "/a"}, {"path": "/b"}, {"path": "/a", "n": 2}]) == {
        "/a": [{"path": "/a"}, {"path": "/a", "n": 2}],
        "/b": [{"path": "/b"}],
    }


lines = st.lists(st.text(alphabet="ab \n", max_size=6), max_size=6).map("".join)


@given(
    before=lines,
    old=st.text(alphabet="xyz", min_size=1, max_size=5),
    new=st.text(alphabet="pq", max_size=5),
    after=lines,
)
def test_a_unique_snippet_is_replaced_in_place_and_once(before: str, old: str, new: str, after: str) -> None:
    current = before + old + after  # `old` is made of letters found nowhere else: it is unique
    assert apply_diff(current, old, new) == Proposal(Fit.APPLIES, before + new + after)


@given(current=st.text(max_size=40), new=st.text(max_size=40))
def test_a_whole_file_diff_applies_once_then_reads_as_applied(current: str, new: str) -> None:
    first = apply_diff(current, current, new)
    assert first.text == new
    assert apply_diff(new, current, new).fit is Fit.APPLIED
