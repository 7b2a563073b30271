"""Shared fixtures (a workspace with files, a private state dir) and the reliability figures."""

from __future__ import annotations

import _posixsubprocess
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from tests.faults.figures import FIGURES

# Property tests judge results, not speed: a per-example deadline fails at random on a
# loaded machine (seen: 265 ms against the default 200 ms while other test runs shared it).
settings.register_profile("sidecar", deadline=None)
settings.load_profile("sidecar")


# ---------------------------------------------------------------------- test tiers
# The tier is the directory: everything under tests/unit is the in-process tier (`make quick`
# selects it with `-m inprocess`), everything else starts processes (sidecars, agents, editors).
# The guard below holds the in-process tier to that: a test there that starts a process fails,
# naming the directory it belongs in, so the quick tier stays quick without a hand-kept list.
IN_PROCESS_DIR = Path(__file__).resolve().parent / "unit"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        _refuse_parameters_from_a_set(item)
        if IN_PROCESS_DIR in Path(item.path).resolve().parents:
            item.add_marker(pytest.mark.inprocess)


def _refuse_parameters_from_a_set(item: pytest.Item) -> None:
    # A set's order follows the string hash, which differs per process: xdist workers would
    # collect the parameters in different orders and refuse to run at all (CI failed so once).
    for marker in item.iter_markers("parametrize"):
        values = marker.args[1] if len(marker.args) > 1 else marker.kwargs.get("argvalues")
        if isinstance(values, (set, frozenset)):
            raise pytest.UsageError(
                f"{item.nodeid}: parametrize over a set collects in a different order per worker; "
                "use a tuple or a sorted list"
            )


class ProcessStartedInProcessTier(AssertionError):
    pass


@pytest.fixture(autouse=True)
def _no_processes_in_the_in_process_tier(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    if request.node.get_closest_marker("inprocess") is None:
        yield
        return

    def refuse(*_args: object, **_kwargs: object) -> Any:
        raise ProcessStartedInProcessTier(
            f"{request.node.nodeid} starts a process: tests under tests/unit run in-process; "
            "move it to a directory of the process tier (tests/process, tests/lsp, ...)"
        )

    # Every way Python starts a process ends in one of these (subprocess and asyncio in
    # _fork_exec or posix_spawn, multiprocessing in fork_exec or os.fork).
    monkeypatch.setattr(subprocess, "_fork_exec", refuse)
    monkeypatch.setattr(_posixsubprocess, "fork_exec", refuse)
    monkeypatch.setattr(os, "fork", refuse)
    monkeypatch.setattr(os, "posix_spawn", refuse)
    monkeypatch.setattr(os, "posix_spawnp", refuse)
    yield


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
def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    # Here, not in tests/production/conftest.py: the xdist controller loads only this conftest.
    from tests.production import outcomes

    outcomes.record(report)


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
