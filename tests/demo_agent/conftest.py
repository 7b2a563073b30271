from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from .acp_peer import REPO, AgentPeer

if str(REPO) not in sys.path:  # the package may not be installed in the venv
    sys.path.insert(0, str(REPO))

README = "# Demo project\nSecond line\nThird line\nFourth line\nFifth line\n"

Spawn = Callable[..., Awaitable[AgentPeer]]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "README.md").write_text(README, encoding="utf-8")
    (ws / "src" / "main.py").write_text("print('hello')\nprint('bye')\n", encoding="utf-8")
    return ws


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    return tmp_path / "state"


@pytest.fixture
async def spawn(state_dir: Path) -> AsyncIterator[Spawn]:
    """Start demo agents; every one is reaped (and its frames checked) at teardown."""
    peers: list[AgentPeer] = []

    async def _spawn(
        env: dict[str, str] | None = None,
        state: Path | None = None,
        args: list[str] | None = None,
        umask: int = -1,
    ) -> AgentPeer:
        peer = await AgentPeer.start(state or state_dir, env=env, args=args, umask=umask)
        peers.append(peer)
        return peer

    yield _spawn
    for peer in peers:
        await peer.close()
    invalid = [(frame, errors) for peer in peers for frame, errors in peer.invalid]
    assert not invalid, f"frames that break the ACP schema: {invalid[:3]}"


@pytest.fixture
async def agent(spawn: Spawn) -> AgentPeer:
    """An initialized agent whose client offers fs read and write."""
    peer = await spawn()
    await peer.initialize()
    return peer
