"""Provenance rules: who may replace whose title."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sidecar.features.titles.api import (
    UNSET,
    ListedSession,
    RenameState,
    TitleRecord,
    TitleSource,
    apply_agent_info,
    apply_fallback,
    apply_listed,
    apply_user_title,
    clear_pending,
    mark_missing,
    parse_timestamp,
    sanitize_text,
    session_info_fields,
    set_pending,
)

A, S = "demo", "s1"
T1, T2, T3 = "2026-01-01T10:00:00Z", "2026-01-01T11:00:00+01:00", "2026-01-02T00:00:00Z"
# T2 is the same instant as T1 written in another zone.


def agent_rec(title: str = "Agent title", updated_at: str | None = T1, now: float = 1.0) -> TitleRecord:
    return apply_agent_info(None, agent=A, session_id=S, now=now, title=title, updated_at=updated_at)


def listed(title: str | None = "Listed", updated_at: str | None = T3, **kw: Any) -> ListedSession:
    return ListedSession(
        session_id=S, cwd=kw.get("cwd", "/w"), title=title, updated_at=updated_at, meta=kw.get("meta")
    )


# -- live agent updates -----------------------------------------------------


def test_agent_title_set_clear_and_omit() -> None:
    rec = agent_rec()
    assert (rec.title, rec.title_source, rec.updated_at) == ("Agent title", TitleSource.AGENT, T1)
    assert rec.created_at == rec.changed_at == 1.0
    same = apply_agent_info(rec, agent=A, session_id=S, now=2.0, updated_at=UNSET)
    assert same is rec
    cleared = apply_agent_info(rec, agent=A, session_id=S, now=3.0, title=None)
    assert (cleared.title, cleared.title_source, cleared.changed_at) == (None, None, 3.0)
    assert cleared.updated_at == T1
    only_time = apply_agent_info(rec, agent=A, session_id=S, now=4.0, updated_at=None)
    assert only_time.title == "Agent title" and only_time.updated_at is None


def test_agent_title_is_sanitized_and_empty_means_cleared() -> None:
    rec = apply_agent_info(None, agent=A, session_id=S, now=1.0, title="\x1b[31mRed\u202e\nline\x00")
    assert rec.title == "Red line"
    blank = apply_agent_info(rec, agent=A, session_id=S, now=2.0, title="\x1b[0m  \t")
    assert blank.title is None and blank.title_source is None
    long = apply_agent_info(None, agent=A, session_id=S, now=1.0, title="x" * 100, max_length=10)
    assert long.title == "x" * 9 + "…"


def test_agent_title_without_time_gets_our_clock() -> None:
    rec = apply_agent_info(None, agent=A, session_id=S, now=0.0, title="T")
    assert rec.updated_at == "1970-01-01T00:00:00.000Z"
    assert parse_timestamp(rec.updated_at) == 0.0


def test_agent_title_never_replaces_or_clears_a_user_title() -> None:
    # Issue 13 item 2: a replayed (or live) session_info_update must not undo a rename.
    user = apply_user_title(None, "Mine", agent=A, session_id=S, now=1.0)
    assert apply_agent_info(user, agent=A, session_id=S, now=2.0, title="Agent's") is user
    assert apply_agent_info(user, agent=A, session_id=S, now=2.0, title=None) is user
    # The rest of the update still applies.
    rec = apply_agent_info(
        user, agent=A, session_id=S, now=3.0, title="Agent's", updated_at=T2, meta={"k": 1}
    )
    assert (rec.title, rec.title_source, rec.updated_at, rec.meta) == ("Mine", TitleSource.USER, T2, {"k": 1})


def test_agent_repeating_the_user_title_keeps_it_a_user_title() -> None:
    user = apply_user_title(None, "Mine", agent=A, session_id=S, now=1.0)
    assert apply_agent_info(user, agent=A, session_id=S, now=2.0, title=" Mine ") is user


def test_agent_meta_merges_and_oversize_patch_is_ignored() -> None:
    rec = apply_agent_info(None, agent=A, session_id=S, now=1.0, meta={"a": 1, "b": {"c": 2}})
    rec = apply_agent_info(rec, agent=A, session_id=S, now=2.0, meta={"a": None, "b": {"d": 3}})
    assert rec.meta == {"b": {"c": 2, "d": 3}}
    big = apply_agent_info(rec, agent=A, session_id=S, now=3.0, meta={"blob": "x" * 100_000})
    assert big is rec
    garbage = apply_agent_info(rec, agent=A, session_id=S, now=3.0, meta=[1, 2])
    assert garbage is rec
    cleared = apply_agent_info(rec, agent=A, session_id=S, now=4.0, meta=None)
    assert cleared.meta is None


def test_malformed_agent_fields_are_ignored() -> None:
    rec = agent_rec()
    bad: Any = 42
    assert apply_agent_info(rec, agent=A, session_id=S, now=2.0, title=bad, updated_at=bad) is rec


def test_session_info_fields_keeps_omitted_and_null_apart() -> None:
    rec = apply_agent_info(None, agent=A, session_id=S, now=1.0, title="T", meta={"a": 1})
    update = {"sessionUpdate": "session_info_update", "updatedAt": T1, "_meta": {"a": None, "b": 2}}
    fields = session_info_fields(update)
    assert fields == {"updated_at": T1, "meta": {"a": None, "b": 2}}
    out = apply_agent_info(rec, agent=A, session_id=S, now=2.0, **fields)
    assert (out.title, out.updated_at, out.meta) == ("T", T1, {"b": 2})
    cleared = apply_agent_info(out, agent=A, session_id=S, now=3.0, **session_info_fields({"title": None}))
    assert cleared.title is None and cleared.meta == {"b": 2}


def test_listed_session_from_acp() -> None:
    entry = ListedSession.from_acp(
        {"sessionId": "s", "cwd": "/w", "title": 5, "updatedAt": T1, "_meta": {"k": 1}, "extra": True}
    )
    assert entry == ListedSession("s", "/w", None, T1, {"k": 1})
    assert ListedSession.from_acp({"cwd": "/w"}) is None
    assert ListedSession.from_acp({"sessionId": 3}) is None
    assert ListedSession.from_acp("junk") is None
    minimal = ListedSession.from_acp({"sessionId": "s", "_meta": [1]})
    assert minimal == ListedSession("s")


# -- session/list -----------------------------------------------------------


def test_list_fills_missing_title_and_records_cwd() -> None:
    rec = apply_listed(None, listed(), 5.0, agent=A)
    assert (rec.title, rec.title_source, rec.cwd, rec.updated_at) == ("Listed", TitleSource.LIST, "/w", T3)
    assert rec.created_at == 5.0 and not rec.missing
    with pytest.raises(ValueError, match="agent"):
        apply_listed(None, listed(), 5.0)


def test_list_never_overwrites_user_title() -> None:
    user = apply_user_title(agent_rec(updated_at=T1), "Mine", agent=A, session_id=S, now=2.0)
    rec = apply_listed(user, listed(updated_at=T3), 3.0)
    assert (rec.title, rec.title_source) == ("Mine", TitleSource.USER)
    assert rec.updated_at == T3  # activity time still advances


@pytest.mark.parametrize(
    ("agent_at", "listed_at", "replaced"),
    [
        (T1, T3, True),  # listed strictly newer
        (T3, T1, False),  # agent newer
        (T1, T1, False),  # equal
        (T1, T2, False),  # equal instant, other zone
        (T1, None, False),  # listed time unknown: older
        (T1, "yesterday", False),  # unparsable listed: older
        ("garbage", T1, True),  # unparsable agent time: older
        (None, T1, True),
        (None, None, False),
    ],
)
def test_list_vs_agent_title(agent_at: str | None, listed_at: str | None, replaced: bool) -> None:
    rec = apply_listed(agent_rec(updated_at=agent_at), listed(updated_at=listed_at), 9.0)
    if replaced:
        assert (rec.title, rec.title_source) == ("Listed", TitleSource.LIST)
    else:
        assert (rec.title, rec.title_source) == ("Agent title", TitleSource.AGENT)


def test_list_replaces_fallback_and_list_titles() -> None:
    fb = apply_fallback(None, "From prompt", agent=A, session_id=S, now=1.0)
    assert fb is not None and fb.title_source is TitleSource.FALLBACK
    rec = apply_listed(fb, listed(updated_at=None), 2.0)
    assert (rec.title, rec.title_source) == ("Listed", TitleSource.LIST)
    rec2 = apply_listed(rec, listed(title="Renamed upstream", updated_at=None), 3.0)
    assert rec2.title == "Renamed upstream"


def test_list_without_title_clears_nothing() -> None:
    rec = agent_rec()
    out = apply_listed(rec, listed(title=None, updated_at=T3), 2.0)
    assert out.title == "Agent title" and out.updated_at == T3


def test_list_is_idempotent_and_clears_missing() -> None:
    rec = apply_listed(None, listed(), 1.0, agent=A)
    assert apply_listed(rec, listed(), 2.0) is rec
    gone = mark_missing(rec)
    assert gone.missing and gone.changed_at == rec.changed_at
    assert mark_missing(gone) is gone
    back = apply_listed(gone, listed(), 3.0)
    assert not back.missing and back.changed_at == 3.0


def test_list_meta_merges_unless_ours_is_newer() -> None:
    rec = apply_agent_info(None, agent=A, session_id=S, now=1.0, updated_at=T1, meta={"a": 1})
    newer = apply_listed(rec, listed(updated_at=T3, meta={"b": 2}), 2.0)
    assert newer.meta == {"a": 1, "b": 2}
    older = apply_listed(rec, listed(updated_at="2025-01-01T00:00:00Z", meta={"b": 2}), 2.0)
    assert older.meta == {"a": 1}


def test_list_for_another_session_is_refused() -> None:
    with pytest.raises(ValueError, match="is not"):
        apply_listed(agent_rec(), ListedSession(session_id="other"), 1.0)


# -- fallback, user, pending ------------------------------------------------


def test_fallback_only_without_title() -> None:
    assert apply_fallback(None, None, agent=A, session_id=S, now=1.0) is None
    rec = agent_rec()
    assert apply_fallback(rec, "Prompt", agent=A, session_id=S, now=2.0) is rec
    cleared = apply_agent_info(rec, agent=A, session_id=S, now=3.0, title=None)
    fb = apply_fallback(cleared, "Prompt", agent=A, session_id=S, now=4.0, cwd="/w")
    assert fb is not None and (fb.title, fb.title_source, fb.cwd) == ("Prompt", TitleSource.FALLBACK, "/w")
    # The agent's first title replaces it at once.
    assert (
        apply_agent_info(fb, agent=A, session_id=S, now=5.0, title="Real").title_source is TitleSource.AGENT
    )


def test_pending_and_clear() -> None:
    rec = set_pending(None, "Wanted", agent=A, session_id=S, now=1.0)
    assert (rec.pending_title, rec.rename_state, rec.title) == ("Wanted", RenameState.PENDING, None)
    entry = rec.to_session_entry(active=True)
    assert entry == {
        "sessionId": S,
        "cwd": None,
        "title": None,
        "titleSource": None,
        "updatedAt": None,
        "pendingTitle": "Wanted",
        "active": True,
    }
    done = clear_pending(rec, RenameState.CONFIRMED, now=2.0)
    assert done.pending_title is None and done.rename_state is RenameState.CONFIRMED
    with pytest.raises(ValueError):
        clear_pending(rec, RenameState.PENDING, now=3.0)


def test_session_info_shape_and_display_meta() -> None:
    rec = apply_agent_info(
        None, agent=A, session_id=S, now=1.0, title="T", updated_at=T1, meta={"k\x1b[1m": "v\x00"}
    )
    assert rec.to_session_info() == {
        "sessionId": S,
        "title": "T",
        "titleSource": "agent",
        "updatedAt": T1,
        "meta": {"k": "v"},
        "renameState": None,
    }
    assert rec.meta == {"k\x1b[1m": "v\x00"}  # stored as data, cleaned only when shown


def test_source_ranks() -> None:
    ranked = sorted(TitleSource, key=lambda s: s.rank, reverse=True)
    assert ranked == [TitleSource.USER, TitleSource.AGENT, TitleSource.LIST, TitleSource.FALLBACK]


# -- properties over random event sequences ---------------------------------

TITLES = ["Alpha", "Beta", "  spaced  ", "\x1b[31mred", "", "x" * 30]
TIMES = [None, T1, T2, T3, "2025-06-01T00:00:00", "not a time"]

agent_events = st.tuples(
    st.just("agent"),
    st.sampled_from([UNSET, None, *TITLES]),
    st.sampled_from([UNSET, *TIMES]),
    st.sampled_from([UNSET, None, {"x": 1}, {"x": None}, {"y": {"z": 2}}]),
)
list_events = st.tuples(st.just("list"), st.sampled_from([None, *TITLES]), st.sampled_from(TIMES))
other_events = st.tuples(st.sampled_from(["fallback", "user", "missing", "pending"]), st.sampled_from(TITLES))
events = st.lists(st.one_of(agent_events, list_events, other_events), min_size=1, max_size=25)


def _strictly_newer(listed_at: str | None, current_at: str | None) -> bool:
    # Unparsable or absent listed time counts as older.
    pl, pc = parse_timestamp(listed_at), parse_timestamp(current_at)
    return pl is not None and (pc is None or pl > pc)


@settings(max_examples=500)
@given(events)
def test_provenance_invariants(seq: list[tuple[Any, ...]]) -> None:
    rec: TitleRecord | None = None
    now = 0.0
    for event in seq:
        now += 1.0
        before = rec
        kind = event[0]
        if kind == "agent":
            _, title, at, meta = event
            rec = apply_agent_info(rec, agent=A, session_id=S, now=now, title=title, updated_at=at, meta=meta)
            if title is UNSET:
                assert rec.title == (before.title if before else None)
            elif before is not None and before.title_source is TitleSource.USER:
                assert (rec.title, rec.title_source) == (before.title, TitleSource.USER)
            elif sanitize_text(title or ""):
                assert (rec.title, rec.title_source) == (sanitize_text(title), TitleSource.AGENT)
            else:
                assert rec.title is None
        elif kind == "list":
            _, title, at = event
            entry = ListedSession(session_id=S, cwd="/w", title=title, updated_at=at)
            rec = apply_listed(rec, entry, now, agent=A)
            assert not rec.missing and rec.cwd == "/w"
            clean = sanitize_text(title or "") or None
            if before is not None and before.title_source is TitleSource.USER:
                assert (rec.title, rec.title_source) == (before.title, TitleSource.USER)
            elif before is not None and before.title_source is TitleSource.AGENT:
                if clean and _strictly_newer(at, before.updated_at):
                    assert (rec.title, rec.title_source) == (clean, TitleSource.LIST)
                else:
                    assert (rec.title, rec.title_source) == (before.title, TitleSource.AGENT)
            elif clean:
                assert (rec.title, rec.title_source) == (clean, TitleSource.LIST)
            elif before is not None:
                assert (rec.title, rec.title_source) == (before.title, before.title_source)
        elif kind == "fallback":
            out = apply_fallback(rec, event[1], agent=A, session_id=S, now=now)
            if before is not None and before.title is not None:
                assert out is before
            rec = out
        elif kind == "user":
            rec = apply_user_title(rec, event[1], agent=A, session_id=S, now=now)
            assert rec.title_source is (TitleSource.USER if rec.title else None)
        elif kind == "missing":
            if rec is not None:
                rec = mark_missing(rec)
                assert rec.missing
                assert before is not None
                assert dataclasses.replace(rec, missing=before.missing) == before
        else:
            rec = set_pending(rec, event[1] or "x", agent=A, session_id=S, now=now)
            assert rec.rename_state is RenameState.PENDING
        if rec is None:
            continue
        # Always: title and source together; titles are clean; change time
        # moves only on a change.
        assert (rec.title is None) == (rec.title_source is None)
        if rec.title is not None:
            assert sanitize_text(rec.title) == rec.title
        if before is not None:
            if rec is before:
                assert rec.changed_at == before.changed_at
            else:
                assert rec.changed_at in (before.changed_at, now)
            assert rec.created_at == before.created_at
