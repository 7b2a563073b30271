"""initializationOptions (docs/protocol.md): parsed by cattrs; each bad key is named and defaulted."""

from __future__ import annotations

from typing import Any, Literal, NewType

import attrs

from .validation import CommandLine, InvalidValue, StringMap, make_converter, structure_with_defaults

PermissionPolicy = Literal["ask", "allow_reads", "reject"]
RenameFallback = Literal["keep_local", "revert"]
TimeoutMs = NewType("TimeoutMs", int)
TitleLength = NewType("TitleLength", int)
TranscriptBytes = NewType("TranscriptBytes", int)

ROOT = "initializationOptions"


def _expect(text: str) -> dict[str, str]:
    return {"expected": text}


@attrs.frozen
class AgentOptions:
    command: CommandLine | None = attrs.field(
        default=None, metadata=_expect("a non-empty list of strings, or a command line string")
    )
    env: StringMap = attrs.field(
        factory=lambda: StringMap({}), metadata=_expect("an object of string values")
    )


@attrs.frozen
class RenameOptions:
    timeout_ms: TimeoutMs = attrs.field(
        default=TimeoutMs(120_000), alias="timeoutMs", metadata=_expect("an integer from 1 to 86400000 (ms)")
    )
    fallback: RenameFallback = attrs.field(default="keep_local", metadata=_expect("keep_local | revert"))


@attrs.frozen
class TitleOptions:
    max_length: TitleLength = attrs.field(
        default=TitleLength(500), alias="maxLength", metadata=_expect("an integer from 8 to 10000")
    )


@attrs.frozen
class NotifyOptions:
    title_as_show_message: bool = attrs.field(
        default=False, alias="titleAsShowMessage", metadata=_expect("true or false")
    )
    status_diagnostic: bool = attrs.field(
        default=False, alias="statusDiagnostic", metadata=_expect("true or false")
    )
    permission_dialog: bool = attrs.field(
        default=True, alias="permissionDialog", metadata=_expect("true or false")
    )
    elicitation_dialog: bool = attrs.field(
        default=True, alias="elicitationDialog", metadata=_expect("true or false")
    )


@attrs.frozen
class TranscriptOptions:
    # Read and checked here; the transcript documents that use them are issue 12's.
    show_on_prompt: bool = attrs.field(default=True, alias="showOnPrompt", metadata=_expect("true or false"))
    max_bytes: TranscriptBytes = attrs.field(
        default=TranscriptBytes(4 << 20),
        alias="maxBytes",
        metadata=_expect("an integer from 65536 to 268435456"),
    )


@attrs.frozen
class ElicitationOptions:
    timeout_ms: TimeoutMs = attrs.field(
        default=TimeoutMs(600_000), alias="timeoutMs", metadata=_expect("an integer from 1 to 86400000 (ms)")
    )


@attrs.frozen
class Options:
    agent: AgentOptions = attrs.field(factory=AgentOptions, metadata=_expect("an object"))
    permissions: PermissionPolicy = attrs.field(default="ask", metadata=_expect("ask | allow_reads | reject"))
    rename: RenameOptions = attrs.field(factory=RenameOptions, metadata=_expect("an object"))
    titles: TitleOptions = attrs.field(factory=TitleOptions, metadata=_expect("an object"))
    notify: NotifyOptions = attrs.field(factory=NotifyOptions, metadata=_expect("an object"))
    transcript: TranscriptOptions = attrs.field(factory=TranscriptOptions, metadata=_expect("an object"))
    elicitation: ElicitationOptions = attrs.field(factory=ElicitationOptions, metadata=_expect("an object"))


def _int_in(low: int, high: int) -> Any:
    def structure(value: Any, _type: Any) -> int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError("not an integer")
        if not low <= value <= high:
            raise InvalidValue(f"out of range {low}..{high}")
        return value

    return structure


_converter = make_converter(forbid_extra_keys=True)
_converter.register_structure_hook(TimeoutMs, _int_in(1, 86_400_000))
_converter.register_structure_hook(TitleLength, _int_in(8, 10_000))
_converter.register_structure_hook(TranscriptBytes, _int_in(65_536, 268_435_456))


def parse_options(raw: Any) -> tuple[Options, str | None]:
    """The options, and one message naming every bad key (None when all is well)."""
    if raw is None:
        return Options(), None
    if not isinstance(raw, dict):
        got = type(raw).__name__
        return Options(), f"{ROOT} must be an object, got {got}; using the defaults"
    options, problems = structure_with_defaults(_converter, raw, Options)
    if not problems:
        return options, None
    count = len(problems)
    listed = "; ".join(p.describe() for p in problems)
    return options, f"{ROOT}: {count} bad key{'s' if count > 1 else ''}, the default used for each: {listed}"
