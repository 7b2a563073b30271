"""initializationOptions (docs/protocol.md): parsed by cattrs; each bad key is named and defaulted."""

from __future__ import annotations

from typing import Any, Literal, NewType

import attrs

from sidecar.lsp.validation import (
    CommandLine,
    InvalidValue,
    NonEmptyStr,
    StringMap,
    make_converter,
    structure_with_defaults,
)

PermissionPolicy = Literal["ask", "allow_reads", "reject"]
RenameFallback = Literal["keep_local", "revert"]
ChangeSeverity = Literal["hint", "information"]
TimeoutMs = NewType("TimeoutMs", int)
TitleLength = NewType("TitleLength", int)
ConversationBytes = NewType("ConversationBytes", int)
IdleSeconds = NewType("IdleSeconds", int)
RawAgents = NewType("RawAgents", dict[str, Any])  # checked entry by entry (`_check_agents`)

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
    replay_updates: bool = attrs.field(default=True, alias="replayUpdates", metadata=_expect("true or false"))


@attrs.frozen
class ConversationOptions:
    # The conversation documents' options, under the key `transcript` (the wire name, kept).
    show_on_prompt: bool = attrs.field(default=True, alias="showOnPrompt", metadata=_expect("true or false"))
    max_bytes: ConversationBytes = attrs.field(
        default=ConversationBytes(4 << 20),
        alias="maxBytes",
        metadata=_expect("an integer from 65536 to 268435456"),
    )


@attrs.frozen
class ElicitationOptions:
    timeout_ms: TimeoutMs = attrs.field(
        default=TimeoutMs(600_000), alias="timeoutMs", metadata=_expect("an integer from 1 to 86400000 (ms)")
    )


@attrs.frozen
class ChangesOptions:
    """The agent's changes after they landed, as diagnostics and code actions."""

    diagnostics: bool = attrs.field(default=True, metadata=_expect("true or false"))
    severity: ChangeSeverity = attrs.field(default="hint", metadata=_expect("hint | information"))
    source: NonEmptyStr = attrs.field(
        default=NonEmptyStr("acp-sidecar"), metadata=_expect("a non-empty string")
    )
    follow: bool = attrs.field(default=False, metadata=_expect("true or false"))


@attrs.frozen
class Options:
    agent: AgentOptions = attrs.field(factory=AgentOptions, metadata=_expect("an object"))
    # Named agents (name -> {command, env}); each bad entry is named and left out, the rest work.
    agents: RawAgents = attrs.field(
        factory=lambda: RawAgents({}), metadata=_expect("an object of agent names to {command, env?} objects")
    )
    default_agent: str | None = attrs.field(
        default=None, alias="defaultAgent", metadata=_expect("the name of a configured agent")
    )
    agent_idle_stop: IdleSeconds = attrs.field(
        default=IdleSeconds(600),
        alias="agentIdleStopSeconds",
        metadata=_expect("an integer from 0 (never) to 604800 (s)"),
    )
    permissions: PermissionPolicy = attrs.field(default="ask", metadata=_expect("ask | allow_reads | reject"))
    rename: RenameOptions = attrs.field(factory=RenameOptions, metadata=_expect("an object"))
    titles: TitleOptions = attrs.field(factory=TitleOptions, metadata=_expect("an object"))
    notify: NotifyOptions = attrs.field(factory=NotifyOptions, metadata=_expect("an object"))
    # Named as its key: `transcript` stays the wire name of the conversation documents' options.
    transcript: ConversationOptions = attrs.field(factory=ConversationOptions, metadata=_expect("an object"))
    elicitation: ElicitationOptions = attrs.field(factory=ElicitationOptions, metadata=_expect("an object"))
    changes: ChangesOptions = attrs.field(factory=ChangesOptions, metadata=_expect("an object"))


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
_converter.register_structure_hook(ConversationBytes, _int_in(65_536, 268_435_456))
_converter.register_structure_hook(IdleSeconds, _int_in(0, 604_800))


def _raw_agents(value: Any, _type: Any) -> RawAgents:
    if not isinstance(value, dict):
        raise TypeError("not an object")
    return RawAgents(value)


_converter.register_structure_hook(RawAgents, _raw_agents)


def parse_options(raw: Any) -> tuple[Options, str | None]:
    """The options, and one message naming every bad key (None when all is well)."""
    if raw is None:
        return Options(), None
    if not isinstance(raw, dict):
        got = type(raw).__name__
        return Options(), f"{ROOT} must be an object, got {got}; using the defaults"
    options, problems = structure_with_defaults(_converter, raw, Options)
    listed = [p.describe() for p in problems]
    options, agent_problems = _check_agents(options)
    listed += agent_problems
    if not listed:
        return options, None
    count = len(listed)
    return (
        options,
        f"{ROOT}: {count} bad key{'s' if count > 1 else ''}, the default used for each: {'; '.join(listed)}",
    )


DEMO_AGENT = "demo"  # the embedded demo agent's name (kernel/options.py says it too)


def _check_agents(options: Options) -> tuple[Options, list[str]]:
    """The named agents that can run; each one that cannot (not an object, no command, a bad
    key, a reserved name) is named and left out. A `defaultAgent` that names none is ignored."""
    problems: list[str] = []
    kept: dict[str, AgentOptions] = {}
    for name, entry in options.agents.items():
        where = f"agents.{name!s:.80}"
        if not name.strip():
            problems.append("agents (an empty agent name, left out)")
            continue
        if name == DEMO_AGENT:
            problems.append(f"{where} (left out: {DEMO_AGENT!r} is the embedded demo agent's name)")
            continue
        if not isinstance(entry, dict):
            problems.append(
                f"{where} (left out: expected an object {{command, env?}}, got {type(entry).__name__})"
            )
            continue
        agent, bad = structure_with_defaults(_converter, entry, AgentOptions)
        problems.extend(f"{where}.{p.describe()}" for p in bad)
        if agent.command is None:
            if not any(p.path[:1] == ("command",) for p in bad):
                problems.append(
                    f"{where}.command (missing: a non-empty list of strings, or a command line string)"
                )
            problems.append(f"{where} (left out: no command to run)")
            continue
        kept[name] = agent
    default = options.default_agent
    if default is not None and default != DEMO_AGENT and default not in kept:
        if default not in options.agents:  # a bad entry of that name is said already
            problems.append(f"defaultAgent (no agent named {default!r:.80} is configured)")
        default = None
    return attrs.evolve(options, agents=RawAgents(kept), defaultAgent=default), problems
