"""Validation against the vendored ACP v1 JSON schema (tests/schema/schema.json)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

SCHEMA = Path(__file__).resolve().parent / "schema" / "schema.json"


@cache
def _validator(type_name: str) -> jsonschema.Draft202012Validator:
    defs = json.loads(SCHEMA.read_text())["$defs"]
    if type_name not in defs:
        raise KeyError(f"no {type_name} in the ACP schema")
    return jsonschema.Draft202012Validator({"$ref": f"#/$defs/{type_name}", "$defs": defs})


def errors(type_name: str, obj: Any) -> list[str]:
    return [f"{e.message[:200]} at {list(e.absolute_path)}" for e in _validator(type_name).iter_errors(obj)]


def assert_valid(type_name: str, obj: Any) -> None:
    problems = errors(type_name, obj)
    assert not problems, f"{type_name} invalid: {problems}\n{json.dumps(obj)[:500]}"
