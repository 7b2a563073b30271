"""The arguments of each `workspace/executeCommand` command, parsed by cattrs.

Every command takes one JSON object; commands with a shortcut also take plain
values (Helix: `:lsp-workspace-command acp.session.rename "Fix auth"`). Unknown
keys are ignored; every bad key is named in one error; a string that is not
valid Unicode (a lone surrogate, which JSON can escape) is refused by name.
The engine checks what only it can (sessions, modes, titles).
"""

from __future__ import annotations

from typing import Any, NewType, TypeVar

import attrs

from sidecar.lsp.validation import (
    InvalidArguments,
    InvalidValue,
    NonEmptyStr,
    lone_surrogate_path,
    make_converter,
    structure_strict,
)

T = TypeVar("T")
JsonObj = dict[str, Any]
# acp.session.list: the newest this many by default (a picker; older ones are found by
# workspace/symbol), at most MAX_LIST_LIMIT.
ListLimit = NewType("ListLimit", int)
DEFAULT_LIST_LIMIT = 1_000
MAX_LIST_LIMIT = 100_000
NON_EMPTY = {"expected": "a non-empty string"}
STRING = {"expected": "a string"}
TRUE_OR_FALSE = {"expected": "true or false"}


class BadArguments(Exception):
    """The arguments do not fit the command: the message says why (JSON-RPC -32602)."""


@attrs.frozen
class NoArguments:
    pass


@attrs.frozen
class SessionNew:
    cwd: NonEmptyStr | None = attrs.field(default=None, metadata=NON_EMPTY)
    uri: NonEmptyStr | None = attrs.field(default=None, metadata=NON_EMPTY)
    agent: NonEmptyStr | None = attrs.field(default=None, metadata=NON_EMPTY)


@attrs.frozen
class SessionList:
    cwd: NonEmptyStr | None = attrs.field(default=None, metadata=NON_EMPTY)
    refresh: bool = attrs.field(default=False, metadata={"expected": "true or false"})
    limit: ListLimit = attrs.field(
        default=ListLimit(DEFAULT_LIST_LIMIT), metadata={"expected": f"an integer from 1 to {MAX_LIST_LIMIT}"}
    )


@attrs.frozen
class SessionLoad:
    session_id: NonEmptyStr | None = attrs.field(default=None, alias="sessionId", metadata=NON_EMPTY)
    cwd: NonEmptyStr | None = attrs.field(default=None, metadata=NON_EMPTY)
    uri: NonEmptyStr | None = attrs.field(default=None, metadata=NON_EMPTY)
    show: bool = attrs.field(default=False, metadata=TRUE_OR_FALSE)
    agent: NonEmptyStr | None = attrs.field(default=None, metadata=NON_EMPTY)


@attrs.frozen
class SessionDocument:
    session_id: NonEmptyStr | None = attrs.field(default=None, alias="sessionId", metadata=NON_EMPTY)
    show: bool = attrs.field(default=False, metadata=TRUE_OR_FALSE)


@attrs.frozen
class Prompt:
    text: str | None = attrs.field(default=None, metadata=STRING)
    session_id: NonEmptyStr | None = attrs.field(default=None, alias="sessionId", metadata=NON_EMPTY)
    cwd: NonEmptyStr | None = attrs.field(default=None, metadata=NON_EMPTY)
    uri: NonEmptyStr | None = attrs.field(default=None, metadata=NON_EMPTY)
    range: Any = None  # an LSP Range, structured by the lsprotocol converter


@attrs.frozen
class TerminalKill:
    """`acp.terminal.kill`: one client terminal by id, or every running one of a session."""

    terminal_id: NonEmptyStr | None = attrs.field(default=None, alias="terminalId", metadata=NON_EMPTY)
    session_id: NonEmptyStr | None = attrs.field(default=None, alias="sessionId", metadata=NON_EMPTY)


@attrs.frozen
class SessionTarget:
    """Commands that act on a session: `acp.cancel`."""

    session_id: NonEmptyStr | None = attrs.field(default=None, alias="sessionId", metadata=NON_EMPTY)


@attrs.frozen
class Rename:
    title: str | None = attrs.field(default=None, metadata=STRING)
    session_id: NonEmptyStr | None = attrs.field(default=None, alias="sessionId", metadata=NON_EMPTY)


@attrs.frozen
class SetMode:
    mode_id: str | None = attrs.field(default=None, alias="modeId", metadata=STRING)
    session_id: NonEmptyStr | None = attrs.field(default=None, alias="sessionId", metadata=NON_EMPTY)


@attrs.frozen
class SetModel:
    model_id: str | None = attrs.field(default=None, alias="modelId", metadata=STRING)
    session_id: NonEmptyStr | None = attrs.field(default=None, alias="sessionId", metadata=NON_EMPTY)


MISSING: Any = object()


