"""Composed unit tests run in-process against an in-memory agent (tests/unit/fake_agent.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.unit.fake_agent import Composed, FakeAgents, Recorder, make_engine


@pytest.fixture
def agents() -> FakeAgents:
    return FakeAgents()


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
async def engine(tmp_path: Path, agents: FakeAgents, recorder: Recorder) -> AsyncIterator[Composed]:
    """A started engine (title cache open, agent initialized); shut down after the test."""
    state = tmp_path / "state"
    state.mkdir()
    eng = make_engine(state, agents, recorder, cancel_timeout=2.0)
    await eng.start()
    await eng.supervisor.ensure()  # agents start on first use: this one is used at once
    try:
        yield eng
    finally:
        await eng.shutdown()
