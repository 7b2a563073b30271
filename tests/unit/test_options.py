"""initializationOptions parsing, in-process: every bad key named once, each one defaulted."""

from __future__ import annotations

from typing import Any

import pytest

from sidecar.lsp.options import Options, parse_options


def test_nothing_given_means_defaults() -> None:
    for raw in (None, {}):
        options, problem = parse_options(raw)
        assert options == Options() and problem is None
    defaults = Options()
    assert defaults.permissions == "ask" and defaults.agent.command is None and defaults.agent.env == {}
    assert (defaults.rename.timeout_ms, defaults.rename.fallback) == (120_000, "keep_local")
    assert defaults.titles.max_length == 500
    assert defaults.transcript.show_on_prompt is True and defaults.transcript.max_bytes == 4 * 2**20
    notify = defaults.notify
    assert (notify.title_as_show_message, notify.status_diagnostic, notify.permission_dialog) == (
        False,
        False,
        True,
    )


def test_every_documented_key_is_read() -> None:
    options, problem = parse_options(
        {
            "agent": {"command": ["codex-acp", "--x"], "env": {"KEY": "VALUE"}},
            "permissions": "allow_reads",
            "rename": {"timeoutMs": 5, "fallback": "revert"},
            "titles": {"maxLength": 8},
            "notify": {"titleAsShowMessage": True, "statusDiagnostic": True, "permissionDialog": False},
            "transcript": {"showOnPrompt": False, "maxBytes": 65_536},
        }
    )
    assert problem is None
    assert options.agent.command == ["codex-acp", "--x"] and options.agent.env == {"KEY": "VALUE"}
    assert options.permissions == "allow_reads"
    assert (options.rename.timeout_ms, options.rename.fallback) == (5, "revert")
    assert options.titles.max_length == 8
    assert options.notify.title_as_show_message and options.notify.status_diagnostic
    assert options.notify.permission_dialog is False
    assert options.transcript.show_on_prompt is False and options.transcript.max_bytes == 65_536


@pytest.mark.parametrize(
    ("command", "argv"),
    [
        ("codex-acp", ["codex-acp"]),
        ('codex-acp --foo "a b"', ["codex-acp", "--foo", "a b"]),
        ("  npx -y @zed-industries/claude-agent-acp  ", ["npx", "-y", "@zed-industries/claude-agent-acp"]),
    ],
)
def test_agent_command_as_a_shell_like_string(command: str, argv: list[str]) -> None:
    options, problem = parse_options({"agent": {"command": command}})
    assert problem is None and options.agent.command == argv


def test_all_bad_keys_in_one_message_and_each_defaulted() -> None:
    raw = {
        "permissions": "sometimes",
        "rename": {"timeoutMs": "soon", "fallback": "revert"},
        "titles": {"maxLength": 40},
        "bogus": 1,
        "notify": {"titleAsShowMessage": True, "statusDiagnostic": 1, "extra": True},
    }
    options, problem = parse_options(raw)
    assert problem is not None and "\n" not in problem
    for named in (
        "permissions",
        "'sometimes'",
        "rename.timeoutMs",
        "bogus",
        "notify.statusDiagnostic",
        "notify.extra",
    ):
        assert named in problem, (named, problem)
    assert "5 bad keys" in problem
    assert "rename.fallback" not in problem and "maxLength" not in problem
    # Bad keys take their default; good keys next to them still apply.
    assert options.permissions == "ask"
    assert options.rename.timeout_ms == 120_000 and options.rename.fallback == "revert"
    assert options.titles.max_length == 40
    assert options.notify.title_as_show_message is True and options.notify.status_diagnostic is False
    assert raw["rename"] == {"timeoutMs": "soon", "fallback": "revert"}, "the input is not changed"


@pytest.mark.parametrize(
    ("raw", "key"),
    [
        ({"agent": 5}, "agent"),
        ({"agent": {"command": []}}, "agent.command"),
        ({"agent": {"command": ["ok", ""]}}, "agent.command"),
        ({"agent": {"command": ""}}, "agent.command"),
        ({"agent": {"command": 'unclosed "quote'}}, "agent.command"),
        ({"agent": {"env": {"A": 1}}}, "agent.env"),
        ({"agent": {"env": ["A=1"]}}, "agent.env"),
        ({"rename": None}, "rename"),
        ({"rename": {"timeoutMs": 0}}, "rename.timeoutMs"),
        ({"rename": {"timeoutMs": 86_400_001}}, "rename.timeoutMs"),
        ({"rename": {"timeoutMs": True}}, "rename.timeoutMs"),
        ({"rename": {"timeoutMs": 1.5}}, "rename.timeoutMs"),
        ({"rename": {"fallback": "forget"}}, "rename.fallback"),
        ({"titles": {"maxLength": 7}}, "titles.maxLength"),
        ({"titles": {"maxLength": 10_001}}, "titles.maxLength"),
        ({"notify": {"permissionDialog": "no"}}, "notify.permissionDialog"),
        ({"permissions": None}, "permissions"),
        ({"transcript": {"showOnPrompt": 0}}, "transcript.showOnPrompt"),
        ({"transcript": {"maxBytes": 65_535}}, "transcript.maxBytes"),
        ({"transcript": {"maxBytes": 268_435_457}}, "transcript.maxBytes"),
    ],
)
def test_one_bad_key_is_named_with_what_it_takes(raw: dict[str, Any], key: str) -> None:
    options, problem = parse_options(raw)
    assert options == Options(), "the default stands"
    assert problem is not None and problem.startswith("initializationOptions: 1 bad key,")
    assert f"{key} (expected " in problem, problem


def test_options_that_are_not_an_object() -> None:
    options, problem = parse_options(["a"])
    assert options == Options()
    assert problem == "initializationOptions must be an object, got list; using the defaults"


def test_a_long_bad_value_is_shortened() -> None:
    _, problem = parse_options({"permissions": "x" * 10_000})
    assert problem is not None and len(problem) < 300
