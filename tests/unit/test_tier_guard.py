"""The in-process tier holds itself to its name: starting a process from tests/unit fails."""

from __future__ import annotations

import asyncio
import multiprocessing
import subprocess
import sys

import pytest

from tests.conftest import ProcessStartedInProcessTier


def test_this_test_is_marked_in_process(request: pytest.FixtureRequest) -> None:
    assert request.node.get_closest_marker("inprocess") is not None


def test_subprocess_is_refused_naming_the_test() -> None:
    with pytest.raises(ProcessStartedInProcessTier, match="test_subprocess_is_refused_naming_the_test"):
        subprocess.run([sys.executable, "-c", "pass"], check=False)


async def test_asyncio_subprocess_is_refused() -> None:
    with pytest.raises(ProcessStartedInProcessTier):
        await asyncio.create_subprocess_exec(sys.executable, "-c", "pass")


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_multiprocessing_is_refused(method: str) -> None:
    process = multiprocessing.get_context(method).Process(target=print)
    with pytest.raises(ProcessStartedInProcessTier):
        process.start()
