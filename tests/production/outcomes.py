"""The production scenarios' outcomes per agent, recorded for the compatibility report
(tools/agents_report). Called from the root conftest: under xdist only the controller sees every
report, and it loads no conftest below tests/ when the whole suite runs."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from tests.production import matrix
from tools.provision.agents import BY_NAME

_SCENARIO = re.compile(rf"^{re.escape(matrix.MODULE)}::(?P<test>\w+)\[(?P<agent>[\w-]+)\]$")


def record(report: pytest.TestReport) -> None:
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
    entry = {
        "test": found["test"],
        "agent": found["agent"],
        "version": BY_NAME[found["agent"]].version,
        "outcome": outcome,
    }
    path = matrix.results_path(Path(__file__).resolve().parents[2])
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as out:  # one short line per write: appends from one process
        out.write(json.dumps(entry) + "\n")
