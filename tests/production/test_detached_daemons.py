"""Daemons an agent detaches are ended with the sidecar.

OpenHands CLI runs its terminal tool in a tmux server it starts detached (`tmux -L openhands`,
re-parented away from the agent): not a descendant of the sidecar's agent process once it has
daemonised. The agent's reaper (sidecar/acp/reaper.py, the sidecar's child and a child
subreaper) adopts it and ends it at shutdown; harness.shut_down_cleanly then finds none left by
the agent's private HOME.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.procs import descendants, marked_processes
from tests.production.harness import Setup
from tests.production.mock_script import TEXT_REPLY

pytestmark = pytest.mark.production


def _command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


@pytest.mark.parametrize("agent_name", ["openhands"])
async def test_the_tmux_server_openhands_detaches_is_ended_at_shutdown(setup: Setup) -> None:
    async with setup.editor() as ed:
        await ed.command("acp.session.new")
        admitted, end = await ed.prompt_and_wait("Say hello [mock:text]", timeout=120)
        assert ed.text_of(admitted["turnId"]) == TEXT_REPLY
        server = ed.client._server
        assert server is not None
        home = str(setup.home)
        tmux = {p for p in marked_processes("HOME", home) if Path(_command(p).split(" ")[0]).name == "tmux"}
        assert tmux, "OpenHands starts a tmux server for its terminal tool"
        # Daemonised away from the agent: the agent's reaper (the sidecar's child, a subreaper) adopted it.
        parents = {_parent(p) for p in tmux}
        assert all("reaper.py" in _command(p) and _parent(p) == server.pid for p in parents), [
            (p, _command(p)[:80]) for p in parents
        ]
        assert tmux <= descendants(server.pid)
    # Setup.editor shut the sidecar down and found no process of the agent's HOME left.
