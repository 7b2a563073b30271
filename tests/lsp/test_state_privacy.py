"""The real sidecar keeps its state private: 0700 directory, 0600 files, whatever the umask."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from tests.fs_modes import mode_of, umask
from tests.lsp.editor import open_editor
from tests.lsp.test_permissions_files import SCRIPTED_ARGS, scripted


@pytest.mark.parametrize("mask", [0o022, 0o000])
async def test_state_files_are_private(workspace: Path, state_dir: Path, mask: int) -> None:
    state_dir.chmod(0o777 & ~mask)  # as mkdir under that umask left it
    (state_dir / "agents.json").write_text("{}")
    (state_dir / "agents.json").chmod(0o644)  # as an older version left it
    title = {"update": {"sessionUpdate": "session_info_update", "title": "Private title"}}
    with umask(mask):
        async with open_editor("vscode", workspace, state_dir, extra_args=SCRIPTED_ARGS) as ed:
            await ed.command("acp.session.new")
            await scripted(ed, [title])
            await ed.wait_for("acp/sessionInfo", lambda i: i["title"] == "Private title")
            async with asyncio.timeout(10):
                while "scripted-agent" not in (state_dir / "agents.json").read_text():
                    await asyncio.sleep(0.05)
            live = {p.name: mode_of(p) for p in state_dir.iterdir()}
            logs = [m.message for m in ed.client.log_messages]
    assert mode_of(state_dir) == 0o700
    assert {"titles.sqlite3", "titles.sqlite3-wal", "titles.sqlite3-shm", "agents.json"} <= set(live), live
    assert "transcripts" in live, live
    assert live == {name: 0o700 if (state_dir / name).is_dir() else 0o600 for name in live}, live
    assert json.loads((state_dir / "agents.json").read_text())
    assert any("agents.json" in m and "made it private" in m for m in logs), logs


async def test_missing_parents_of_the_state_dir_are_made_private(workspace: Path, tmp_path: Path) -> None:
    """Under umask 000 the sidecar makes `~/.local/state/acp-sidecar` and what is missing above
    it 0700: a world-writable parent would let anyone swap the state dir."""
    home = tmp_path / "home"
    state = home / ".local" / "state" / "acp-sidecar"
    with umask(0o000):
        async with open_editor("vscode", workspace, state, extra_args=SCRIPTED_ARGS) as ed:
            await ed.command("acp.session.new")
            await scripted(ed, [{"chunk": "hello"}])
    for directory in (home, home / ".local", home / ".local" / "state", state):
        assert mode_of(directory) == 0o700, directory
    assert (state / "titles.sqlite3").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a directory to another user needs root")
async def test_a_state_dir_of_another_user_is_refused(workspace: Path, state_dir: Path) -> None:
    """Really another user's (chown): never tightened, nothing written there; the sidecar works
    and keeps titles in memory, and says why, naming the directory and its owner."""
    state_dir.chmod(0o755)
    os.chown(state_dir, 4242, 4242)
    title = {"update": {"sessionUpdate": "session_info_update", "title": "Kept in memory"}}
    async with open_editor("vscode", workspace, state_dir, extra_args=SCRIPTED_ARGS) as ed:
        await ed.command("acp.session.new")
        await scripted(ed, [title, {"chunk": "still works"}])
        await ed.wait_for("acp/sessionInfo", lambda i: i["title"] == "Kept in memory")
        assert (await ed.command("acp.status"))["title"] == "Kept in memory"
        said = [m.message for m in ed.client.log_messages] + [m.message for m in ed.client.messages]
    assert any(str(state_dir) in m and "uid 4242" in m and "not used" in m for m in said), said
    assert mode_of(state_dir) == 0o755 and state_dir.stat().st_uid == 4242
    assert list(state_dir.iterdir()) == [], "nothing written in another user's directory"
