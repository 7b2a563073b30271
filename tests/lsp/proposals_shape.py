"""The shape of `proposals` (docs/protocol.md, Agent diffs), checked on every one a test sees."""

from __future__ import annotations

from typing import Any

import jsonschema

PROPOSAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["path", "uri", "version", "fit", "text", "reason"],
    "additionalProperties": False,
    "properties": {
        "path": {"type": "string"},
        "uri": {"type": ["string", "null"], "pattern": "^file://"},
        "version": {"type": ["integer", "null"]},
        "fit": {"enum": ["applies", "applied", "conflict", "unavailable"]},
        "text": {"type": ["string", "null"]},
        "reason": {"type": ["string", "null"]},
    },
    "allOf": [
        # No text on a conflict or for a file that could not be read, and then a reason why.
        {
            "if": {"properties": {"fit": {"enum": ["conflict", "unavailable"]}}},
            "then": {"properties": {"text": {"type": "null"}, "reason": {"type": "string"}}},
        },
        # A text left out (past the size bound) says why.
        {
            "if": {"properties": {"text": {"type": "null"}}},
            "then": {"properties": {"reason": {"type": "string"}}},
        },
    ],
}

PROPOSALS_SCHEMA: dict[str, Any] = {"type": "array", "items": PROPOSAL_SCHEMA}


def check_proposals(proposals: object) -> list[dict[str, Any]]:
    """`proposals` as the protocol promises them (raises with the first difference)."""
    jsonschema.validate(proposals, PROPOSALS_SCHEMA)
    assert isinstance(proposals, list)
    return proposals
