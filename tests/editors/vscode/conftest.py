"""Fixtures for the VS Code workbench tests: tools, the built .vsix, a fresh code-server per test.

Screenshots of failures are kept under tests/editors/vscode/artifacts/ (or
$ACP_SIDECAR_TEST_ARTIFACTS/vscode), one directory per test, and named in the
failure report.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

from tests.editors.vscode.build import Build, build_vsix
from tests.editors.vscode.features import SidecarFeatures, probe
from tests.editors.vscode.harness import HERE, MACHINE_SETTINGS, CodeServer, Driver, Tools, find_tools
from tests.editors.vscode.workbench import Workbench

ARTIFACTS = (
    Path(os.environ["ACP_SIDECAR_TEST_ARTIFACTS"]) / "vscode"
    if "ACP_SIDECAR_TEST_ARTIFACTS" in os.environ
    else HERE / "artifacts"
)

_features: SidecarFeatures | None = None


def sidecar_features() -> SidecarFeatures:
    global _features
    if _features is None:
        _features = probe()
    return _features


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """`needs_sidecar("feature")`: a strict xfail while the sidecar lacks it, a plain test once it has it."""
    for item in items:
        marker = item.get_closest_marker("needs_sidecar")
        if marker is None:
            continue
        missing = sidecar_features().missing(marker.args[0])
        if missing:
            item.add_marker(
                pytest.mark.xfail(reason=f"waiting for the sidecar to offer {missing}", strict=True)
            )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "needs_sidecar(feature): the scenario needs that sidecar feature")
    config.addinivalue_line("markers", "machine_settings(mapping): more settings, e.g. acpSidecar.agent.env")


@pytest.fixture(scope="session")
def vscode_tools() -> Tools:
    return find_tools()


@pytest.fixture(scope="session")
def vsix(tmp_path_factory: pytest.TempPathFactory) -> Build:
    return build_vsix(tmp_path_factory.getbasetemp())


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    bench = getattr(item, "funcargs", {}).get("workbench")
    if report.when == "call" and report.failed and isinstance(bench, Workbench):
        shot = bench.screenshot("at-failure")
        report.sections.append(("screenshot", str(shot) if shot else "the browser did not answer"))
        report.sections.append(("logs", str(bench.keep_logs())))
    return report


@pytest.fixture
def code_server(
    request: pytest.FixtureRequest, tmp_path: Path, workspace: Path, vscode_tools: Tools, vsix: Build
) -> Iterator[CodeServer]:
    server = CodeServer(vscode_tools, tmp_path / "code-server", workspace)
    more = request.node.get_closest_marker("machine_settings")
    if more is not None:
        # As a user sets them (e.g. the agent's environment: the sidecar starts the agent with it).
        server.write_machine_settings({**MACHINE_SETTINGS, **more.args[0]})
    server.install_extension(vsix.vsix)
    try:
        yield server
    finally:
        server.cleanup()


@pytest.fixture
def workbench(request: pytest.FixtureRequest, code_server: CodeServer) -> Iterator[Workbench]:
    """code-server started, the workbench open in Chromium; everything stopped afterwards."""
    artifacts = ARTIFACTS / re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)
    shutil.rmtree(artifacts, ignore_errors=True)  # only this run's screenshots
    code_server.start()
    driver = Driver(code_server.tools, code_server.root / "driver.log")
    bench = Workbench(code_server, driver, artifacts)
    try:
        bench.open()
        yield bench
        if os.environ.get("ACP_SIDECAR_VSCODE_SCREENSHOTS"):
            bench.screenshot("final")  # for looking at what a user sees
    finally:
        driver.close()
