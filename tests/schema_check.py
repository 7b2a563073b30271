"""Validation against the vendored ACP v1 JSON schemas (tests/schema/, see VERSION.txt there).

A type is checked against every schema that defines it: a stable type (``schema.json``) must
also satisfy the unstable schema, and an unstable-only type (``session/set_title``'s
``SetSessionTitleRequest``, say) is checked against ``schema.unstable.json`` alone.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

SCHEMA_DIR = Path(__file__).resolve().parent / "schema"
STABLE = SCHEMA_DIR / "schema.json"
UNSTABLE = SCHEMA_DIR / "schema.unstable.json"


@cache
def _defs(path: Path) -> dict[str, Any]:
    root = json.loads(path.read_text(encoding="utf-8"))
    return {"$schema": root["$schema"], "$defs": root["$defs"]}


@cache
def _validators(type_name: str) -> tuple[tuple[str, jsonschema.Draft202012Validator], ...]:
    found = []
    for path in (STABLE, UNSTABLE):
        root = _defs(path)
        if type_name in root["$defs"]:
            validator = jsonschema.Draft202012Validator(dict(root, **{"$ref": f"#/$defs/{type_name}"}))
            found.append((path.name, validator))
    if not found:
        raise KeyError(f"no {type_name} in the ACP schemas under {SCHEMA_DIR}")
    return tuple(found)


def errors(type_name: str, obj: Any) -> list[str]:
    """Every problem of ``obj`` as a ``type_name``, each naming the schema file and the path."""
    return [
        f"{type_name} ({schema}): {e.message[:300]} at {list(e.absolute_path)}"
        for schema, validator in _validators(type_name)
        for e in validator.iter_errors(obj)
    ]


def assert_valid(type_name: str, obj: Any) -> None:
    problems = errors(type_name, obj)
    assert not problems, f"{type_name} invalid: {problems}\n{json.dumps(obj)[:500]}"
