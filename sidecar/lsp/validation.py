"""Untrusted JSON from the editor into attrs classes, by cattrs: strict types, every problem named.

JSON keys are the attrs field aliases (`timeoutMs`); a field's `metadata["expected"]`
says in words what it takes. Problems come back as data (path, what was
expected, what came), so callers can report all of them in one message, and
`structure_with_defaults` can keep the default of each bad key.
"""

from __future__ import annotations

import copy
import shlex
from collections.abc import Callable, Iterator
from typing import Any, NewType, TypeVar

import attrs
import cattrs
from cattrs.errors import AttributeValidationNote, ClassValidationError, ForbiddenExtraKeysError
from cattrs.gen import make_dict_structure_fn

T = TypeVar("T")
JsonObj = dict[str, Any]

# Constrained types: each has a strict structure hook below (no coercion, ever).
NonEmptyStr = NewType("NonEmptyStr", str)
CommandLine = NewType("CommandLine", list[str])  # argv list, or one string split as a shell would
StringMap = NewType("StringMap", dict[str, str])


@attrs.frozen
class Problem:
    """One bad key: where it is, and why."""

    path: tuple[str, ...]
    expected: str | None  # None: a key nobody knows
    value: Any = None

    @property
    def key(self) -> str:
        return ".".join(self.path)

    def describe(self) -> str:
        if self.expected is None:
            return f"{self.key} (unknown key, ignored)"
        return f"{self.key} (expected {self.expected}, got {_short(self.value)})"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:79] + "…"


class InvalidValue(ValueError):
    """A value of the right JSON type that breaks a rule (a range, a choice)."""


# ---------------------------------------------------------------------------- hooks
def _strict_str(value: Any, _type: Any) -> str:
    if not isinstance(value, str):
        raise TypeError("not a string")
    return value


def _non_empty_str(value: Any, _type: Any) -> str:
    if not isinstance(value, str) or not value:
        raise TypeError("not a non-empty string")
    return value


def _strict_bool(value: Any, _type: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError("not a boolean")
    return value


def _strict_int(value: Any, _type: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError("not an integer")
    return value


def _command_line(value: Any, _type: Any) -> list[str]:
    if isinstance(value, str):
        try:
            argv = shlex.split(value)
        except ValueError as exc:  # unbalanced quotes
            raise InvalidValue(str(exc)) from None
        if not argv:
            raise InvalidValue("empty command line")
        return argv
    if isinstance(value, list) and value and all(isinstance(part, str) and part for part in value):
        return list(value)
    raise TypeError("not a command line")


def _string_map(value: Any, _type: Any) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise TypeError("not an object of strings")
    return dict(value)


def _require_object(
    make: Callable[[type[Any]], Callable[[Any, Any], Any]],
) -> Callable[[type[Any]], Callable[[Any, Any], Any]]:
    """Wrap cattrs' generated class hook: a section that is not a JSON object is one bad key."""

    def factory(cls: type[Any]) -> Callable[[Any, Any], Any]:
        inner = make(cls)

        def structure(value: Any, type_: Any) -> Any:
            if not isinstance(value, dict):
                raise TypeError("not an object")
            return inner(value, type_)

        return structure

    return factory


def make_converter(*, forbid_extra_keys: bool) -> cattrs.Converter:
    converter = cattrs.Converter(
        forbid_extra_keys=forbid_extra_keys, use_alias=True, detailed_validation=True
    )
    converter.register_structure_hook(str, _strict_str)
    converter.register_structure_hook(NonEmptyStr, _non_empty_str)
    converter.register_structure_hook(bool, _strict_bool)
    converter.register_structure_hook(int, _strict_int)
    converter.register_structure_hook(CommandLine, _command_line)
    converter.register_structure_hook(StringMap, _string_map)
    converter.register_structure_hook_factory(
        attrs.has, _require_object(lambda cls: make_dict_structure_fn(cls, converter))
    )
    return converter


# ---------------------------------------------------------------------------- problems
def _alias(cls: type[Any], name: str) -> tuple[str, str | None]:
    for field in attrs.fields(cls):
        if field.name == name:
            return field.alias or name, field.metadata.get("expected")
    return name, None


def problems_of(exc: ClassValidationError, path: tuple[str, ...], raw: Any) -> Iterator[Problem]:
    """Each bad key in a cattrs validation error: unknown keys, and the outermost bad field."""
    cls = exc.cl
    for sub in exc.exceptions:
        if isinstance(sub, ForbiddenExtraKeysError):
            for key in sorted(sub.extra_fields):
                yield Problem((*path, key), None)
            continue
        note = next(
            (n for n in getattr(sub, "__notes__", []) if isinstance(n, AttributeValidationNote)), None
        )
        if note is None:
            yield Problem(path, "an object", raw)
            continue
        key, expected = _alias(cls, note.name)
        value = raw.get(key) if isinstance(raw, dict) else None
        if isinstance(sub, ClassValidationError):
            yield from problems_of(sub, (*path, key), value)
        else:
            yield Problem((*path, key), expected or "another value", value)


def _drop(raw: JsonObj, path: tuple[str, ...]) -> bool:
    """Remove the key at `path` from `raw` (a deep copy); True when something was removed."""
    node: Any = raw
    for key in path[:-1]:
        node = node.get(key) if isinstance(node, dict) else None
    if isinstance(node, dict) and path and path[-1] in node:
        del node[path[-1]]
        return True
    return False


def structure_with_defaults(
    converter: cattrs.Converter, raw: JsonObj, cls: type[T]
) -> tuple[T, list[Problem]]:
    """`cls` from `raw`; every bad key is reported and left at its default."""
    data = copy.deepcopy(raw)
    problems: list[Problem] = []
    for _ in range(64):  # each round drops at least one key; options have far fewer
        try:
            return converter.structure(data, cls), problems
        except ClassValidationError as exc:
            found = list(problems_of(exc, (), data))
        dropped = [_drop(data, p.path) for p in found]
        if not any(dropped):
            break
        problems.extend(found)
    return cls(), problems


def structure_strict(converter: cattrs.Converter, raw: JsonObj, cls: type[T]) -> T:
    """`cls` from `raw`, or `InvalidArguments` naming every bad key."""
    try:
        return converter.structure(raw, cls)
    except ClassValidationError as exc:
        raise InvalidArguments(list(problems_of(exc, (), raw))) from None


class InvalidArguments(Exception):
    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("; ".join(p.describe() for p in problems))
        self.problems = problems


# ---------------------------------------------------------------------------- Unicode
def lone_surrogate_path(value: Any, path: str = "argument", depth: int = 0) -> str | None:
    """Where the first string with a lone surrogate is (JSON allows the escape, UTF-8 does not)."""
    if depth > 64:
        return None
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return path
        return None
    items: Any
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return None
    for key, item in items:
        if isinstance(key, str):
            if lone_surrogate_path(key) is not None:
                return f"a key of {path}"
            sub = key if path == "argument" else f"{path}.{key}"
        else:
            sub = f"{path}[{key}]"
        found = lone_surrogate_path(item, sub, depth + 1)
        if found is not None:
            return found
    return None
