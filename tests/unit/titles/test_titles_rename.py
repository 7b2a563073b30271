"""The rename state machine: every outcome and both fallbacks."""

from __future__ import annotations

import pytest

from sidecar.features.titles.api import (
    ListedSession,
    RenameFallback,
    RenameState,
    RenameTracker,
    TitleRecord,
    TitleSource,
    apply_agent_info,
    apply_listed,
    apply_rename_outcome,
    set_pending,
)

A, S = "demo", "s1"


def previous() -> TitleRecord:
    return apply_agent_info(
        None, agent=A, session_id=S, now=1.0, title="Old title", updated_at="2026-01-01T00:00:00Z"
    )


def test_confirmed_when_agent_sends_requested_title() -> None:
    tracker = RenameTracker()
    tracker.start(S, "Fix auth timeout", previous(), "turn-1")
    pending = tracker.pending(S)
    assert pending is not None and pending.requested == "Fix auth timeout"
    # Trailing whitespace and NFC differences are the same title.
    outcome = tracker.on_agent_title(S, "Fix auth timeout  ")
    assert outcome is not None
    assert outcome.state is RenameState.CONFIRMED
    assert (outcome.title, outcome.title_source) == ("Fix auth timeout", TitleSource.USER)
    assert "renamed to" in outcome.message
    assert tracker.pending(S) is None
    # Later events decide nothing more.
    assert tracker.on_turn_ended(S, "turn-1") is None
    assert tracker.on_agent_title(S, "Other") is None


def test_confirmed_compares_after_sanitizing() -> None:
    tracker = RenameTracker()
    tracker.start(S, "Café", None, "t")
    outcome = tracker.on_agent_title(S, "\x1b[1mCafe\u0301\x1b[0m")
    assert outcome is not None and outcome.state is RenameState.CONFIRMED


def test_changed_when_agent_picks_another_title() -> None:
    tracker = RenameTracker()
    tracker.start(S, "Wanted", previous(), "turn-1")
    outcome = tracker.on_agent_title(S, "Agent's choice")
    assert outcome is not None
    assert outcome.state is RenameState.CHANGED
    assert (outcome.title, outcome.title_source) == ("Agent's choice", TitleSource.AGENT)
    assert "instead of" in outcome.message


def test_case_difference_is_another_title() -> None:
    tracker = RenameTracker()
    tracker.start(S, "Wanted", None, "t")
    outcome = tracker.on_agent_title(S, "wanted")
    assert outcome is not None and outcome.state is RenameState.CHANGED


def test_cleared_title_keeps_waiting() -> None:
    tracker = RenameTracker()
    tracker.start(S, "Wanted", None, "t")
    assert tracker.on_agent_title(S, None) is None
    assert tracker.on_agent_title(S, "\x1b[0m ") is None
    assert tracker.pending(S) is not None


def test_unconfirmed_keep_local_on_turn_end() -> None:
    tracker = RenameTracker(RenameFallback.KEEP_LOCAL)
    tracker.start(S, "Wanted", previous(), "turn-2")
    assert tracker.on_turn_ended(S, "turn-1") is None  # an earlier turn, still running ahead
    outcome = tracker.on_turn_ended(S, "turn-2")
    assert outcome is not None
    assert outcome.state is RenameState.UNCONFIRMED
    assert outcome.fallback is RenameFallback.KEEP_LOCAL
    assert (outcome.title, outcome.title_source) == ("Wanted", TitleSource.USER)
    assert "kept as a local title" in outcome.message


def test_unconfirmed_revert_on_timeout() -> None:
    tracker = RenameTracker(RenameFallback.REVERT)
    tracker.start(S, "Wanted", previous(), "turn-1")
    assert tracker.on_timeout(S, "stale-turn") is None  # a timer armed for an older rename
    outcome = tracker.on_timeout(S, "turn-1")
    assert outcome is not None
    assert outcome.state is RenameState.UNCONFIRMED and outcome.fallback is RenameFallback.REVERT
    assert (outcome.title, outcome.title_source) == ("Old title", TitleSource.AGENT)
    assert "back to" in outcome.message


def test_revert_without_previous_title() -> None:
    tracker = RenameTracker()
    tracker.start(S, "Wanted", None, "t", fallback=RenameFallback.REVERT)
    outcome = tracker.on_timeout(S)
    assert outcome is not None
    assert (outcome.title, outcome.title_source) == (None, None)
    assert "no title" in outcome.message


