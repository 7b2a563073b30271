"""The user's reviewed version of an edit: written instead of the agent's through the sidecar, or
put in place of exactly the agent's own disk write, never over anything else."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import pytest

from sidecar.features.edits.reviewed_edits import ReviewedEdits
from sidecar.kernel.errors import SidecarError

BEFORE = "one\ntwo\n"
CALL = {
    "toolCallId": "edit-1",
    "content": [{"type": "diff", "path": "", "oldText": "two\n", "newText": "two\nthree\n"}],
}


class Disk:
    def __init__(self, path: Path, text: str | None) -> None:
        self.path, self.text = path, text
        self.writes: list[str] = []
        self.said: list[str] = []
        self.tasks: list[asyncio.Task[None]] = []

    async def read(self, _session: str, path: Path) -> str | None:
        assert path == self.path
        return self.text

    async def replace_exactly(self, _session: str, path: Path, expected: str, text: str) -> str | None:
        assert path == self.path
        found = self.text
        if found == expected:
            self.writes.append(text)
            self.text = text
        return found

    def spawn(self, coro: Coroutine[Any, Any, None], _name: str) -> asyncio.Task[None]:
        task = asyncio.ensure_future(coro)
        self.tasks.append(task)
        return task

    def edits(self) -> ReviewedEdits:
        return ReviewedEdits(self.said.append, self.spawn, self.read, self.replace_exactly)


async def reviewed(tmp_path: Path, disk_text: str | None) -> tuple[Disk, ReviewedEdits]:
    """The user allowed the edit of f.txt (BEFORE) with a reviewed version; then the disk holds
    `disk_text` (the agent's own write, or something else)."""
    file = tmp_path / "f.txt"
    file.write_text(BEFORE)
    disk = Disk(file, BEFORE)
    edits = disk.edits()
    edits.keep("s1", await edits.prepare("s1", str(tmp_path), _call(file), _parsed(tmp_path, disk)))
    disk.text = disk_text
    return disk, edits


def _call(file: Path) -> dict[str, Any]:
    return {**CALL, "content": [{**CALL["content"][0], "path": str(file)}]}  # type: ignore[dict-item]


def _parsed(tmp_path: Path, disk: Disk) -> list[tuple[Path, str, str]]:
    return ReviewedEdits.parse([{"path": str(disk.path), "text": "one\nmine\n"}], [str(tmp_path)])


async def settle(disk: Disk) -> None:
    await asyncio.gather(*disk.tasks)


COMPLETED = {"sessionUpdate": "tool_call_update", "toolCallId": "edit-1", "status": "completed"}
AGENTS = "one\ntwo\nthree\n"  # what the agent's diff makes of BEFORE


async def test_writes_through_the_sidecar_take_the_users_text_until_the_call_ends(tmp_path: Path) -> None:
    disk, edits = await reviewed(tmp_path, BEFORE)
    assert edits.take("s1", disk.path) == "one\nmine\n"
    assert edits.take("s1", disk.path) == "one\nmine\n"  # a second write of the same call
    disk.text = "one\nmine\n"  # what the sidecar wrote
    edits.tool_call_ended("s1", COMPLETED)
    await settle(disk)
    assert disk.writes == [] and disk.said == []
    assert edits.take("s1", disk.path) is None  # settled


async def test_an_own_write_after_the_write_through_the_sidecar_is_put_back(tmp_path: Path) -> None:
    """Kilo and OpenCode write through the client and also to the disk themselves."""
    disk, edits = await reviewed(tmp_path, BEFORE)
    assert edits.take("s1", disk.path) == "one\nmine\n"
    disk.text = AGENTS  # its own write, after ours
    edits.tool_call_ended("s1", COMPLETED)
    await settle(disk)
    assert disk.writes == ["one\nmine\n"]
    assert disk.said == ["f.txt: the agent also wrote its own edit; your reviewed version replaced it"]


async def test_a_call_completed_before_its_write_still_takes_the_users_text(tmp_path: Path) -> None:
    """The agent reports the call completed, then writes through the client: the file is as it
    was, so the user's text waits for that write (or the turn's end)."""
    disk, edits = await reviewed(tmp_path, BEFORE)
    edits.tool_call_ended("s1", COMPLETED)
    await settle(disk)
    assert disk.writes == [] and disk.said == []
    assert edits.take("s1", disk.path) == "one\nmine\n"
    disk.text = "one\nmine\n"
    edits.turn_ended("s1")
    await settle(disk)
    assert disk.writes == [] and disk.said == []


async def test_the_agents_own_write_is_replaced_only_when_the_file_holds_exactly_its_edit(
    tmp_path: Path,
) -> None:
    disk, edits = await reviewed(tmp_path, "one\ntwo\nthree\n")  # what the agent's diff makes of the file
    edits.tool_call_ended(
        "s1", {"sessionUpdate": "tool_call_update", "toolCallId": "edit-1", "status": "completed"}
    )
    await settle(disk)
    assert disk.writes == ["one\nmine\n"]
    assert len(disk.said) == 1 and "replaced" in disk.said[0]

    for other, why in (
        ("someone else's text\n", "changed"),
        (None, "gone"),
        (BEFORE, "did not write"),
        # The agent's new text is all there, but another program added a line after its write.
        ("one\ntwo\nthree\nanother program's line\n", "changed"),
        ("ONE\ntwo\nthree\n", "changed"),
    ):
        disk, edits = await reviewed(tmp_path, other)
        edits.turn_ended("s1")
        await settle(disk)
        assert disk.writes == [] and disk.text == other
        assert len(disk.said) == 1 and "not applied" in disk.said[0] and why in disk.said[0], disk.said


async def test_the_turns_end_waits_until_the_users_version_is_in_place(tmp_path: Path) -> None:
    """The editor looks at the disk when it hears the turn ended: settle_turn returns only once
    the check begun at the tool call's end (a slow disk here) has put the user's text in place."""
    disk, edits = await reviewed(tmp_path, AGENTS)
    slow = asyncio.Event()
    replace = disk.replace_exactly

    async def slow_replace(session: str, path: Path, expected: str, text: str) -> str | None:
        await slow.wait()
        return await replace(session, path, expected, text)

    disk.replace_exactly = slow_replace  # type: ignore[method-assign]
    edits = disk.edits()
    edits.keep("s1", await edits.prepare("s1", str(tmp_path), _call(disk.path), _parsed(tmp_path, disk)))
    edits.tool_call_ended("s1", COMPLETED)
    ending = asyncio.ensure_future(edits.settle_turn("s1"))
    await asyncio.sleep(0.05)
    assert not ending.done() and disk.writes == []
    slow.set()
    await asyncio.wait_for(ending, 5)
    assert disk.writes == ["one\nmine\n"]  # in place when the turn's end is told
    await edits.settle_turn("s1")  # nothing left: returns at once


async def test_a_failed_tool_call_and_other_sessions_leave_it_alone(tmp_path: Path) -> None:
    disk, edits = await reviewed(tmp_path, "one\ntwo\nthree\n")
    edits.tool_call_ended(
        "s2", {"sessionUpdate": "tool_call_update", "toolCallId": "edit-1", "status": "completed"}
    )
    edits.tool_call_ended(
        "s1", {"sessionUpdate": "tool_call_update", "toolCallId": "other", "status": "completed"}
    )
    edits.tool_call_ended(
        "s1", {"sessionUpdate": "tool_call_update", "toolCallId": "edit-1", "status": "in_progress"}
    )
    await settle(disk)
    assert disk.tasks == []
    edits.tool_call_ended(
        "s1", {"sessionUpdate": "tool_call_update", "toolCallId": "edit-1", "status": "failed"}
    )
    await settle(disk)
    assert disk.writes == [] and disk.said == [] and edits.take("s1", disk.path) is None


def test_bad_edits_are_refused_by_name(tmp_path: Path) -> None:
    for bad, why in (
        ([], "edits must be"),
        ("x", "edits must be"),
        ([{"path": "", "text": "x"}], "edits[0]"),
        ([{"path": str(tmp_path / "a"), "text": "x"}, {"path": str(tmp_path / "b")}], "edits[1]"),
        ([{"path": "/etc/passwd", "text": "x"}], "outside"),
    ):
        with pytest.raises(SidecarError) as info:
            ReviewedEdits.parse(bad, [str(tmp_path)])
        assert why in info.value.message, (bad, info.value.message)


async def test_a_diff_that_does_not_fit_the_file_as_it_was_replaces_nothing(tmp_path: Path) -> None:
    file = tmp_path / "f.txt"
    file.write_text("no such lines\n")
    disk = Disk(file, "no such lines\n")
    edits = disk.edits()
    call = {**CALL, "content": [{**CALL["content"][0], "path": str(file)}]}  # type: ignore[dict-item]
    parsed = ReviewedEdits.parse([{"path": str(file), "text": "mine\n"}], [str(tmp_path)])
    edits.keep("s1", await edits.prepare("s1", str(tmp_path), call, parsed))
    disk.text = "no such lines\ntwo\nthree\n"
    edits.turn_ended("s1")
    await settle(disk)
    assert disk.writes == []
    assert len(disk.said) == 1 and "did not fit" in disk.said[0], disk.said
