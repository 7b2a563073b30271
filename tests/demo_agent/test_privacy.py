"""What the demo agent writes under its state dir is private whatever the umask: the session
files hold whole prompts. Directories 0700, files 0600."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from .conftest import Spawn
from .test_sessions import seed

pytestmark = pytest.mark.timeout(60)


def modes(root: Path) -> dict[str, int]:
    """Permission bits of ``root`` and everything under it, by path relative to ``root``'s parent."""
    found = {root.name: stat.S_IMODE(root.stat().st_mode)}
    for path in root.rglob("*"):
        found[str(path.relative_to(root.parent))] = stat.S_IMODE(path.lstat().st_mode)
    return found


@pytest.mark.parametrize("umask", [0o022, 0o000, 0o277])
async def test_state_is_private_whatever_the_umask(
    spawn: Spawn, workspace: Path, tmp_path: Path, umask: int
) -> None:
    top = tmp_path / "created-by-the-agent"
    state = top / "state"
    peer = await spawn(state=state, umask=umask)
    await peer.initialize()
    sid = await peer.new_session(workspace)
    await peer.prompt(sid, "my secret plans for the auth module")
    await peer.request("session/set_title", {"sessionId": sid, "title": "Secret plans"})
    assert await peer.close() == 0
    await seed(state, workspace, 3, umask=umask)

    found = modes(top)
    files = {path: mode for path, mode in found.items() if (tmp_path / path).is_file()}
    dirs = {path: mode for path, mode in found.items() if path not in files}
    assert len(files) == 4 and f"created-by-the-agent/state/sessions/{sid}.json" in files
    assert files == dict.fromkeys(files, 0o600)
    assert dirs == dict.fromkeys(
        ["created-by-the-agent", "created-by-the-agent/state", "created-by-the-agent/state/sessions"], 0o700
    )


async def test_an_older_readable_sessions_dir_is_made_private(
    spawn: Spawn, workspace: Path, tmp_path: Path
) -> None:
    state = tmp_path / "given"
    sessions = state / "sessions"
    sessions.mkdir(parents=True)
    old = sessions / "demo-000000000000.json"
    old.write_text('{"sessionId": "demo-000000000000", "cwd": "/"}', encoding="utf-8")
    for path, mode in ((state, 0o755), (sessions, 0o755), (old, 0o644)):
        os.chmod(path, mode)
    peer = await spawn(state=state, umask=0o022)
    await peer.initialize()
    sid = await peer.new_session(workspace)
    assert stat.S_IMODE(sessions.stat().st_mode) == 0o700
    assert stat.S_IMODE(old.stat().st_mode) == 0o600
    assert stat.S_IMODE((sessions / f"{sid}.json").stat().st_mode) == 0o600
    # A state dir the user gave may be shared (like /tmp): only what is ours is changed.
    assert stat.S_IMODE(state.stat().st_mode) == 0o755
