"""The proposals the editors show are the one diff rule (sidecar/features/edits/diff_apply.py) applied to the
file as the editor has it: on the shared fixed and random cases (tests/diff_cases.py), from a file
on disk, from an open document (with its version), and from no file at all."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sidecar.features.edits.diff_apply import apply_diffs
from sidecar.features.edits.lsp_proposals import Proposals
from tests.diff_cases import FIXED, FIXED_FITS, diff_cases
from tests.lsp.proposals_shape import check_proposals


class OpenDocument:
    def __init__(self, uri: str, source: str, version: int) -> None:
        self.uri, self.source, self.version = uri, source, version


class Files:
    """The editor's open documents, by real path."""

    def __init__(self) -> None:
        self.open: dict[Path, OpenDocument] = {}

    def document_for(self, path: Path) -> OpenDocument | None:
        return self.open.get(path)


class Engine:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.fs = self  # the edits' file service, as far as proposals use it

    def roots_of(self, session_id: str) -> list[str] | None:
        return [str(self.root)] if session_id == "s1" else None


def propose(files: Files, root: Path, diffs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    proposals = Proposals(files, lambda: Engine(root))  # type: ignore[arg-type, return-value]
    update = {"sessionUpdate": "tool_call", "status": "pending", "content": diffs}
    found = proposals.for_update("s1", False, update)
    assert found is not None
    return check_proposals(found)


@pytest.mark.parametrize("source", ["disk", "buffer"])
def test_proposals_follow_the_diff_rule_on_every_shared_case(tmp_path: Path, source: str) -> None:
    fits = []
    for n, (current, diffs) in enumerate(diff_cases()):
        path = tmp_path / f"case{n}.txt"
        files = Files()
        if current is not None and source == "disk":
            path.write_text(current, newline="")
        elif current is not None:
            files.open[path] = OpenDocument(path.as_uri(), current, n)
        [proposal] = propose(files, tmp_path, [{"type": "diff", "path": str(path), **d} for d in diffs])
        want = apply_diffs(current, diffs)
        assert (proposal["fit"], proposal["text"]) == (want.fit.value, want.text), (current, diffs)
        assert proposal["uri"] == path.as_uri()
        assert proposal["version"] == (n if source == "buffer" and current is not None else None)
        fits.append(proposal["fit"])
    assert fits[: len(FIXED)] == FIXED_FITS


def test_a_diff_with_a_text_that_is_not_a_string_is_a_conflict(tmp_path: Path) -> None:
    """The editor copies of the rule once dropped such a diff and showed the rest: now it is said."""
    path = tmp_path / "a.txt"
    path.write_text("one\n")
    for bad in ({"oldText": "one", "newText": 1}, {"oldText": 2, "newText": "x"}, {"oldText": "one"}):
        [proposal] = propose(Files(), tmp_path, [{"type": "diff", "path": str(path), **bad}])
        assert (proposal["fit"], proposal["text"]) == ("conflict", None), bad


def test_a_tool_call_that_is_replayed_settled_or_without_a_diff_proposes_nothing(tmp_path: Path) -> None:
    proposals = Proposals(Files(), lambda: Engine(tmp_path))  # type: ignore[arg-type, return-value]
    diff = {"type": "diff", "path": str(tmp_path / "a.txt"), "oldText": None, "newText": "x"}
    live = {"sessionUpdate": "tool_call_update", "content": [diff]}
    assert proposals.for_update("s1", False, live) is not None
    assert proposals.for_update("s1", True, live) is None
    for status in ("completed", "failed"):
        assert proposals.for_update("s1", False, {**live, "status": status}) is None
    assert proposals.for_update("s1", False, {**live, "content": [{"type": "content"}]}) is None
    assert proposals.for_update("s1", False, {**live, "sessionUpdate": "plan"}) is None
    [unknown] = proposals.for_update("s2", False, live) or []
    assert unknown["fit"] == "unavailable" and "not loaded" in unknown["reason"]


def test_past_the_bound_of_one_message_later_files_carry_no_text(tmp_path: Path) -> None:
    """4 MiB of texts per message: the files after it are still proposed, fit and all, without
    their text, and say why; one file's text is bounded at 1 MiB."""
    chunk = "x" * (900 * 1024)
    diffs = [
        {"type": "diff", "path": str(tmp_path / f"f{n}.txt"), "oldText": None, "newText": chunk}
        for n in range(6)
    ]
    proposals = propose(Files(), tmp_path, diffs)
    assert [p["text"] is not None for p in proposals] == [True, True, True, True, False, False]
    assert all(p["fit"] == "applies" for p in proposals)
    assert "4 MiB together" in proposals[4]["reason"]
    [alone] = propose(Files(), tmp_path, [{**diffs[0], "newText": "y" * (1024 * 1024 + 1)}])
    assert alone["text"] is None and "over 1 MiB" in alone["reason"]
