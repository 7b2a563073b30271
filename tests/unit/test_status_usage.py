"""The Status object's new fields: usage from untrusted `usage_update`s, the context share, the
agent's name and title, modes and models with their ids (config option or legacy models)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from sidecar.kernel.session import Session
from sidecar.kernel.status import AgentView, build_status
from sidecar.kernel.usage import context_share, parse_usage
from tests.unit.fake_agent import Composed, FakeAgents, settle

AGENT = AgentView(state="ready", name="demo-agent", title="Demo Agent", version="1", problem=None)


@pytest.mark.parametrize(
    ("update", "usage"),
    [
        ({"used": 5300, "size": 128000}, {"used": 5300, "size": 128000}),
        (
            {"used": 1, "size": 2, "cost": {"amount": 0.5, "currency": "USD"}},
            {"used": 1, "size": 2, "cost": {"amount": 0.5, "currency": "USD"}},
        ),
        # claude-agent-acp 0.23.1 sends "used": null (the schema says integer): kept as unknown.
        ({"used": None, "size": 200000}, {"used": None, "size": 200000}),
        ({"used": True, "size": -1}, None),
        ({"used": "5", "size": 1.5}, None),
        ({}, None),
        # A cost that is not one is left out; the rest stands.
        ({"used": 1, "size": 2, "cost": {"amount": "1", "currency": "USD"}}, {"used": 1, "size": 2}),
        ({"used": 1, "size": 2, "cost": {"amount": math.nan, "currency": "USD"}}, {"used": 1, "size": 2}),
        ({"used": 1, "size": 2, "cost": {"amount": 1, "currency": "\x1b[31m"}}, {"used": 1, "size": 2}),
        # Out of range is a bad number: 10**400 would overflow the context share's division.
        ({"used": 10**400, "size": 100}, {"used": None, "size": 100}),
        ({"used": 2**53 - 1, "size": 2**53}, {"used": 2**53 - 1, "size": None}),
        ({"used": math.nan, "size": math.inf}, None),
        ({"used": 1, "size": 2, "cost": {"amount": 10**400, "currency": "USD"}}, {"used": 1, "size": 2}),
        ({"used": 1, "size": 2, "cost": {"amount": -math.inf, "currency": "USD"}}, {"used": 1, "size": 2}),
        (
            {"used": 1, "size": 2, "cost": {"amount": 3, "currency": "credits\n"}},
            {"used": 1, "size": 2, "cost": {"amount": 3, "currency": "credits"}},
        ),
    ],
)
def test_parse_usage(update: dict[str, Any], usage: dict[str, Any] | None) -> None:
    assert parse_usage({"sessionUpdate": "usage_update", **update}) == usage


@pytest.mark.parametrize(
    ("usage", "share"),
    [
        ({"used": 5300, "size": 128000}, "4% context"),
        ({"used": 1, "size": 128000}, "<1% context"),
        ({"used": 0, "size": 128000}, "0% context"),
        ({"used": 128000, "size": 128000}, "100% context"),
        ({"used": None, "size": 128000}, None),
        ({"used": 5, "size": 0}, None),
        ({"used": 10**400, "size": 1}, None),
        (None, None),
    ],
)
def test_context_share(usage: dict[str, Any] | None, share: str | None) -> None:
    assert context_share(usage) == share


def test_status_with_config_option_models() -> None:
    session = Session("s1", "/w")
    session.modes = {
        "currentModeId": "code",
        "availableModes": [{"id": "ask", "name": "Ask"}, {"id": "code", "name": "\x1b[1mCode"}, {"id": 3}],
    }
    session.config_options = [
        {
            "id": "model",
            "category": "model",
            "type": "select",
            "currentValue": "b",
            "options": [
                {"group": "g", "name": "G", "options": [{"value": "a", "name": "A"}, {"value": "b"}]}
            ],
        }
    ]
    session.usage = {"used": 5300, "size": 128000}
    status = build_status(AGENT, session, "Fix auth")
    assert status["agent"] == {
        "name": "demo-agent",
        "title": "Demo Agent",
        "version": "1",
        "configured": None,
    }
    assert status["modes"] == [{"id": "ask", "name": "Ask"}, {"id": "code", "name": "Code"}]
    assert (status["modeId"], status["mode"]) == ("code", "Code")
    assert status["models"] == [{"id": "a", "name": "A"}, {"id": "b", "name": "b"}]
    assert (status["modelId"], status["model"]) == ("b", "b")
    assert status["text"] == "Demo Agent · Fix auth · idle · mode Code · b · 4% context"


def test_status_with_legacy_models_and_without_choices() -> None:
    session = Session("s1", "/w")
    session.legacy_models = {
        "currentModelId": "m2",
        "availableModels": [{"modelId": "m1", "name": "One"}, {"modelId": "m2", "name": "Two"}, "junk"],
    }
    status = build_status(AgentView("ready", "agent-x", None, None, None), session, None)
    assert status["models"] == [{"id": "m1", "name": "One"}, {"id": "m2", "name": "Two"}]
    assert (status["modelId"], status["model"]) == ("m2", "Two")
    assert (status["modes"], status["modeId"], status["usage"]) == (None, None, None)
    assert status["text"] == "agent-x · untitled · idle · Two"
    none = build_status(AgentView("starting", "agent-x", None, None, None), None, None)
    assert (none["modes"], none["models"], none["modelId"], none["agent"]["title"]) == (
        None,
        None,
        None,
        None,
    )


async def test_usage_updates_reach_the_status(agents: FakeAgents, engine: Composed, workspace: Path) -> None:
    sid = await engine.registry.new(str(workspace))
    agent = agents.current
    await agent.send_update(sid, {"sessionUpdate": "usage_update", "used": 6400, "size": 128000})
    await settle()
    assert engine.kernel.status()["usage"] == {"used": 6400, "size": 128000}
    assert engine.kernel.status()["text"].endswith("· 5% context")
    # An update with nothing usable changes nothing; "used": null keeps the size, drops the share.
    await agent.send_update(sid, {"sessionUpdate": "usage_update", "used": "x", "size": None})
    assert engine.kernel.status()["usage"] == {"used": 6400, "size": 128000}
    await agent.send_update(sid, {"sessionUpdate": "usage_update", "used": None, "size": 200000})
    assert engine.kernel.status()["usage"] == {"used": None, "size": 200000}
    assert "context" not in engine.kernel.status()["text"]
    assert engine.kernel.status()["agent"] == {
        "name": "fake-agent",
        "title": None,
        "version": "1",
        "configured": "fake-agent",
    }
