"""Item keys are on disk (the document's index): a digest never changes for the same parts."""

from __future__ import annotations

import hashlib
import json

from hypothesis import given
from hypothesis import strategies as st

from sidecar.features.conversation.elements import ContextRef, PromptParts, digest


def digest_as_written_before(*parts: object) -> str:
    data = json.dumps(parts, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(data.encode("utf-8", "surrogatepass")).hexdigest()[:24]


parts = st.one_of(
    st.text(),
    st.none(),
    st.integers(),
    st.lists(st.text(), max_size=3),  # a prompt's context URIs: encoded without the JSON walk
    st.lists(st.one_of(st.text(), st.integers()), max_size=3),  # ... unless it holds anything else
)


@given(st.lists(st.text(), max_size=4))
def test_string_parts_digest_as_before(strings: list[str]) -> None:
    assert digest(*strings) == digest_as_written_before(*strings)


@given(st.lists(parts, max_size=4))
def test_any_parts_digest_as_before(values: list[object]) -> None:
    assert digest(*values) == digest_as_written_before(*values)


def test_known_keys_stay_what_documents_hold() -> None:
    assert digest("call-1") == "3faa7b836a9638f943849845"  # as written in documents' indexes so far
    assert digest('quote " and \\ and \n and \x00 and \ud800') == digest_as_written_before(
        'quote " and \\ and \n and \x00 and \ud800'
    )


@given(st.text(), st.lists(st.text(), max_size=3), st.lists(st.text(), max_size=3))
def test_a_user_message_key_is_the_digest_of_its_parts(text: str, uris: list[str], others: list[str]) -> None:
    parts = PromptParts(text, [ContextRef(uri) for uri in uris], others)
    assert parts.key == "u:" + digest_as_written_before(text.strip(), uris, others)
