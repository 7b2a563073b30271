"""Session ``_meta``: recursive merge, size limits and display copies.

``session_info_update._meta`` is a patch (DESIGN.md, "Protocol facts"): a
``null`` value deletes its key, ``_meta: null`` clears everything, objects
merge recursively, anything else replaces. This is JSON Merge Patch
(RFC 7396) applied to the stored object.

An agent may send thousands of small patches; ``patch_meta`` (what the title rules
use) costs what the patch touches, not the whole stored object: the size of the
result is the stored size plus the change (the size rides on the result), and
untouched values are shared, not copied.
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any

from sidecar.features.titles.sanitize import sanitize_text

__all__ = [
    "DEFAULT_MAX_META_BYTES",
    "DEFAULT_MAX_META_DEPTH",
    "MetaError",
    "MetaTooDeep",
    "MetaTooLarge",
    "check_meta",
    "merge_meta",
    "patch_meta",
    "sanitize_meta_for_display",
]

DEFAULT_MAX_META_BYTES = 64 * 1024
DEFAULT_MAX_META_DEPTH = 16

Meta = dict[str, Any]


class MetaError(ValueError):
    """``_meta`` that cannot be stored."""


class MetaTooLarge(MetaError):
    """``_meta`` whose JSON encoding exceeds the size limit."""


class MetaTooDeep(MetaError):
    """``_meta`` nested deeper than the depth limit."""


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def _merge(target: Meta, patch: Meta) -> Meta:
    out = {k: _copy(v) for k, v in target.items()}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict):
            # RFC 7396: an object patch applied to a non-object starts from
            # {}, so nulls inside it never get stored.
            base = out.get(key)
            out[key] = _merge(base if isinstance(base, dict) else {}, value)
        else:
            out[key] = _copy(value)
    return out


def merge_meta(current: Meta | None, patch: object) -> Meta | None:
    """Apply ``patch`` to ``current`` and return a new object.

    ``patch`` None clears (returns None); a patch that is not an object is
    malformed and, like any malformed ACP field, changes nothing. Inputs are
    never mutated and the result shares no containers with them.
    """
    if patch is None:
        return None
    if not isinstance(patch, dict) or not patch:
        return _copy(current) if current is not None else None
    merged = _merge(current or {}, patch)
    if not merged and current is None:
        return None
    return merged


class SizedMeta(dict[str, Any]):
    """A `_meta` object with the length of its compact JSON encoding, as `patch_meta` made it.
    Never changed in place (it is a stored record's): its size stays true."""

    __slots__ = ("json_bytes",)

    def __init__(self, items: Meta, json_bytes: int) -> None:
        super().__init__(items)
        self.json_bytes = json_bytes

    def __reduce__(self) -> tuple[Any, ...]:  # copy and pickle keep the size
        return (SizedMeta, (dict(self), self.json_bytes))


_MISSING = object()


def _size(value: Any, max_bytes: int, max_depth: int, depth: int = 1) -> int:
    """The compact JSON length of `value` at nesting `depth`, checked like `check_meta`."""
    budget = _Budget(max_bytes)
    _walk(value, depth, max_depth, budget)
    return budget.used


def _object_size(count: int, entries: int) -> int:
    return 2 + max(count - 1, 0) + entries  # braces, commas, the entries ("key":value)


def patch_meta(
    current: Meta | None,
    patch: object,
    max_bytes: int = DEFAULT_MAX_META_BYTES,
    max_depth: int = DEFAULT_MAX_META_DEPTH,
) -> Meta | None:
    """`merge_meta` checked like `check_meta` (raising `MetaError` when the patch or the
    result cannot be stored), at the cost of what the patch touches: the entries it replaces
    are measured, the rest is known from `current`'s size (a `SizedMeta`; any other object is
    measured once) and shared with it, not copied. `current` is never changed."""
    if patch is None:
        return None
    check_meta(patch, max_bytes, max_depth)
    assert isinstance(patch, dict)  # check_meta refuses anything else
    if not isinstance(current, SizedMeta):
        # Not measured yet (read from the cache, or the first patch): merged and measured whole,
        # once; the result carries its size for the next patch.
        merged = merge_meta(current, patch)
        return None if merged is None else SizedMeta(merged, _size(merged, max_bytes, max_depth))
    base: Meta = current
    entries = current.json_bytes - _object_size(len(base), 0)
    out = dict(base)
    for key, value in patch.items():
        key_bytes = _string_size(key, _Budget(max_bytes)) + 1  # the key and its colon
        old = out.get(key, _MISSING)
        if old is not _MISSING:
            entries -= key_bytes + _size(old, max_bytes, max_depth, 2)
        if value is None:
            out.pop(key, None)
            continue
        if isinstance(value, dict):
            out[key] = _merge(old if isinstance(old, dict) else {}, value)
        else:
            out[key] = _copy(value)
        entries += key_bytes + _size(out[key], max_bytes, max_depth, 2)
    size = _object_size(len(out), entries)
    if size > max_bytes:
        raise MetaTooLarge(f"_meta is larger than {max_bytes} bytes of JSON; it was not stored")
    return SizedMeta(out, size)


class _Budget:
    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.used = 0

    def add(self, n: int) -> None:
        self.used += n
        if self.used > self.max_bytes:
            raise MetaTooLarge(f"_meta is larger than {self.max_bytes} bytes of JSON; it was not stored")


def _string_size(s: str, budget: _Budget) -> int:
    # Every character costs at least one byte: a huge string is refused
    # without encoding it.
    if len(s) > budget.max_bytes:
        budget.add(len(s) + 2)
    # surrogatepass: lone surrogates from JSON must be measured, not crash.
    return len(json.dumps(s, ensure_ascii=False).encode("utf-8", "surrogatepass"))


def _walk(value: Any, depth: int, max_depth: int, budget: _Budget) -> None:
    if isinstance(value, dict | list):
        if depth > max_depth:
            raise MetaTooDeep(f"_meta is nested deeper than {max_depth} levels; it was not stored")
        budget.add(2 + max(len(value) - 1, 0))  # brackets and commas
        if isinstance(value, dict):
            for key, item in value.items():
                if not isinstance(key, str):
                    raise MetaError(f"_meta keys must be strings, not {type(key).__name__}")
                budget.add(_string_size(key, budget) + 1)  # the colon
                _walk(item, depth + 1, max_depth, budget)
        else:
            for item in value:
                _walk(item, depth + 1, max_depth, budget)
    elif isinstance(value, str):
        budget.add(_string_size(value, budget))
    elif value is None or isinstance(value, bool):
        budget.add(4 if value in (None, True) else 5)
    elif isinstance(value, int):
        budget.add(len(str(value)))
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise MetaError("_meta numbers must be finite (no NaN or Infinity)")
        budget.add(len(json.dumps(value)))
    else:
        raise MetaError(f"_meta may hold only JSON values, not {type(value).__name__}")


def check_meta(
    obj: object,
    max_bytes: int = DEFAULT_MAX_META_BYTES,
    max_depth: int = DEFAULT_MAX_META_DEPTH,
) -> None:
    """Raise :class:`MetaError` unless ``obj`` is storable ``_meta``.

    Size is the UTF-8 length of the compact JSON encoding; the walk stops as
    soon as the limit is passed, so a 10 MB object is refused quickly.
    Depth counts containers: ``{"a": {"b": 1}}`` has depth 2.
    """
    if obj is None:
        return
    if not isinstance(obj, dict):
        raise MetaError(f"_meta must be an object or null, not {type(obj).__name__}")
    _walk(obj, 1, max_depth, _Budget(max_bytes))


def sanitize_meta_for_display(obj: Any, max_depth: int = DEFAULT_MAX_META_DEPTH) -> Any:
    """A copy of ``obj`` with every key and string value made safe to show.

    Strings are sanitized but not shortened (check_meta bounds the total).
    Keys that become equal after sanitizing collapse to the last one; values
    nested deeper than ``max_depth`` become None.
    """
    return _display(obj, 1, max_depth)


def _display(value: Any, depth: int, max_depth: int) -> Any:
    if isinstance(value, str):
        return sanitize_text(value, sys.maxsize)
    if isinstance(value, dict | list):
        if depth > max_depth:
            return None
        if isinstance(value, dict):
            return {
                sanitize_text(str(k), sys.maxsize): _display(v, depth + 1, max_depth)
                for k, v in value.items()
            }
        return [_display(v, depth + 1, max_depth) for v in value]
    return value
