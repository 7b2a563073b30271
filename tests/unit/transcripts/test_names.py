"""File names from untrusted ids: safe, readable, one to one; and back from a path or URI."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sidecar.features.conversation.names import MAX_NAME, ConversationPaths, safe_name
from sidecar.features.conversation.store import ConversationStore


def test_plain_ids_stay_readable() -> None:
    assert safe_name("sess-1") == "sess-1"
    assert safe_name("acp-sidecar-demo") == "acp-sidecar-demo"
    assert safe_name("0199a2b3-uuid.v7_x") == "0199a2b3-uuid.v7_x"


@pytest.mark.parametrize("raw", ["..", ".", "../../etc/passwd", "a/b", ".hidden", "", "x" * 500, "a\x00b"])
def test_unsafe_ids_become_safe_names_with_a_hash(raw: str) -> None:
    name = safe_name(raw)
    assert name and "/" not in name and not name.startswith(".")
    assert len(name) <= MAX_NAME + 13
    assert name != raw


@given(st.text(), st.text())
def test_different_ids_never_share_a_name(a: str, b: str) -> None:
    if a != b:
        assert safe_name(a) != safe_name(b)


def test_a_name_that_looks_hashed_gets_its_own_hash() -> None:
    tricky = safe_name("a/b")
    assert safe_name(tricky) != tricky


def test_paths_stay_under_the_root(tmp_path: Path) -> None:
    paths = ConversationPaths(tmp_path / "transcripts")
    for agent, session in [("..", ".."), ("/abs", "../../x"), ("a", "b/../../c")]:
        path = paths.document(agent, session)
        assert path.parent.parent == tmp_path / "transcripts"


def test_identify_finds_our_documents_only(tmp_path: Path) -> None:
    store = ConversationStore(tmp_path)
    store.ensure("agent one", "sess/../1", "T")
    path = store.path("agent one", "sess/../1")
    assert store.identify(path) == ("agent one", "sess/../1")
    assert store.identify(path.as_uri()) == ("agent one", "sess/../1")
    assert store.identify(str(path)) == ("agent one", "sess/../1")
    # A copy elsewhere, or a document whose header claims another session, is not ours.
    copy = tmp_path / "copy.md"
    copy.write_bytes(path.read_bytes())
    assert store.identify(copy) is None
    other = store.path("agent one", "other")
    other.write_bytes(path.read_bytes())
    assert store.identify(other) is None
    assert store.identify("https://example.com/x.md") is None
    assert store.identify(tmp_path / "missing.md") is None
