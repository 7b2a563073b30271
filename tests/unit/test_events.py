"""The engine's event bus: subscribers in order, one that fails does not stop the others."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sidecar.kernel.bus import EventBus
from tests.unit.fake_agent import Composed, FakeAgents, Recorder, until


@dataclass(frozen=True)
class Ping:
    n: int


@dataclass(frozen=True)
class Other:
    pass


def test_subscribers_get_each_event_in_the_order_they_subscribed() -> None:
    failures: list[tuple[str, BaseException]] = []
    bus = EventBus(lambda name, exc: failures.append((name, exc)))
    seen: list[str] = []

    def broken(event: Ping) -> None:
        raise RuntimeError(f"broken by {event.n}")

    bus.subscribe(Ping, lambda e: seen.append(f"first {e.n}"), broken)
    bus.subscribe(Ping, lambda e: seen.append(f"last {e.n}"))
    bus.subscribe(Other, lambda e: seen.append("other"))
    bus.publish(Ping(1))
    bus.publish(Ping(2))
    bus.publish("nobody listens to a str")
    assert seen == ["first 1", "last 1", "first 2", "last 2"]
    assert [(name.split(" -> ")[0], str(exc)) for name, exc in failures] == [
        ("Ping", "broken by 1"),
        ("Ping", "broken by 2"),
    ]
    assert len(bus.subscribers(Ping)) == 3 and bus.subscribers(str) == []


def chunk(text: str) -> dict[str, Any]:
    return {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}


async def test_a_side_path_that_fails_loses_the_editor_nothing(
    engine: Composed, agents: FakeAgents, recorder: Recorder, workspace: Path
) -> None:
    sid = await engine.registry.new(str(workspace))

    def broken(*_args: object) -> None:
        raise RuntimeError("the document is broken")

    engine.conversations.update = broken  # type: ignore[method-assign]
    await agents.current.send_update(sid, chunk("still shown"))
    await until(lambda: "still shown" in recorder.texts(sid), what="the update in the editor")
    errors = [message for level, message in recorder.of("log") if level == "error"]
    assert any("UpdateRouted" in m and "the document is broken" in m for m in errors), errors
