"""The session search filters in SQL by the same rule as in Python (`contains_words`)."""

from __future__ import annotations

import itertools
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sidecar.features.titles.api import TitleRecord, TitleSource, TitleStore, contains_words

# Characters whose lower case SQLite's own lower() gets wrong or that change length.
ALPHABET = "abcXYZ ÉéΣσς\u212a" + "İ"  # Kelvin sign, dotted capital I
texts = st.text(alphabet=ALPHABET, max_size=8)


def record(index: int, title: str, cwd: str) -> TitleRecord:
    return TitleRecord(
        agent="agent",
        session_id=f"s{index}",
        cwd=cwd,
        title=title or None,
        title_source=TitleSource.AGENT,
        updated_at=f"2026-12-0{1 + index % 9}T10:00:00Z",
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(texts, texts), min_size=1, max_size=12), texts)
def test_the_store_finds_exactly_what_the_rule_accepts(
    tmp_path: Path, rows: list[tuple[str, str]], query: str
) -> None:
    words = query.lower().split()
    records = [record(i, title, cwd) for i, (title, cwd) in enumerate(rows)]
    path = tmp_path / f"search-{abs(hash((tuple(rows), query)))}.sqlite3"
    with TitleStore(path) as store:
        for rec in records:
            store.put(rec)
        found = store.newest(["agent"], None, lambda it: [r.session_id for r in it], words)
    expected = {r.session_id for r in records if contains_words(r, words)}
    assert set(found) == expected


def test_a_search_answers_the_newest_matching_rows_first(tmp_path: Path) -> None:
    with TitleStore(tmp_path / "t.sqlite3") as store:
        for i in range(500):
            store.put(record(i, f"Fix the parser {i}" if i % 100 == 7 else f"Other work {i}", "/w"))
        found = store.newest(
            ["agent"], None, lambda it: [r.title for r in itertools.islice(it, 3)], ["parser"]
        )
    # Newest first: 107 (Dec 9), 7 (Dec 8), 407 (Dec 3); 207 and 307 are older.
    assert found == ["Fix the parser 107", "Fix the parser 7", "Fix the parser 407"]


def test_the_kelvin_sign_is_a_k_as_python_says() -> None:
    assert contains_words(record(0, "\u212aelvin", "/w"), ["kelvin"])
