"""Print what the fault and load suites proved: faults injected, inputs tried, load, losses."""

from __future__ import annotations

from typing import Any

import pytest

from tests.faults.figures import FIGURES


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    if not FIGURES:
        return
    terminalreporter.section("reliability figures")
    for key in sorted(FIGURES):
        terminalreporter.write_line(f"{key}: {FIGURES[key]}")
