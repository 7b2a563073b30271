"""The early-update buffer alone: bounded per session id, oldest ids forgotten first, entries age out."""

from __future__ import annotations

from sidecar.kernel.early_updates import EarlyUpdates


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def update(n: int) -> dict[str, object]:
    return {"sessionUpdate": "agent_message_chunk", "n": n}


def numbers(updates: list[dict[str, object]]) -> list[object]:
    return [u["n"] for u in updates]


def test_take_gives_the_updates_in_order_once() -> None:
    early = EarlyUpdates(per_session=10, max_sessions=4, max_age=60)
    for n in range(3):
        assert early.keep("s1", update(n))
    early.keep("s2", update(9))
    assert numbers(early.take("s1")) == [0, 1, 2]
    assert early.take("s1") == []
    assert numbers(early.take("s2")) == [9]
    assert early.take("never") == []


def test_each_session_id_has_its_own_bound() -> None:
    early = EarlyUpdates(per_session=3, max_sessions=4, max_age=60)
    kept = [early.keep("flood", update(n)) for n in range(10)]
    assert kept == [True] * 3 + [False] * 7
    # The flood of one id does not take the room of another.
    assert early.keep("new", update(100))
    assert numbers(early.take("flood")) == [0, 1, 2]
    assert numbers(early.take("new")) == [100]


def test_too_many_session_ids_forget_the_oldest() -> None:
    early = EarlyUpdates(per_session=5, max_sessions=3, max_age=60)
    for index in range(10):
        early.keep(f"ghost-{index}", update(index))
    assert early.keep("mine", update(42))
    assert numbers(early.take("mine")) == [42]
    assert early.take("ghost-0") == []
    assert numbers(early.take("ghost-9")) == [9]
    assert len(early) <= 3 * 5


def test_entries_age_out() -> None:
    clock = Clock()
    early = EarlyUpdates(per_session=5, max_sessions=3, max_age=30, clock=clock)
    early.keep("old", update(1))
    clock.now += 20
    early.keep("old", update(2))
    early.keep("other", update(3))
    clock.now += 15  # update 1 is 35 s old, update 2 is 15 s old
    assert numbers(early.take("old")) == [2]
    clock.now += 100
    early.keep("fresh", update(4))  # keeping also drops what aged out elsewhere
    assert len(early) == 1
    assert early.take("other") == []
