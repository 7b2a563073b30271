"""File operations off the loop: bounded in time, per session, and never keeping the process alive."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from sidecar.kernel.errors import SidecarError
from sidecar.kernel.file_ops import FileOps


async def test_results_and_errors_pass_through() -> None:
    ops = FileOps(timeout=10)
    assert await ops.run("s1", lambda a, b: a + b, 2, 3) == 5

    def boom() -> None:
        raise SidecarError(-32002, "file not found: /x")

    with pytest.raises(SidecarError, match="not found"):
        await ops.run("s1", boom)
    assert not ops.running


async def test_a_stuck_operation_times_out_and_starves_no_other_session() -> None:
    release = threading.Event()
    ops = FileOps(timeout=0.5, per_owner=2)
    try:
        started = time.monotonic()
        for _ in range(2):
            with pytest.raises(SidecarError, match=r"did not finish within 0\.5 s"):
                await ops.run("stuck", release.wait)
        assert ops.running["stuck"] == 2
        # The session with two stuck operations gets a clear error, not a hang...
        with pytest.raises(SidecarError, match="have not finished"):
            await ops.run("stuck", lambda: "never runs")
        assert time.monotonic() - started < 10
        # ...and another session is served at once.
        started = time.monotonic()
        assert await ops.run("other", lambda: "fine") == "fine"
        assert time.monotonic() - started < 0.4
    finally:
        release.set()
    # Once the stuck ones end, their slots come back.
    async with asyncio.timeout(10):
        while ops.running["stuck"]:
            await asyncio.sleep(0.01)
    assert await ops.run("stuck", lambda: "again") == "again"


async def test_waiting_for_a_slot_then_running() -> None:
    gate = threading.Event()
    ops = FileOps(timeout=10, per_owner=1)
    first = asyncio.ensure_future(ops.run("s", gate.wait))
    await asyncio.sleep(0.05)
    second = asyncio.ensure_future(ops.run("s", lambda: "second"))
    await asyncio.sleep(0.05)
    assert not second.done()
    gate.set()
    assert await first is True
    assert await second == "second"


STUCK_AT_EXIT = textwrap.dedent(
    """
    import asyncio, threading
    from sidecar.kernel.errors import SidecarError
    from sidecar.kernel.file_ops import FileOps

    async def main():
        ops = FileOps(timeout=0.2)
        try:
            await ops.run("s", threading.Event().wait)  # never returns
        except SidecarError as exc:
            print("answered:", exc.message, flush=True)

    asyncio.run(main())
    """
)


def test_a_stuck_operation_never_keeps_the_process_alive() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", STUCK_AT_EXIT], capture_output=True, text=True, timeout=30, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert "answered: the file operation did not finish" in proc.stdout
