"""follow_edits: the same text, and a view top anchored the way Helix anchors it follows the end.

`helix_map` models helix-core's ChangeSet (Transaction::change and update_positions, Assoc::Before,
which is how helix-view maps a view's top through an edit); the real-Helix test is
tests/editors/helix/test_transcript.py."""

from __future__ import annotations

import random

from sidecar.features.conversation.document import TextEdit, apply_edits
from sidecar.features.conversation.follow import follow_edits


def helix_map(text: str, edits: list[TextEdit], pos: int) -> int:
    """Where Helix puts a view top at `pos` after `edits` (Transaction::change, Assoc::Before)."""
    old = new = 0
    for edit in sorted(edits, key=lambda e: (e.start, e.end)):
        if pos < edit.start:
            break
        new += edit.start - old  # retained
        old = edit.start
        if edit.end > edit.start and pos < edit.end:
            return new  # inside a replaced or deleted range: its start (before the insertion)
        if edit.end == edit.start and pos == edit.start:
            return new  # at an insertion: before it
        new += len(edit.text)
        old = edit.end
    return new + pos - old


def line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos)


def line_start(text: str, line: int) -> int:
    pos = 0
    for _ in range(line):
        pos = text.index("\n", pos) + 1
    return pos


DOC = (
    "# Title\n<!-- id -->\n\n"
    + "".join(f"line {i}\n\n" for i in range(30))
    + "---\n\n## Your prompt\n\nMARKER\nmy next prompt"
)


def area(text: str) -> int:
    return text.index("---\n")


def test_an_answer_added_above_the_prompt_area_moves_views_near_the_end_down_by_its_lines() -> None:
    added = "## Agent\n\nanswer one\nanswer two\n\n"
    edits = [TextEdit(area(DOC), area(DOC), added)]
    followed = follow_edits(DOC, edits)
    assert apply_edits(DOC, followed) == apply_edits(DOC, edits)
    new = apply_edits(DOC, edits)
    for line in range(3, line_of(DOC, area(DOC)) + 1):
        top = line_start(DOC, line)
        assert helix_map(DOC, edits, top) == top  # what Helix does with the plain edit: stays
        assert helix_map(DOC, followed, top) == line_start(new, line + 5), line
    # The top line stays the top line; the cursor in the prompt area stays on its text.
    assert helix_map(DOC, followed, 0) == 0
    cursor = DOC.index("next prompt")
    assert new[helix_map(DOC, followed, cursor) :].startswith("next prompt")


def test_a_chunk_that_continues_a_line_and_adds_lines_follows_too() -> None:
    text = DOC.replace("---\n", "c0 c1\n\n---\n")
    at = text.index("c1") + 2
    edits = [TextEdit(at, at, " c2\nc3")]
    followed = follow_edits(text, edits)
    new = apply_edits(text, edits)
    assert apply_edits(text, followed) == new
    for line in range(3, line_of(text, at) + 1):
        assert helix_map(text, followed, line_start(text, line)) == line_start(new, line + 1)


def test_edits_that_add_no_line_or_only_far_up_are_left_as_they_are() -> None:
    at = area(DOC) - 1
    same_line = [TextEdit(at, at, "more words")]
    assert follow_edits(DOC, same_line) == same_line
    title = [TextEdit(0, 7, "# New\ntitle")]
    assert follow_edits(DOC, title) == title  # the change is on the first line: no window


def test_a_title_edit_with_an_append_keeps_the_title_edit_and_follows_the_append() -> None:
    edits = [TextEdit(2, 7, "Other title"), TextEdit(area(DOC), area(DOC), "new\nlines\n")]
    followed = follow_edits(DOC, edits)
    new = apply_edits(DOC, edits)
    assert apply_edits(DOC, followed) == new
    assert TextEdit(2, 7, "Other title") in followed
    top = line_start(DOC, 40)
    assert helix_map(DOC, followed, top) == line_start(new, 42)


def test_the_window_is_bounded() -> None:
    edits = [TextEdit(area(DOC), area(DOC), "x\n")]
    followed = follow_edits(DOC, edits, max_lines=4)
    new = apply_edits(DOC, edits)
    assert apply_edits(DOC, followed) == new
    near, far = line_start(DOC, line_of(DOC, area(DOC)) - 3), line_start(DOC, 10)
    assert helix_map(DOC, followed, near) == line_start(new, line_of(DOC, near) + 1)
    assert helix_map(DOC, followed, far) == far  # scrolled up further: not moved
    small = follow_edits(DOC, edits, max_chars=1)
    assert apply_edits(DOC, small) == new


def test_random_documents_and_appends_keep_the_text_and_follow() -> None:
    rng = random.Random(7)
    for _ in range(300):
        choices = ["", "a", "bb b", "```", "> q", "- item", "ccc"]
        lines = [rng.choice(choices) for _ in range(rng.randint(1, 12))]
        text = "\n".join(lines) + "\n---\nMARKER\n" + rng.choice(["", "typed"])
        at = rng.randint(0, text.index("---\n"))
        end = min(at + rng.randint(0, 4), text.index("---\n"))
        piece = "".join(rng.choice(["x", "\n", " ", "y\n"]) for _ in range(rng.randint(0, 8)))
        edits = [TextEdit(at, end, piece)]
        followed = follow_edits(text, edits, max_lines=rng.randint(1, 20))
        new = apply_edits(text, edits)
        assert apply_edits(text, followed) == new, (text, edits)
        added = new.count("\n") - text.count("\n")
        if followed != edits and added > 0:
            first = min(e.start for e in followed)
            for line in range(line_of(text, first) + 1, line_of(text, at) + 1):
                assert helix_map(text, followed, line_start(text, line)) == line_start(new, line + added)


def test_the_prompt_cleared_below_the_marker_is_kept_as_it_is() -> None:
    prompt = DOC.index("my next prompt")
    edits = [TextEdit(area(DOC), area(DOC), "## You\n\nmy next prompt\n\n"), TextEdit(prompt, len(DOC), "")]
    followed = follow_edits(DOC, edits)
    new = apply_edits(DOC, edits)
    assert apply_edits(DOC, followed) == new
    assert followed[-1] == edits[-1]
    top = line_start(DOC, 50)
    assert helix_map(DOC, followed, top) == line_start(new, 54)
