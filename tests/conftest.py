"""Shared fixtures (a workspace with files, a private state dir) and the reliability figures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from tests.faults.figures import FIGURES

# Property tests judge results, not speed: a per-example deadline fails at random on a
# loaded machine (seen: 265 ms against the default 200 ms while other test runs shared it).
settings.register_profile("sidecar", deadline=None)
settings.load_profile("sidecar")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "README.md").write_text("# Practice repo\n\nA small project for tests.\nLine four.\n")
    (ws / "src").mkdir()
    (ws / "src" / "app.py").write_text("def main():\n    return 'héllo wörld ✓'\n")
    return ws


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    state = tmp_path / "state"
    state.mkdir()
    return state


# ---------------------------------------------------------------------- reliability figures
# The fault, load and file suites count what they proved (tests/faults/figures.py). With
# pytest-xdist each worker counts its own: workers hand theirs over when they finish and
# the controller adds them up, so the summary is the same with one process or several.
def pytest_sessionfinish(session: pytest.Session) -> None:
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["figures"] = dict(FIGURES)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    FIGURES.update(getattr(node, "workeroutput", {}).get("figures", {}))


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    if not FIGURES:
        return
    terminalreporter.section("reliability figures")
    for key in sorted(FIGURES):
        terminalreporter.write_line(f"{key}: {FIGURES[key]}")
