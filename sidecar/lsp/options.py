"""initializationOptions: validated key by key; a bad key is reported and defaulted."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

PERMISSION_POLICIES = ("ask", "allow_reads", "reject")
RENAME_FALLBACKS = ("keep_local", "revert")


@dataclass
class Options:
    agent_command: list[str] | None = None
    agent_env: dict[str, str] = field(default_factory=dict)
    permissions: str = "ask"
    rename_timeout_ms: int = 120_000
    rename_fallback: str = "keep_local"
    titles_max_length: int = 500
    title_as_show_message: bool = False
    status_diagnostic: bool = False


def _int_in(value: Any, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def parse_options(raw: Any) -> tuple[Options, list[str]]:
    """Options plus one human message per problem; defaults stand for bad keys."""
    opts = Options()
    problems: list[str] = []
    if raw is None:
        return opts, problems
    if not isinstance(raw, dict):
        return opts, [f"initializationOptions must be an object, got {type(raw).__name__}; using defaults"]

    def bad(key: str, expected: str, value: Any) -> None:
        problems.append(
            f"initializationOptions.{key}: expected {expected}, got {value!r:.80}; using the default"
        )

    for key, value in raw.items():
        if key == "agent":
            _parse_agent(value, opts, bad, problems)
        elif key == "permissions":
            if value in PERMISSION_POLICIES:
                opts.permissions = value
            else:
                bad("permissions", " | ".join(PERMISSION_POLICIES), value)
        elif key == "rename":
            _parse_section(
                "rename",
                value,
                {
                    "timeoutMs": (
                        lambda v: _int_in(v, 1, 86_400_000),
                        "a positive integer (ms)",
                        "rename_timeout_ms",
                    ),
                    "fallback": (
                        lambda v: v in RENAME_FALLBACKS,
                        " | ".join(RENAME_FALLBACKS),
                        "rename_fallback",
                    ),
                },
                opts,
                bad,
                problems,
            )
        elif key == "titles":
            _parse_section(
                "titles",
                value,
                {
                    "maxLength": (
                        lambda v: _int_in(v, 8, 10_000),
                        "an integer from 8 to 10000",
                        "titles_max_length",
                    )
                },
                opts,
                bad,
                problems,
            )
        elif key == "notify":
            _parse_section(
                "notify",
                value,
                {
                    "titleAsShowMessage": (
                        lambda v: isinstance(v, bool),
                        "true or false",
                        "title_as_show_message",
                    ),
                    "statusDiagnostic": (lambda v: isinstance(v, bool), "true or false", "status_diagnostic"),
                },
                opts,
                bad,
                problems,
            )
        else:
            problems.append(f"initializationOptions: unknown key {key!r:.80} ignored")
    return opts, problems


def _parse_section(
    name: str,
    value: Any,
    spec: dict[str, tuple[Any, str, str]],
    opts: Options,
    bad: Any,
    problems: list[str],
) -> None:
    if not isinstance(value, dict):
        bad(name, "an object", value)
        return
    for key, item in value.items():
        if key not in spec:
            problems.append(f"initializationOptions.{name}: unknown key {key!r:.80} ignored")
            continue
        check, expected, attr = spec[key]
        if check(item):
            setattr(opts, attr, item)
        else:
            bad(f"{name}.{key}", expected, item)


def _parse_agent(value: Any, opts: Options, bad: Any, problems: list[str]) -> None:
    if not isinstance(value, dict):
        bad("agent", "an object", value)
        return
    for key, item in value.items():
        if key == "command":
            if isinstance(item, str) and item.strip():
                import shlex

                opts.agent_command = shlex.split(item)
            elif isinstance(item, list) and item and all(isinstance(p, str) and p for p in item):
                opts.agent_command = list(item)
            else:
                bad("agent.command", "a non-empty list of strings", item)
        elif key == "env":
            if isinstance(item, dict) and all(
                isinstance(k, str) and isinstance(v, str) for k, v in item.items()
            ):
                opts.agent_env = dict(item)
            else:
                bad("agent.env", "an object of string values", item)
        else:
            problems.append(f"initializationOptions.agent: unknown key {key!r:.80} ignored")
