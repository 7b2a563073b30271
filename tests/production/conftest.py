"""Fixtures of the production-agent tests: one mock model and one private agent home per test."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.production import matrix
from tests.production.harness import AGENT_NAMES, Setup
from tests.production.mock_model import MockModel
from tools.provision.agents import BY_NAME

_SCENARIO = re.compile(rf"^{re.escape(matrix.MODULE)}::(?P<test>\w+)\[(?P<agent>[\w-]+)\]$")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Record each scenario's outcome per agent for the compatibility report (tools/agents_report)."""
    found = _SCENARIO.match(report.nodeid)
    # Under xdist the controller sees every report too: record there only.
    if found is None or found["agent"] not in BY_NAME or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    if report.when == "call":
        outcome = report.outcome
        if hasattr(report, "wasxfail"):
            outcome = "xfailed" if report.skipped else "xpassed"
    elif report.failed:
        outcome = "error"
    else:
        return
    record = {
        "test": found["test"],
        "agent": found["agent"],
        "version": BY_NAME[found["agent"]].version,
        "outcome": outcome,
    }
    path = matrix.results_path(Path(__file__).resolve().parents[2])
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as out:  # one short line per write: appends from one process
        out.write(json.dumps(record) + "\n")


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
