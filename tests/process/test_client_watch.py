"""The editor-process watch, in-process: pidfd and polling both notice an exit, once."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import pytest

from sidecar.lsp import client_watch
from sidecar.lsp.client_watch import ClientWatch, process_alive

SLEEPER = [sys.executable, "-c", "import time; time.sleep(600)"]


@pytest.mark.parametrize("use_pidfd", [True, False])
async def test_an_exit_is_noticed_once(use_pidfd: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if use_pidfd and not hasattr(os, "pidfd_open"):
        pytest.fail("this Linux/Python has no os.pidfd_open: run on Linux >= 5.3 with Python >= 3.9")
    monkeypatch.setattr(client_watch, "POLL_INTERVAL", 0.05)
    gone: list[int] = []
    watch = ClientWatch(gone.append, use_pidfd=use_pidfd)
    procs = [subprocess.Popen(SLEEPER) for _ in range(2)]  # noqa: ASYNC220 - started, never waited on here
    try:
        for proc in procs:
            watch.watch(proc.pid, "test")
        assert watch.watched == {p.pid for p in procs}
        await asyncio.sleep(0.2)
        assert gone == []
        procs[0].kill()  # not reaped yet: a zombie counts as exited
        async with asyncio.timeout(10):
            while not gone:
                await asyncio.sleep(0.01)
        assert gone == [procs[0].pid]
        procs[1].kill()
        await asyncio.sleep(0.3)
        assert gone == [procs[0].pid], "the callback fires once"
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
        await watch.aclose()
    assert watch.watched == set()


async def test_a_pid_that_is_not_there_is_not_watched(caplog: pytest.LogCaptureFixture) -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])  # noqa: ASYNC220
    await asyncio.to_thread(proc.wait)
    assert not process_alive(proc.pid)
    gone: list[int] = []
    watch = ClientWatch(gone.append)
    watch.watch(proc.pid, "initialize.processId")
    watch.watch(0, "initialize.processId")
    watch.watch(os.getpid(), "initialize.processId")
    await asyncio.sleep(0.1)
    assert gone == [] and watch.watched == set()
    assert "another PID namespace" in caplog.text
    await watch.aclose()
