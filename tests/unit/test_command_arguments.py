"""Command arguments, in-process: one object or the positional shortcut, strict types, every bad
key in one message, lone surrogates refused by name."""

from __future__ import annotations

from typing import Any

import pytest

from sidecar.lsp import arguments as a
from sidecar.lsp.arguments import BadArguments, parse


def test_one_object_or_nothing() -> None:
    assert parse("acp.session.new", a.SessionNew, None, ()) == a.SessionNew()
    assert parse("acp.session.new", a.SessionNew, None, ({"cwd": "/ws"},)) == a.SessionNew(cwd="/ws")
    # Lua clients encode an empty table as []; some send null.
    assert parse("acp.status", a.NoArguments, None, ([],)) == a.NoArguments()
    assert parse("acp.status", a.NoArguments, None, (None,)) == a.NoArguments()


def test_positional_shortcuts() -> None:
    assert parse("acp.prompt", a.Prompt, "text", ("hello",)).text == "hello"
    # Several quoted strings (Helix: `"Fix" "auth"`, each argument parsed as JSON): joined.
    renamed = parse("acp.session.rename", a.Rename, "title", ("Fix", "auth", "timeout"))
    assert renamed.title == "Fix auth timeout"
    assert parse("acp.session.load", a.SessionLoad, "sessionId", ("s-1",)).session_id == "s-1"


@pytest.mark.parametrize("raw", [("a", 1), (1, 2), ({"text": "x"}, {"text": "y"}), (5,)])
def test_anything_else_is_one_clear_error(raw: tuple[Any, ...]) -> None:
    with pytest.raises(BadArguments) as info:
        parse("acp.prompt", a.Prompt, "text", raw)
    assert str(info.value) == 'acp.prompt takes one argument: {...} or "TEXT"'
    with pytest.raises(BadArguments) as info:
        parse("acp.status", a.NoArguments, None, ("positional",))
    assert str(info.value) == "acp.status takes one argument: {...}"


def test_camel_case_keys_and_unknown_keys_ignored() -> None:
    parsed = parse(
        "acp.session.setConfigOption",
        a.SetConfigOption,
        None,
        ({"configId": "model", "value": {"any": ["json"]}, "sessionId": "s", "extra": 1},),
    )
    assert (parsed.config_id, parsed.value, parsed.session_id) == ("model", {"any": ["json"]}, "s")
    assert parse("acp.session.setConfigOption", a.SetConfigOption, None, ({},)).value is a.MISSING
    respond = parse(
        "acp.permission.respond", a.PermissionRespond, None, ({"requestId": "p", "optionId": "o"},)
    )
    assert (respond.request_id, respond.option_id) == ("p", "o")


def test_every_bad_key_in_one_message() -> None:
    with pytest.raises(BadArguments) as info:
        parse("acp.prompt", a.Prompt, "text", ({"text": 42, "sessionId": "", "uri": ["x"], "cwd": "/ok"},))
    message = str(info.value)
    assert message.startswith("acp.prompt: invalid arguments: ")
    for named in (
        "text (expected a string, got 42)",
        "sessionId (expected a non-empty string, got '')",
        "uri",
    ):
        assert named in message, message
    assert "cwd" not in message


@pytest.mark.parametrize(
    ("name", "cls", "raw", "key"),
    [
        ("acp.session.list", a.SessionList, {"refresh": "yes"}, "refresh (expected true or false"),
        ("acp.session.list", a.SessionList, {"refresh": None}, "refresh"),
        ("acp.session.load", a.SessionLoad, {"sessionId": 7}, "sessionId"),
        ("acp.cancel", a.SessionTarget, {"sessionId": False}, "sessionId"),
        ("acp.edit.apply", a.EditApply, {"sessionId": "s", "toolCallId": 3}, "toolCallId"),
        ("acp.session.setMode", a.SetMode, {"modeId": ["code"]}, "modeId"),
        ("acp.authenticate", a.Authenticate, {"methodId": {}}, "methodId"),
    ],
)
def test_wrong_types_are_named(name: str, cls: type[Any], raw: dict[str, Any], key: str) -> None:
    with pytest.raises(BadArguments) as info:
        parse(name, cls, None, (raw,))
    assert key in str(info.value)


@pytest.mark.parametrize(
    ("raw", "where"),
    [
        ({"sessionId": "bad\udcffid"}, "sessionId"),
        ("text with \ud800 in it", "text"),
        ({"text": "ok", "range": {"start": {"note": "\udfff"}}}, "range.start.note"),
        ({"text": "ok", "list": ["fine", "bad\ud801"]}, "list[1]"),
        ({"bad\udc00key": 1}, "a key of argument"),
    ],
)
def test_lone_surrogates_are_refused_by_name(raw: Any, where: str) -> None:
    with pytest.raises(BadArguments) as info:
        parse("acp.prompt", a.Prompt, "text", (raw,))
    message = str(info.value)
    assert f"acp.prompt: {where} contains a lone surrogate" in message, message
    message.encode("utf-8")  # the message itself is valid text


def test_valid_astral_text_passes() -> None:
    assert parse("acp.prompt", a.Prompt, "text", ("emoji 🎉 and 𝕏",)).text == "emoji 🎉 and 𝕏"
