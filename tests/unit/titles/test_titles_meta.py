"""_meta: recursive merge (JSON Merge Patch), limits, display copies."""

from __future__ import annotations

import copy
import json
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sidecar.features.titles import meta as meta_module
from sidecar.features.titles.api import (
    MetaError,
    MetaTooDeep,
    MetaTooLarge,
    apply_agent_info,
    check_meta,
    merge_meta,
    sanitize_meta_for_display,
)
from sidecar.features.titles.meta import SizedMeta, patch_meta

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.text()
)
keys = st.text(max_size=4)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=20,
)
metas = st.dictionaries(keys, json_values, max_size=6)
maybe_meta = st.none() | metas


def _has_null_in_objects(value: Any) -> bool:
    if isinstance(value, dict):
        return any(v is None or _has_null_in_objects(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_null_in_objects(v) for v in value)
    return False


@settings(max_examples=100)
@given(maybe_meta)
def test_null_patch_clears(current: dict[str, Any] | None) -> None:
    assert merge_meta(current, None) is None


@settings(max_examples=100)
@given(maybe_meta)
def test_empty_patch_is_identity(current: dict[str, Any] | None) -> None:
    assert merge_meta(current, {}) == current


@settings(max_examples=300)
@given(metas, st.data())
def test_null_value_deletes_key(current: dict[str, Any], data: st.DataObject) -> None:
    if not current:
        return
    key = data.draw(st.sampled_from(sorted(current)))
    merged = merge_meta(current, {key: None})
    assert merged is not None and key not in merged
    assert {k: v for k, v in current.items() if k != key} == merged


@settings(max_examples=200)
@given(maybe_meta, metas, metas)
def test_disjoint_patches_commute_and_combine(
    current: dict[str, Any] | None, p: dict[str, Any], q: dict[str, Any]
) -> None:
    q = {k: v for k, v in q.items() if k not in p}
    pq = merge_meta(merge_meta(current, p), q)
    assert pq == merge_meta(merge_meta(current, q), p)
    assert pq == merge_meta(current, {**p, **q})


@settings(max_examples=200)
@given(maybe_meta, metas)
def test_merge_is_idempotent_and_pure(current: dict[str, Any] | None, patch: dict[str, Any]) -> None:
    current_before = copy.deepcopy(current)
    patch_before = copy.deepcopy(patch)
    merged = merge_meta(current, patch)
    assert current == current_before and patch == patch_before
    assert merge_meta(merged, patch) == merged
    # Objects that came from the patch carry no nulls (RFC 7396).
    if current is None and merged is not None:
        assert not any(v is None for v in merged.values())
    # The result shares no containers with the inputs.
    if merged is not None:
        _scribble(merged)
        assert current == current_before and patch == patch_before


def _scribble(value: Any) -> None:
    if isinstance(value, dict):
        for v in list(value.values()):
            _scribble(v)
        value["__scribbled__"] = 1
    elif isinstance(value, list):
        for v in value:
            _scribble(v)
        value.append("__scribbled__")


def test_merge_cases() -> None:
    current = {"a": 1, "nested": {"x": 1, "y": {"deep": True}}, "list": [1, 2]}
    patch = {"a": None, "nested": {"y": {"deep": None, "new": 2}, "z": 3}, "list": [3], "b": "s"}
    assert merge_meta(current, patch) == {
        "nested": {"x": 1, "y": {"new": 2}, "z": 3},
        "list": [3],
        "b": "s",
    }
    # An object replacing a scalar starts empty: its nulls are dropped.
    assert merge_meta({"a": 1}, {"a": {"b": None, "c": 1}}) == {"a": {"c": 1}}
    # A scalar replaces an object.
    assert merge_meta({"a": {"b": 1}}, {"a": 5}) == {"a": 5}
    assert merge_meta(None, {"a": None}) is None
    assert merge_meta({"a": 1}, {"a": None}) == {}


@pytest.mark.parametrize("patch", [[1, 2], "text", 5, True])
def test_malformed_patch_changes_nothing(patch: object) -> None:
    assert merge_meta({"a": 1}, patch) == {"a": 1}
    assert merge_meta(None, patch) is None


# -- limits -----------------------------------------------------------------


def _compact_size(obj: Any) -> int:
    text = json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
    return len(text.encode("utf-8", "surrogatepass"))


@settings(max_examples=300)
@given(metas, st.integers(min_value=0, max_value=300))
def test_size_is_compact_json_length(meta: dict[str, Any], limit: int) -> None:
    size = _compact_size(meta)
    if size > limit:
        with pytest.raises(MetaTooLarge):
            check_meta(meta, max_bytes=limit, max_depth=100)
    else:
        check_meta(meta, max_bytes=limit, max_depth=100)
    check_meta(meta, max_bytes=size, max_depth=100)


def _nested(depth: int) -> dict[str, Any]:
    obj: dict[str, Any] = {"leaf": 1}
    for _ in range(depth - 1):
        obj = {"k": obj}
    return obj


def test_depth_limit() -> None:
    check_meta(_nested(16))
    with pytest.raises(MetaTooDeep, match="deeper than 16"):
        check_meta(_nested(17))
    with pytest.raises(MetaTooDeep):
        check_meta({"a": [[[[1]]]]}, max_depth=4)
    check_meta({"a": [[[1]]]}, max_depth=4)
    # Far deeper than the recursion limit: refused, not a RecursionError.
    with pytest.raises(MetaTooDeep):
        check_meta(_nested(100_000))


def test_huge_meta_refused_quickly() -> None:
    big_string = {"blob": "x" * 10_000_000}
    many_keys = {f"k{i}": i for i in range(1_000_000)}
    long_list = {"items": list(range(2_000_000))}
    for meta in (big_string, many_keys, long_list):
        start = time.perf_counter()
        with pytest.raises(MetaTooLarge, match="65536 bytes"):
            check_meta(meta)
        assert time.perf_counter() - start < 1.0


@pytest.mark.parametrize(
    "bad",
    [{"a": {1, 2}}, {"a": float("nan")}, {"a": float("inf")}, {1: "int key"}, [1, 2], "string", object()],
)
def test_non_json_refused(bad: object) -> None:
    with pytest.raises(MetaError):
        check_meta(bad)


def test_none_is_valid_meta() -> None:
    check_meta(None)
    assert issubclass(MetaTooLarge, ValueError) and issubclass(MetaTooDeep, ValueError)


# -- display ----------------------------------------------------------------


def test_sanitize_meta_for_display() -> None:
    meta = {
        "ok": "plain",
        "evil\x1b[31m": "\x1b]0;pwn\x07text\u202e",
        "nested": {"list": ["a\x00b", 1, None, True], "long": "y" * 2000},
    }
    before = copy.deepcopy(meta)
    shown = sanitize_meta_for_display(meta)
    assert meta == before
    assert shown == {
        "ok": "plain",
        "evil": "text",
        "nested": {"list": ["ab", 1, None, True], "long": "y" * 2000},
    }


def test_display_depth_is_bounded() -> None:
    shown = sanitize_meta_for_display(_nested(50), max_depth=3)
    assert shown == {"k": {"k": {"k": None}}}


def _patch_or_error(current: dict[str, Any] | None, patch: Any, limit: int) -> Any:
    try:
        return patch_meta(current, patch, max_bytes=limit, max_depth=100)
    except MetaError as exc:
        return type(exc)


@settings(max_examples=300)
@given(maybe_meta, metas, metas, st.integers(min_value=0, max_value=400))
def test_patch_meta_is_merge_meta_checked(
    current: dict[str, Any] | None, p: dict[str, Any], q: dict[str, Any], limit: int
) -> None:
    """`patch_meta` (what the title rules use, cheap per patch) gives what `merge_meta` then
    `check_meta` give, and the size it carries is the compact JSON length, patch after patch."""
    state: dict[str, Any] | None = current
    before = copy.deepcopy(current)
    for patch in (p, q, {k: None for k in list(p)[:2]}):
        got = _patch_or_error(state, patch, limit)
        try:
            check_meta(patch, max_bytes=limit, max_depth=100)
            want: Any = merge_meta(state, patch)
            check_meta(want, max_bytes=limit, max_depth=100)
        except MetaError as exc:
            want = type(exc)
        assert got == want
        if isinstance(got, dict):
            assert isinstance(got, SizedMeta) and got.json_bytes == _compact_size(got)
            assert copy.deepcopy(got).json_bytes == got.json_bytes
            state = got
        elif got is None:
            state = None
    assert current == before, "the stored object is never changed"


def _walks(patches: int, monkeypatch: pytest.MonkeyPatch) -> int:
    """How many values the size check visits for `patches` small patches of one session."""
    visits = 0
    real_walk = meta_module._walk

    def counting(*args: Any) -> None:
        nonlocal visits
        visits += 1
        real_walk(*args)

    with monkeypatch.context() as patched:
        patched.setattr(meta_module, "_walk", counting)
        record = None
        for i in range(patches):
            record = apply_agent_info(
                record, agent="a", session_id="s", now=1.0, meta={f"key-{i:05d}": f"value {i}"}
            )
    assert record is not None and record.meta is not None and len(record.meta) == patches
    return visits


def test_many_small_patches_cost_what_they_touch(monkeypatch: pytest.MonkeyPatch) -> None:
    """2 000 small `_meta` patches blocked the event loop for seconds: each one measured the
    whole stored object again (quadratic). Now a patch costs what it touches."""
    small, large = _walks(500, monkeypatch), _walks(1000, monkeypatch)
    assert large <= 10 * 1000, f"{large} values visited for 1000 one-key patches"
    assert large / small < 2.5, (small, large)
