"""docs/architecture.md's table "Who reacts to what" is the bus of a composed sidecar, name for name.

The composition root subscribes every reaction under a name (`EventBus.react`); this test composes
the engine as the sidecar does and reads, for every event kind, who reacts in order. The doc's
table must say exactly that: a reaction added, dropped or moved in either place fails here.
"""

from __future__ import annotations

import re
from pathlib import Path

import sidecar
from sidecar.kernel.bus import EventBus
from tests.unit.fake_agent import Composed, FakeAgents, Recorder, make_engine

DOC = Path(sidecar.__file__).resolve().parent.parent / "docs" / "architecture.md"
ROW = re.compile(r"^\| `(?P<event>\w+)` \| [^|]* \| (?P<who>[^|]+) \|$")


def table_in_the_doc() -> dict[str, list[str]]:
    section = DOC.read_text(encoding="utf-8").split("## Who reacts to what", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, list[str]] = {}
    for line in section.splitlines():
        found = ROW.match(line.strip())
        if found is not None:
            assert found["event"] not in rows, f"{found['event']} has two rows"
            rows[found["event"]] = [who.strip() for who in found["who"].split(";")]
    return rows


def table_of(bus: EventBus) -> dict[str, list[str]]:
    return {kind.__name__: bus.who(kind) for kind in bus.kinds()}


def test_the_doc_table_is_the_composed_bus(tmp_path: Path) -> None:
    engine: Composed = make_engine(tmp_path, FakeAgents(), Recorder())
    in_code = table_of(engine.bus)
    in_doc = table_in_the_doc()
    assert in_doc, "docs/architecture.md has no table under 'Who reacts to what'"
    assert in_doc == in_code


def test_the_comparison_sees_a_difference() -> None:
    """The check itself: a bus with one reaction more, or in another order, is another table."""
    bus = EventBus(lambda _name, _exc: None)

    class Ping:
        pass

    bus.react(Ping, "first", lambda _e: None)
    bus.react(Ping, "second", lambda _e: None)
    assert table_of(bus) == {"Ping": ["first", "second"]}
    assert table_of(bus) != {"Ping": ["second", "first"]}
    row = ROW.match("| `Ping` | somewhere | first; second |")
    assert row is not None and row["who"] == "first; second"