@attrs.frozen
class SetConfigOption:
    config_id: str | None = attrs.field(default=None, alias="configId", metadata=STRING)
    value: Any = MISSING  # any JSON value: the agent's option decides
    session_id: NonEmptyStr | None = attrs.field(default=None, alias="sessionId", metadata=NON_EMPTY)


@attrs.frozen
class EditApply:
    session_id: NonEmptyStr | None = attrs.field(default=None, alias="sessionId", metadata=NON_EMPTY)
    tool_call_id: NonEmptyStr | None = attrs.field(default=None, alias="toolCallId", metadata=NON_EMPTY)


@attrs.frozen
class PermissionRespond:
    request_id: str | None = attrs.field(default=None, alias="requestId", metadata=STRING)
    option_id: NonEmptyStr | None = attrs.field(default=None, alias="optionId", metadata=NON_EMPTY)
    edits: Any = None  # [{path, text}]: checked by the engine (paths against the session's roots)


@attrs.frozen
class ElicitationRespond:
    elicitation_id: str | None = attrs.field(default=None, alias="elicitationId", metadata=STRING)
    action: NonEmptyStr | None = attrs.field(default=None, metadata=NON_EMPTY)
    content: Any = None  # {field: value}: checked against the form by the engine


@attrs.frozen
class ElicitationAnswer:
    """`acp.elicitation.answer`: a form question answered with its block in a conversation document."""

    uri: NonEmptyStr | None = attrs.field(default=None, metadata=NON_EMPTY)
    elicitation_id: str | None = attrs.field(default=None, alias="elicitationId", metadata=STRING)


@attrs.frozen
class Authenticate:
    method_id: str | None = attrs.field(default=None, alias="methodId", metadata=STRING)
    agent: NonEmptyStr | None = attrs.field(default=None, metadata=NON_EMPTY)


@attrs.frozen
class SessionDelete:
    session_id: str | None = attrs.field(default=None, alias="sessionId", metadata=STRING)


@attrs.frozen
class SessionFork:
    session_id: str | None = attrs.field(default=None, alias="sessionId", metadata=STRING)
    show: bool = attrs.field(default=False, metadata=TRUE_OR_FALSE)


@attrs.frozen
class Logout:
    agent: NonEmptyStr | None = attrs.field(default=None, metadata=NON_EMPTY)


@attrs.frozen
class Changes:
    """`acp.changes.*`: one hunk by id, or every hunk of a file (`uri`), of a session, or all."""

    hunk_id: NonEmptyStr | None = attrs.field(default=None, alias="hunkId", metadata=NON_EMPTY)
    uri: NonEmptyStr | None = attrs.field(default=None, metadata=NON_EMPTY)
    session_id: NonEmptyStr | None = attrs.field(default=None, alias="sessionId", metadata=NON_EMPTY)


_converter = make_converter(forbid_extra_keys=False)


def _list_limit(value: Any, _type: Any) -> ListLimit:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError("not an integer")
    if not 1 <= value <= MAX_LIST_LIMIT:
        raise InvalidValue(f"out of range 1..{MAX_LIST_LIMIT}")
    return ListLimit(value)


_converter.register_structure_hook(ListLimit, _list_limit)


def one_object(name: str, shortcut: str | None, raw: tuple[Any, ...]) -> JsonObj:
    """One JSON object argument, or the positional shortcut for editors that pass plain values."""
    if not raw:
        return {}
    if len(raw) == 1 and isinstance(raw[0], dict):
        return dict(raw[0])
    if len(raw) == 1 and (raw[0] is None or raw[0] == []):
        return {}  # Lua clients encode an empty table as [].
    if shortcut is not None and len(raw) == 1 and isinstance(raw[0], str):
        return {shortcut: raw[0]}
    if shortcut is not None and len(raw) > 1 and all(isinstance(a, str) for a in raw):
        # Several strings: Helix (25.07) parses each `:lsp-workspace-command` argument as JSON, so
        # `"Fix" "auth"` arrives as two (an unquoted word it refuses itself): one value, joined.
        return {shortcut: " ".join(raw)}
    form = f'{{...}} or "{shortcut.upper()}"' if shortcut else "{...}"
    raise BadArguments(f"{name} takes one argument: {form}")


def parse(name: str, cls: type[T], shortcut: str | None, raw: tuple[Any, ...]) -> T:
    args = one_object(name, shortcut, raw)
    where = lone_surrogate_path(args)
    if where is not None:
        raise BadArguments(
            f"{name}: {where} contains a lone surrogate (half of a UTF-16 pair, e.g. \\udcff), "
            "which is not valid Unicode text"
        )
    try:
        return structure_strict(_converter, args, cls)
    except InvalidArguments as exc:
        raise BadArguments(f"{name}: invalid arguments: {exc}") from None
