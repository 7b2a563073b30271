"""The elicitation form rules (features/questions/forms.py): what schema can be asked, how answers
are checked and converted. In process; the path through the sidecar is tests/lsp/test_elicitation.py."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sidecar.features.questions.forms import FormError, check_url, parse_form


def form(props: dict[str, Any], required: list[str] | None = None) -> Any:
    return parse_form({"type": "object", "properties": props, "required": required or []})


@pytest.mark.parametrize(
    ("schema", "why"),
    [
        (None, "must be an object"),
        ({"type": "array", "properties": {"a": {"type": "string"}}}, "type must be 'object'"),
        ({"properties": {}}, "non-empty object"),
        ({"properties": {"a": {"type": "string"}}, "required": ["b"]}, "'b', which is not a field"),
        ({"properties": {"a": {"type": "object"}}}, "type 'object' is not one of"),
        ({"properties": {"a": {"type": "string", "format": "phone"}}}, "unknown format 'phone'"),
        ({"properties": {"a": {"type": "string", "pattern": "("}}}, "pattern does not compile"),
        ({"properties": {"a": {"type": "string", "enum": []}}}, "enum must be a non-empty list"),
        ({"properties": {"a": {"type": "string", "enum": ["x", "x"]}}}, "listed twice"),
        ({"properties": {"a": {"type": "integer", "minimum": 1.5}}}, "minimum must be an integer"),
        (
            {"properties": {"a": {"type": "number", "minimum": 5, "maximum": 1}}},
            "minimum is above its maximum",
        ),
        ({"properties": {"a": {"type": "array"}}}, "needs items"),
        ({"properties": {"a": {"type": "integer", "default": "x"}}}, "its default does not fit"),
        (
            {"properties": {"a": {"type": "string", "minLength": -1}}},
            "minLength must be a non-negative integer",
        ),
        ({"properties": {f"f{i}": {"type": "boolean"} for i in range(51)}}, "at most 50"),
    ],
)
def test_schemas_that_cannot_be_asked(schema: Any, why: str) -> None:
    with pytest.raises(FormError) as caught:
        parse_form(schema)
    assert why in str(caught.value)


def test_answers_converted_and_bounded() -> None:
    f = form(
        {
            "n": {"type": "integer", "minimum": 0, "maximum": 5},
            "x": {"type": "number"},
            "b": {"type": "boolean"},
            "s": {"type": "string", "minLength": 2, "maxLength": 4, "pattern": "^[a-z]+$"},
            "d": {"type": "string", "format": "date"},
            "u": {"type": "string", "format": "uri"},
            "m": {
                "type": "array",
                "items": {"anyOf": [{"const": "a", "title": "Aye"}, {"const": "b", "title": "Bee"}]},
                "maxItems": 1,
            },
        },
        ["n"],
    )
    assert f.answer(
        {"n": "3", "x": "2.5", "b": "No", "s": "abc", "d": "2026-12-03", "u": "https://x.org", "m": "Bee"}
    ) == {
        "n": 3,
        "x": 2.5,
        "b": False,
        "s": "abc",
        "d": "2026-12-03",
        "u": "https://x.org",
        "m": ["b"],
    }
    assert f.answer({"n": 0, "s": ""}) == {"n": 0}, "an empty optional answer is left out"
    for content, why in [
        ({"n": "6"}, "at most 5"),
        ({"n": "2.5"}, "a whole number"),
        ({"n": True}, "a number"),
        ({"n": 1, "x": "nan"}, "out of range"),
        ({"n": 1, "b": "maybe"}, "yes or no"),
        ({"n": 1, "s": "a"}, "at least 2 characters"),
        ({"n": 1, "s": "ABC"}, "does not match"),
        ({"n": 1, "d": "03/12/2026"}, "not a valid date"),
        ({"n": 1, "m": ["a", "b"]}, "choose at most 1"),
        ({}, "an answer is required"),
        ([], "content must be an object"),
    ]:
        with pytest.raises(FormError) as caught:
            f.answer(content)
        assert why in str(caught.value), (content, str(caught.value))


@pytest.mark.parametrize(
    "url", ["javascript:alert(1)", "file:///etc/passwd", "https://", "http://a b", "", 3, "x" * 9000]
)
def test_only_http_urls_are_offered(url: Any) -> None:
    with pytest.raises(FormError):
        check_url(url)


def test_http_urls_pass() -> None:
    assert check_url("https://example.com/a?b=c") == "https://example.com/a?b=c"


@given(
    st.dictionaries(
        st.text(max_size=5),
        st.one_of(st.none(), st.integers(), st.text(), st.booleans(), st.lists(st.text())),
        max_size=4,
    )
)
def test_any_answer_is_accepted_or_refused_with_a_message(content: dict[str, Any]) -> None:
    f = form({"a": {"type": "integer"}, "b": {"type": "string", "enum": ["x"]}, "c": {"type": "boolean"}})
    try:
        out = f.answer(content)
    except FormError as exc:
        assert str(exc)
    else:
        assert set(out) <= {"a", "b", "c"}


def test_a_catastrophic_pattern_gives_up_in_its_time_with_a_clear_error() -> None:
    import time

    from sidecar.features.questions import forms

    form = parse_form({"properties": {"s": {"type": "string", "pattern": "^(a|a)+$"}}})
    began = time.monotonic()
    with pytest.raises(FormError, match="takes too long to check"):
        form.answer({"s": "a" * 40 + "!"})
    assert time.monotonic() - began < forms.MATCH_TIMEOUT + 2
    assert form.answer({"s": "aaa"}) == {"s": "aaa"}
    hostile = {"type": "string", "pattern": "^(a|a)+$", "default": "a" * 40 + "!"}
    with pytest.raises(FormError, match=r"its default does not fit.*takes too long"):
        parse_form({"properties": {"s": hostile}})
