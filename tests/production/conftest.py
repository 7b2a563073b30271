"""Fixtures of the production-agent tests: one mock model and one private agent home per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.production.harness import AGENT_NAMES, Setup
from tests.production.mock_model import MockModel


@pytest.fixture
def mock() -> Iterator[MockModel]:
    with MockModel() as model:
        yield model


@pytest.fixture(params=AGENT_NAMES)
def agent_name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def setup(
    agent_name: str,
    mock: MockModel,
    workspace: Path,
    state_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Setup:
    # The sidecar passes its environment to the agent: claude-agent-acp exits as root with IS_SANDBOX.
    monkeypatch.delenv("IS_SANDBOX", raising=False)
    home = tmp_path / "agent-home"
    home.mkdir()
    return Setup(agent_name, mock, home, workspace, state_dir)
