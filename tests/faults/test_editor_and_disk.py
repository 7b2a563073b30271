"""The editor misbehaves, the disk misbehaves: clear messages, nothing lost, nothing stuck."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
import time
from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException

from sidecar.features.titles.api import TitleStore
from tests.faults.figures import FIGURES
from tests.lsp.editor import open_editor
from tests.lsp.test_lifecycle import _agent_pids, _start_raw_sidecar
from tests.procs import wait_gone

pytestmark = pytest.mark.fault

SCRIPTED = Path(__file__).resolve().parents[1] / "agents" / "scripted_agent.py"


async def test_requests_after_shutdown_are_refused(workspace: Path, state_dir: Path) -> None:
    async with open_editor("vscode", workspace, state_dir) as ed:
        await ed.command("acp.session.new")
        async with asyncio.timeout(10):
            await ed.client.shutdown_async(None)
        FIGURES["editor faults: requests after shutdown"] += 1
        with pytest.raises(JsonRpcException) as info:
            await ed.command("acp.status")
        assert info.value.message


async def test_editor_vanishes_mid_turn(workspace: Path, state_dir: Path) -> None:
    proc = await _start_raw_sidecar(workspace, state_dir)
    try:
        agents = await _agent_pids(proc)
        assert proc.stdin is not None
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "workspace/executeCommand",
                "params": {
                    "command": "acp.prompt",
                    "arguments": [{"text": "#chunks=100000 #slow=5 forever"}],
                },
            }
        ).encode()
        proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        await proc.stdin.drain()
        await asyncio.sleep(1.0)
        proc.stdin.close()
        FIGURES["editor faults: editor vanished mid-turn"] += 1
        async with asyncio.timeout(15):
            await proc.wait()
        assert not await asyncio.to_thread(wait_gone, agents, 10)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def test_apply_edit_never_answered(workspace: Path, state_dir: Path) -> None:
    env = {"ACP_SIDECAR_REQUEST_TIMEOUT_MS": "1000"}
    args = ["--agent", f"{sys.executable} {SCRIPTED}"]
    async with open_editor("vscode", workspace, state_dir, env=env, extra_args=args) as ed:
        await ed.command("acp.session.new")
        target = workspace / "README.md"
        ed.open(target)
        ed.apply_edit_never_answers = True
        admitted, end = await ed.prompt_and_wait(json.dumps([{"write": str(target), "content": "x"}]))
        FIGURES["editor faults: applyEdit never answered"] += 1
        assert end["stopReason"] == "end_turn"
        assert "did not answer workspace/applyEdit" in ed.text_of(admitted["turnId"])


async def test_state_dir_unusable(workspace: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    state = blocker / "state"
    async with open_editor("vscode", workspace, state, wait_idle=False) as ed:
        await ed.wait_message(lambda m: "memory" in m)
        FIGURES["disk faults: state dir unusable"] += 1
        await ed.wait_for("acp/status", lambda s: s["state"] in ("idle", "error"))
        status = await ed.command("acp.status")
        if status["state"] == "idle":  # the demo agent also keeps its sessions in the state dir
            await ed.command("acp.session.new")
            await ed.prompt_and_wait("#title Kept in memory")
            await ed.wait_for("acp/sessionInfo", lambda i: i["title"] == "Kept in memory")
            assert (await ed.command("acp.status"))["title"] == "Kept in memory"


LOCKER = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
conn.execute("COMMIT")
"""


async def test_database_locked_for_long(workspace: Path, state_dir: Path) -> None:
    async with open_editor("vscode", workspace, state_dir) as ed:
        sid = (await ed.command("acp.session.new"))["sessionId"]
        db = state_dir / "titles.sqlite3"
        locker = await asyncio.create_subprocess_exec(
            sys.executable, "-c", LOCKER, str(db), "6", stdout=asyncio.subprocess.PIPE
        )
        assert locker.stdout is not None
        assert (await locker.stdout.readline()).strip() == b"locked"
        FIGURES["disk faults: database locked for 6 s by another process"] += 1
        started = time.monotonic()
        await ed.prompt_and_wait("#title Written while locked")
        # Not saved yet: shown after the bounded wait for the store (docs/protocol.md, Titles).
        await ed.wait_for("acp/sessionInfo", lambda i: i["title"] == "Written while locked", timeout=10)
        assert (await ed.command("acp.status"))["title"] == "Written while locked"
        assert time.monotonic() - started < 3, "the editor is served while the database is locked"
        await locker.wait()
        # Once the lock is gone, the title lands in the database.
        async with asyncio.timeout(30):
            while True:
                store = TitleStore(db)
                record = store.get("acp-sidecar-demo", sid)
                store.close()
                if record is not None and record.title == "Written while locked":
                    break
                await asyncio.sleep(0.2)


async def test_store_writes_failing_then_recovering(workspace: Path, state_dir: Path) -> None:
    """A disk-full-like failure: writes fail, the titles stay in memory, and land later."""
    async with open_editor("vscode", workspace, state_dir) as ed:
        sid = (await ed.command("acp.session.new"))["sessionId"]
        db = state_dir / "titles.sqlite3"
        # Make the database refuse writes: a trigger that aborts every update and insert.
        with sqlite3.connect(db) as conn:
            conn.execute(
                "CREATE TRIGGER no_upd BEFORE UPDATE ON titles BEGIN SELECT RAISE(ABORT, 'disk full'); END"
            )
            conn.execute(
                "CREATE TRIGGER no_ins BEFORE INSERT ON titles BEGIN SELECT RAISE(ABORT, 'disk full'); END"
            )
        FIGURES["disk faults: writes failing"] += 1
        await ed.prompt_and_wait("#title Survives a failing disk")
        await ed.wait_for("acp/sessionInfo", lambda i: i["title"] == "Survives a failing disk")
        assert (await ed.command("acp.status"))["title"] == "Survives a failing disk"
        await ed.wait_message(lambda m: m.startswith("title cache:"))
        listed = await ed.command("acp.session.list")
        assert [s["title"] for s in listed["sessions"]] == ["Survives a failing disk"]
        with sqlite3.connect(db) as conn:
            conn.execute("DROP TRIGGER no_upd")
            conn.execute("DROP TRIGGER no_ins")
    store = TitleStore(db)
    record = store.get("acp-sidecar-demo", sid)
    store.close()
    assert record is not None and record.title == "Survives a failing disk", (
        "written at shutdown at the latest"
    )
