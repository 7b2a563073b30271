"""A buffer's changes as the agent's hunks follow them (features/edits/buffer_steps.py): a small whole
text diffed at once, a big one on the kernel's worker with the later changes waiting behind it,
and a coarse edit when the worker has no time for it."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Coroutine
from typing import Any, cast

from sidecar.features.edits import buffer_steps
from sidecar.features.edits.agent_changes import AgentChanges, LineEdit, line_edits_between, lines_of
from sidecar.features.edits.buffer_steps import BufferSteps, KeepOnly, Whole
from sidecar.kernel.kernel import Kernel
from sidecar.kernel.worker import Worker, WorkTimeout
from sidecar.tasks import OwnedTasks

PATH = "/ws/big.txt"
URI = "file:///ws/big.txt"


class FakeKernel:
    """The two parts of the kernel the steps use: its worker and its owned tasks."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker
        self.tasks = OwnedTasks("test")

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        return self.tasks.spawn(coro, name)


class SlowWorker(Worker):
    """A worker whose jobs never get a thread in time."""

    async def run(self, fn: Any, *args: Any, timeout: float | None = None) -> Any:
        raise WorkTimeout("no free worker thread within 30 s")


def numbered(count: int, **changed: str) -> str:
    return "".join(changed.get(f"l{i}", f"line {i}\n") for i in range(count))


def recorded(changes: AgentChanges, before: str, after: str) -> None:
    changes.record("s1", PATH, before, after)


async def settle(steps: BufferSteps) -> None:
    for _ in range(500):
        if not steps.busy(URI):
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the worker's diff never landed")


async def test_a_small_whole_text_is_diffed_at_once_as_before() -> None:
    changes = AgentChanges()
    base = numbered(20)
    agent = numbered(20, l10="AGENT\n")
    recorded(changes, base, agent)
    steps = BufferSteps(lambda: changes, lambda: None)
    user = "top\n" + agent
    steps.then(URI, PATH, Whole(agent, user))
    assert not steps.busy(URI)
    [hunk] = changes.hunks(PATH)
    assert hunk.start == 11
    expected = AgentChanges()
    recorded(expected, base, agent)
    expected.edited(PATH, line_edits_between(lines_of(agent), lines_of(user)))
    assert [h.start for h in expected.hunks(PATH)] == [11]


async def test_a_big_whole_text_goes_to_the_worker_and_the_rest_waits_in_order() -> None:
    changes = AgentChanges()
    count = buffer_steps.SYNC_BREAKS * 2
    base = numbered(count)
    agent = numbered(count, l100="AGENT 100\n", l500="AGENT 500\n")
    recorded(changes, base, agent)
    worker = Worker()
    kernel = FakeKernel(worker)
    steps = BufferSteps(lambda: changes, lambda: cast(Kernel, kernel))
    one, two = "one\n" + agent, "one\ntwo\n" + agent
    steps.then(URI, PATH, Whole(agent, one))
    assert steps.busy(URI), "on the worker"
    steps.then(URI, PATH, Whole(one, two))
    steps.then(URI, PATH, (LineEdit(502, 503, 1),))  # the user types into line 500, now 502
    assert [h.start for h in changes.hunks(PATH)] == [100, 500], "nothing moved before the diff"
    await settle(steps)
    [hunk] = changes.hunks(PATH)
    assert (hunk.start, hunk.new) == (102, ["AGENT 100\n"])
    await kernel.tasks.aclose()
    await worker.aclose()


async def test_wholes_waiting_behind_a_diff_are_diffed_as_one() -> None:
    changes = AgentChanges()
    count = buffer_steps.SYNC_BREAKS * 2
    base = numbered(count)
    agent = numbered(count, l300="AGENT\n")
    recorded(changes, base, agent)
    diffed: list[tuple[int, int]] = []

    class Counting(Worker):
        async def run(self, fn: Any, *args: Any, timeout: float | None = None) -> Any:
            diffed.append((len(args[0]), len(args[1])))
            await asyncio.sleep(0.05)
            return fn(*args)

    kernel = FakeKernel(Counting())
    steps = BufferSteps(lambda: changes, lambda: cast(Kernel, kernel))
    texts = [agent] + ["x\n" * n + agent for n in range(1, 5)]
    steps.then(URI, PATH, Whole(texts[0], texts[1]))
    await asyncio.sleep(0)  # its diff began
    for before, after in itertools.pairwise(texts[1:]):
        steps.then(URI, PATH, Whole(before, after))
    await settle(steps)
    assert diffed == [(len(texts[0]), len(texts[1])), (len(texts[1]), len(texts[4]))]
    assert [h.start for h in changes.hunks(PATH)] == [304]
    await kernel.tasks.aclose()


async def test_no_thread_in_time_follows_the_change_coarsely() -> None:
    changes = AgentChanges()
    count = buffer_steps.SYNC_BREAKS * 2
    base = numbered(count)
    agent = numbered(count, l10="AGENT 10\n", l300="AGENT 300\n", l700="AGENT 700\n")
    recorded(changes, base, agent)
    kernel = FakeKernel(SlowWorker())
    steps = BufferSteps(lambda: changes, lambda: cast(Kernel, kernel))
    # Lines 200 and 400 changed: the coarse edit covers 200-400, so the agent's line 300 in
    # between is the user's now (a diff would have kept it); nothing else moves.
    user = "".join("MINE\n" if i in (200, 400) else line for i, line in enumerate(lines_of(agent)))
    steps.then(URI, PATH, Whole(agent, user))
    steps.then(URI, PATH, KeepOnly(user))
    await settle(steps)
    assert [h.start for h in changes.hunks(PATH)] == [10, 700]
    await kernel.tasks.aclose()


async def test_an_agent_write_the_buffer_holds_voids_what_still_waits() -> None:
    """The editor echoed the agent's write (a whole text, diffed on the worker) before the write
    was recorded; once recorded, the hunks are in the buffer's terms: the echo's diff, landing
    later, must not move them a second time. What comes after still applies."""
    changes = AgentChanges()
    count = buffer_steps.SYNC_BREAKS * 2
    base = numbered(count)
    first = numbered(count, l500="AGENT 500\n")
    recorded(changes, base, first)
    release = asyncio.Event()

    class Held(Worker):
        async def run(self, fn: Any, *args: Any, timeout: float | None = None) -> Any:
            await release.wait()
            return fn(*args)

    kernel = FakeKernel(Held())
    steps = BufferSteps(lambda: changes, lambda: cast(Kernel, kernel))
    second = "top\n" + first  # the agent's second write: a line on top
    steps.then(URI, PATH, Whole(first, second))  # its echo, on the worker
    await asyncio.sleep(0)
    recorded(changes, first, second)  # the write recorded: its line on top, the first hunk at 501
    assert [h.start for h in changes.hunks(PATH)] == [0, 501]
    steps.superseded(URI)
    steps.then(URI, PATH, (LineEdit(0, 0, 1),))  # the user adds a line on top, behind the echo
    release.set()
    await settle(steps)
    assert [h.start for h in changes.hunks(PATH)] == [1, 502]
    await kernel.tasks.aclose()