def test_newer_request_supersedes_and_keeps_original_previous() -> None:
    tracker = RenameTracker(RenameFallback.REVERT)
    tracker.start(S, "First", previous(), "t1")
    replaced = tracker.start(S, "Second", None, "t2")
    assert replaced is not None and replaced.requested == "First"
    assert tracker.on_turn_ended(S, "t1") is None
    outcome = tracker.on_turn_ended(S, "t2")
    assert outcome is not None and outcome.requested == "Second"
    assert outcome.title == "Old title"


def test_sessions_are_independent_and_cancel() -> None:
    tracker = RenameTracker()
    tracker.start("a", "A", None, "t")
    tracker.start("b", "B", None, "t")
    assert tracker.cancel("a") is not None
    assert tracker.on_agent_title("a", "A") is None
    outcome = tracker.on_agent_title("b", "B")
    assert outcome is not None and outcome.session_id == "b"
    assert tracker.on_timeout("nobody") is None


def test_start_refuses_empty() -> None:
    with pytest.raises(ValueError):
        RenameTracker().start(S, " \x1b[0m", None, "t")


@pytest.mark.parametrize(
    ("agent_says", "fallback", "state", "title", "source"),
    [
        ("Wanted", RenameFallback.KEEP_LOCAL, RenameState.CONFIRMED, "Wanted", TitleSource.USER),
        ("Other", RenameFallback.KEEP_LOCAL, RenameState.CHANGED, "Other", TitleSource.AGENT),
        (None, RenameFallback.KEEP_LOCAL, RenameState.UNCONFIRMED, "Wanted", TitleSource.USER),
        (None, RenameFallback.REVERT, RenameState.UNCONFIRMED, "Old title", TitleSource.AGENT),
    ],
)
def test_full_flow_with_records(
    agent_says: str | None,
    fallback: RenameFallback,
    state: RenameState,
    title: str,
    source: TitleSource,
) -> None:
    """What the core does: pending, agent update, outcome stored; then a
    newer session/list does not undo a confirmed or kept title."""
    rec = previous()
    tracker = RenameTracker(fallback)
    tracker.start(S, "Wanted", rec, "turn-9")
    rec = set_pending(rec, "Wanted", agent=A, session_id=S, now=2.0)
    outcome = None
    if agent_says is not None:
        rec = apply_agent_info(rec, agent=A, session_id=S, now=3.0, title=agent_says)
        outcome = tracker.on_agent_title(S, agent_says)
    else:
        outcome = tracker.on_turn_ended(S, "turn-9")
    assert outcome is not None
    rec = apply_rename_outcome(rec, outcome, agent=A, now=4.0)
    assert (rec.title, rec.title_source, rec.rename_state) == (title, source, state)
    assert rec.pending_title is None
    assert rec.to_session_info()["renameState"] == state.value

    stale = ListedSession(session_id=S, cwd="/w", title="Old title", updated_at="2030-01-01T00:00:00Z")
    after_list = apply_listed(rec, stale, 5.0)
    if source is TitleSource.USER:
        assert after_list.title == title
    else:
        # An agent title is the agent's: a strictly newer list entry may replace it.
        assert after_list.title == "Old title"


def test_finished_rename_state_is_forgotten_when_the_title_moves_on() -> None:
    tracker = RenameTracker()
    rec = previous()
    tracker.start(S, "Wanted", rec, "t")
    rec = set_pending(rec, "Wanted", agent=A, session_id=S, now=2.0)
    # While pending, an unrelated title change keeps the rename pending.
    rec = apply_agent_info(rec, agent=A, session_id=S, now=3.0, updated_at="2026-02-01T00:00:00Z")
    assert rec.rename_state is RenameState.PENDING
    outcome = tracker.on_agent_title(S, "Wanted")
    assert outcome is not None
    rec = apply_rename_outcome(rec, outcome, agent=A, now=4.0)
    assert rec.rename_state is RenameState.CONFIRMED
    # Metadata alone keeps the state, and the agent cannot replace the user's title.
    rec = apply_agent_info(rec, agent=A, session_id=S, now=5.0, meta={"k": 1})
    assert rec.rename_state is RenameState.CONFIRMED
    assert apply_agent_info(rec, agent=A, session_id=S, now=6.0, title="Later title") is rec
    # A rename the agent answered with its own title leaves an agent title: a new one ends the state.
    tracker.start(S, "Again", rec, "t2")
    changed = tracker.on_agent_title(S, "Agent's choice")
    assert changed is not None and changed.state is RenameState.CHANGED
    rec = apply_rename_outcome(rec, changed, agent=A, now=7.0)
    assert (rec.title_source, rec.rename_state) == (TitleSource.AGENT, RenameState.CHANGED)
    rec = apply_agent_info(rec, agent=A, session_id=S, now=8.0, title="Later title")
    assert rec.title == "Later title"
    assert rec.rename_state is None and rec.to_session_info()["renameState"] is None
