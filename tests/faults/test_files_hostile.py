"""A hostile agent against the workspace boundary, through the real sidecar: nothing escapes or hangs."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.faults.figures import FIGURES
from tests.lsp.editor import open_editor
from tests.lsp.test_permissions_files import SCRIPTED_ARGS, error_of, scripted
from tests.swapper import swapping

pytestmark = pytest.mark.fault


def _stray(*roots: Path) -> list[str]:
    return [str(p) for root in roots for p in root.rglob("*") if p.name.endswith(".tmp")]


async def test_racing_swapper_gets_nothing_through_the_sidecar(
    workspace: Path, state_dir: Path, tmp_path: Path
) -> None:
    """The agent swaps a file and a parent directory for symlinks out of the workspace while it
    reads and writes them; with Neovim's capabilities writes go to disk, so the sidecar's own
    writes are attacked."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("SECRET\n")
    target = workspace / "f.txt"
    target.write_text("inside\n")
    sub = workspace / "sub"
    sub.mkdir()
    tries = 1000
    steps: list[dict[str, Any]] = []
    for index in range(tries):
        steps.append({"read": str(target)})
        steps.append({"write": str(sub / f"w{index % 5}.txt"), "content": f"AGENT {index}\n"})
    async with open_editor("neovim", workspace, state_dir, extra_args=SCRIPTED_ARGS) as ed:
        await ed.command("acp.session.new")
        with swapping(target, outside / "secret.txt", 200), swapping(sub, outside, 200):
            results = await scripted(ed, steps, timeout=240)
    assert len(results) == 2 * tries, "every request answered"
    reads = [results[i] for i in range(0, 2 * tries, 2)]
    writes = [results[i] for i in range(1, 2 * tries, 2)]
    leaked = [r for r in reads if "SECRET" in json.dumps(r)]
    escaped = sorted(p.name for p in outside.iterdir() if p.name != "secret.txt")
    FIGURES["files: racing swapper reads through the sidecar"] += tries
    FIGURES["files: racing swapper writes through the sidecar"] += tries
    FIGURES["files: leaked (reads answered with content from outside)"] += len(leaked)
    FIGURES["files: escaped (files written outside the workspace)"] += len(escaped)
    assert not leaked and not escaped, (leaked[:3], escaped[:5])
    assert (outside / "secret.txt").read_text() == "SECRET\n"
    assert _stray(workspace, outside) == []
    assert any("result" in r for r in reads) and any("result" in r for r in writes), "some got through"
    refusals = [error_of(r) for r in reads + writes if "error" in r]
    odd = [m for m in refusals if "refused" not in m and "not found" not in m]
    assert refusals and not odd, odd[:5]


async def test_racing_swapper_gets_nothing_created_through_the_editor(
    workspace: Path, state_dir: Path, tmp_path: Path
) -> None:
    """With VS Code's capabilities (documentChanges, create): the agent writes closed files while
    it swaps their parent for a symlink out of the workspace. An editor carries out a create-file
    edit by path, following the symlink, as this one does; so the sidecar must write closed files
    itself, through the directory it checked, and send the editor nothing."""
    outside = tmp_path / "outside"
    outside.mkdir()
    sub = workspace / "sub"
    sub.mkdir()
    tries = 300
    steps = [{"write": str(sub / f"w{i % 5}.txt"), "content": f"AGENT {i}\n"} for i in range(tries)]
    async with open_editor("vscode", workspace, state_dir, extra_args=SCRIPTED_ARGS) as ed:

        async def by_path(params: Any) -> Any:
            from lsprotocol import types
            from pygls.uris import to_fs_path

            for change in params.edit.document_changes or []:
                if isinstance(change, types.TextDocumentEdit):
                    path = Path(to_fs_path(change.text_document.uri) or "")
                    path.write_text("".join(e.new_text for e in change.edits))  # follows symlinks
            return types.ApplyWorkspaceEditResult(applied=True)

        ed.edit_applier = by_path
        await ed.command("acp.session.new")
        with swapping(sub, outside, 200):
            results = await scripted(ed, steps, timeout=240)
    assert len(results) == tries, "every request answered"
    escaped = sorted(p.name for p in outside.iterdir())
    FIGURES["files: racing swapper writes of closed files (editor capable of creating files)"] += tries
    FIGURES["files: escaped (files written outside the workspace)"] += len(escaped)
    assert not escaped, escaped[:5]
    assert not ed.applied_edits, "closed files are written by the sidecar, not by the editor"
    answers = [results[i] for i in range(tries)]
    assert any("result" in r for r in answers), "some got through"
    assert _stray(workspace, outside) == []


