"""Fixtures for the real-Helix tests: one private Helix per test, always torn down."""

from __future__ import annotations

from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

from tests.editors.helix.harness import HelixEditor


@pytest.fixture
def helix(tmp_path: Path) -> Iterator[HelixEditor]:
    editor = HelixEditor(tmp_path)
    try:
        yield editor
    finally:
        editor.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    # A failing plain `assert` in a test gets the screen and log tail too (the harness's own
    # waits already put them in their message).
    report = yield
    editor = getattr(item, "funcargs", {}).get("helix")
    if report.when == "call" and report.failed and isinstance(editor, HelixEditor) and not editor.closed:
        report.sections.append(("Helix at failure", editor.context()))
    return report
