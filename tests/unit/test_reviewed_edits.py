"""The user's reviewed version of an edit: written instead of the agent's through the sidecar, or
put in place of exactly the agent's own disk write, never over anything else."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import pytest

from sidecar.core.errors import SidecarError
from sidecar.core.reviewed_edits import ReviewedEdits

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

    async def write(self, _session: str, path: Path, text: str) -> None:
        assert path == self.path
        self.writes.append(text)
        self.text = text

    def spawn(self, coro: Coroutine[Any, Any, None], _name: str) -> None:
        self.tasks.append(asyncio.ensure_future(coro))

    def edits(self) -> ReviewedEdits:
        return ReviewedEdits(self.said.append, self.spawn, self.read, self.write)


def reviewed(tmp_path: Path, disk_text: str | None) -> tuple[Disk, ReviewedEdits]:
    file = tmp_path / "f.txt"
    file.write_text(BEFORE)
    disk = Disk(file, disk_text)
    edits = disk.edits()
    call = {**CALL, "content": [{**CALL["content"][0], "path": str(file)}]}  # type: ignore[dict-item]
    edits.keep(
        "s1",
        str(tmp_path),
        call,
        ReviewedEdits.parse([{"path": str(file), "text": "one\nmine\n"}], [str(tmp_path)]),
    )
    return disk, edits


async def settle(disk: Disk) -> None:
    await asyncio.gather(*disk.tasks)


async def test_a_write_through_the_sidecar_takes_the_users_text_once(tmp_path: Path) -> None:
    disk, edits = reviewed(tmp_path, None)
    assert edits.take("s1", disk.path) == "one\nmine\n"
    assert edits.take("s1", disk.path) is None
    edits.tool_call_ended(
        "s1", {"sessionUpdate": "tool_call_update", "toolCallId": "edit-1", "status": "completed"}
    )
    await settle(disk)
    assert disk.writes == [] and disk.said == []


async def test_the_agents_own_write_is_replaced_only_when_the_file_holds_exactly_its_edit(
    tmp_path: Path,
) -> None:
    disk, edits = reviewed(tmp_path, "one\ntwo\nthree\n")  # what the agent's diff makes of the file
    edits.tool_call_ended(
        "s1", {"sessionUpdate": "tool_call_update", "toolCallId": "edit-1", "status": "completed"}
    )
    await settle(disk)
    assert disk.writes == ["one\nmine\n"]
    assert len(disk.said) == 1 and "replaced" in disk.said[0]

    for other in ("someone else's text\n", None):  # changed by someone else, or gone
        disk, edits = reviewed(tmp_path, other)
        edits.turn_ended("s1")
        await settle(disk)
        assert disk.writes == [] and disk.text == other
        assert len(disk.said) == 1 and "not applied" in disk.said[0]


async def test_a_failed_tool_call_and_other_sessions_leave_it_alone(tmp_path: Path) -> None:
    disk, edits = reviewed(tmp_path, "one\ntwo\nthree\n")
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