async def test_fifo_socket_and_device_never_hang_the_sidecar(
    workspace: Path, state_dir: Path, tmp_path: Path
) -> None:
    fifo = workspace / "pipe"
    os.mkfifo(fifo)
    (workspace / "zero").symlink_to("/dev/zero")  # outside the roots anyway; must not hang either
    steps: list[dict[str, Any]] = [{"read": str(fifo)} for _ in range(12)]
    steps += [{"read": str(workspace / "zero")}, {"read": str(workspace / "README.md"), "limit": 1}]
    steps += [{"write": str(fifo), "content": "x"}]
    async with open_editor("neovim", workspace, state_dir, extra_args=SCRIPTED_ARGS) as ed:
        await ed.command("acp.session.new")
        results = await scripted(ed, steps, timeout=30)
        FIGURES["files: named pipe reads answered without blocking"] += 12
        for index in range(12):
            assert "named pipe" in error_of(results[index]), results[index]
        assert "refused" in error_of(results[12])
        assert results[13] == {"result": {"content": "# Practice repo\n"}}
        assert "regular file" in error_of(results[14])
        server = ed.client._server
        assert server is not None
        async with asyncio.timeout(15):
            await ed.client.shutdown_session()
        assert server.returncode == 0, "the process ends after exit: no thread is stuck on the pipe"


# VmHWM, not ru_maxrss: a child's ru_maxrss starts at its parent's (it survives exec).
MEASURE = """
import json, sys
from pathlib import Path
from sidecar.kernel.errors import SidecarError
from sidecar.kernel.files import read_text

def hwm():
    with open("/proc/self/status") as fh:
        return int(fh.read().split("VmHWM:")[1].split()[0])

path, line = Path(sys.argv[1]), int(sys.argv[2])
before = hwm()
try:
    answer = {"content": read_text(path, [str(path.parent)], line, 1)[:40]}
except SidecarError as exc:
    answer = {"error": exc.message}
print(json.dumps({"peak_kib": hwm() - before, **answer}))
"""


def _measure(path: Path, line: int) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-c", MEASURE, str(path), str(line)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def test_one_line_of_a_big_file_costs_little_memory(tmp_path: Path) -> None:
    lines = 16 * 1024 * 1024
    big = tmp_path / "big.txt"
    big.write_bytes(b"x\n" * lines)  # 32 MiB, 16 Mi lines
    first = _measure(big, 1)
    last = _measure(big, lines)
    sparse = tmp_path / "sparse.bin"
    with open(sparse, "wb") as fh:
        fh.truncate(300 * 1024 * 1024)  # one 300 MiB line of NULs
    hole = _measure(sparse, 1)
    FIGURES["files: peak RSS increase, line 1 of a 32 MiB file (KiB)"] = first["peak_kib"]
    FIGURES["files: peak RSS increase, last line of a 32 MiB file (KiB)"] = last["peak_kib"]
    FIGURES["files: peak RSS increase, a 300 MiB sparse file (KiB)"] = hole["peak_kib"]
    assert first["content"] == "x\n" and last["content"] == "x\n"
    assert "16 MiB" in hole["error"] and "line/limit" in hole["error"]
    assert first["peak_kib"] < 8 * 1024 and last["peak_kib"] < 8 * 1024, (first, last)
    assert hole["peak_kib"] < 48 * 1024, hole
