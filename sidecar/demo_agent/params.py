"""Checks of request parameters (each error names the field) and list cursors."""

from __future__ import annotations

import json
import os
import unicodedata
import urllib.parse

from sidecar.acp.errors import INVALID_PARAMS
from sidecar.demo_agent.protocol import JsonObject, RpcError


def require_str(params: JsonObject, name: str) -> str:
    value = params.get(name)
    if not isinstance(value, str):
        raise RpcError(INVALID_PARAMS, f"Invalid params: '{name}' must be a string")
    return value


def optional_str(params: JsonObject, name: str) -> str | None:
    value = params.get(name)
    if value is not None and not isinstance(value, str):
        raise RpcError(INVALID_PARAMS, f"Invalid params: '{name}' must be a string or null")
    return value


def absolute_path(params: JsonObject, name: str, *, must_exist: bool) -> str:
    value = require_str(params, name)
    if not os.path.isabs(value):
        raise RpcError(INVALID_PARAMS, f"Invalid params: '{name}' must be an absolute path: {value!r}")
    if must_exist and not os.path.isdir(value):
        raise RpcError(INVALID_PARAMS, f"Invalid params: '{name}' is not an existing directory: {value!r}")
    return os.path.normpath(value)


def check_mcp_servers(params: JsonObject, *, required: bool) -> None:
    if "mcpServers" not in params and not required:
        return
    if not isinstance(params.get("mcpServers"), list):
        raise RpcError(INVALID_PARAMS, "Invalid params: 'mcpServers' must be an array")


def additional_directories(params: JsonObject) -> list[str] | None:
    value = params.get("additionalDirectories")
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(d, str) and os.path.isabs(d) for d in value):
        raise RpcError(
            INVALID_PARAMS,
            "Invalid params: 'additionalDirectories' must be an array of absolute paths",
        )
    return [os.path.normpath(d) for d in value]


TITLE_MAX_CHARS = 200


def session_title(params: JsonObject) -> str:
    """``title`` as the agent stores it: every run of whitespace or control characters becomes
    one space, then the ends are trimmed; empty or over TITLE_MAX_CHARS is -32602."""
    raw = require_str(params, "title")
    spaced = "".join(" " if unicodedata.category(ch) == "Cc" else ch for ch in raw)
    title = " ".join(spaced.split())
    if not title:
        raise RpcError(INVALID_PARAMS, "Invalid params: 'title' is empty (after collapsing whitespace)")
    if len(title) > TITLE_MAX_CHARS:
        raise RpcError(
            INVALID_PARAMS,
            f"Invalid params: 'title' is {len(title)} characters long, at most {TITLE_MAX_CHARS} are allowed",
        )
    return title


def encode_cursor(offset: int) -> str:
    return urllib.parse.quote(json.dumps({"offset": offset}).encode().hex())


def decode_cursor(cursor: str) -> int:
    invalid = RpcError(INVALID_PARAMS, f"Invalid params: 'cursor' is not a valid cursor: {cursor!r}")
    try:
        offset = json.loads(bytes.fromhex(urllib.parse.unquote(cursor)))["offset"]
    except (ValueError, TypeError, KeyError):
        raise invalid from None
    if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
        raise invalid
    return offset


def same_dir(a: str, b: str) -> bool:
    return os.path.normpath(a) == os.path.normpath(b)
