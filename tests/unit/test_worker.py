"""The kernel's worker for heavy work: off the loop, bounded in threads and time, cancellable,
awaited at close."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from sidecar.kernel.worker import Worker, WorkStopped, WorkTimeout, checkpoint


def _until_stopped(started: threading.Event, stopped: threading.Event) -> str:
    started.set()
    try:
        while True:
            checkpoint()
            time.sleep(0.001)
    except WorkStopped:
        stopped.set()
        raise


async def _until_running(worker: Worker, count: int) -> None:
    for _ in range(1000):
        if worker.running == count:
            return
        await asyncio.sleep(0.005)
    raise AssertionError(f"{worker.running} jobs running, not {count}")


async def test_a_job_runs_off_the_loop_and_answers() -> None:
    worker = Worker()
    where = await worker.run(lambda: threading.current_thread())
    assert where is not threading.main_thread()
    assert await worker.run(sum, [1, 2, 3]) == 6
    with pytest.raises(ZeroDivisionError):
        await worker.run(lambda: 1 / 0)
    await worker.aclose()


async def test_at_most_threads_jobs_run_at_once() -> None:
    worker = Worker(threads=2)
    lock = threading.Lock()
    now = peak = 0
    release = threading.Event()

    def job() -> None:
        nonlocal now, peak
        with lock:
            now += 1
            peak = max(peak, now)
        release.wait(5)
        with lock:
            now -= 1

    tasks = [asyncio.ensure_future(worker.run(job)) for _ in range(5)]
    await _until_running(worker, 2)
    await asyncio.sleep(0.02)
    assert worker.running == 2  # the three others wait on the loop, not in threads
    release.set()
    await asyncio.gather(*tasks)
    assert peak == 2
    await worker.aclose()


async def test_a_job_past_its_time_is_told_to_stop_and_its_thread_counted_until_it_does() -> None:
    worker = Worker(threads=1)
    started, stopped = threading.Event(), threading.Event()
    with pytest.raises(WorkTimeout):
        await worker.run(_until_stopped, started, stopped, timeout=0.1)
    assert started.is_set()
    assert await asyncio.to_thread(stopped.wait, 5)
    await _until_running(worker, 0)  # its thread ends: the slot is free again
    assert await worker.run(lambda: 7) == 7
    await worker.aclose()


async def test_the_wait_for_a_thread_counts_in_the_time() -> None:
    worker = Worker(threads=1)
    release = threading.Event()
    busy = asyncio.ensure_future(worker.run(release.wait, 5))
    await _until_running(worker, 1)
    with pytest.raises(WorkTimeout, match="no free worker thread"):
        await worker.run(lambda: 1, timeout=0.05)
    release.set()
    assert await busy is True
    await worker.aclose()


async def test_a_cancelled_caller_stops_its_job() -> None:
    worker = Worker()
    started, stopped = threading.Event(), threading.Event()
    task = asyncio.ensure_future(worker.run(_until_stopped, started, stopped))
    assert await asyncio.to_thread(started.wait, 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await asyncio.to_thread(stopped.wait, 5)
    await worker.aclose()
    assert worker.running == 0


async def test_close_stops_and_awaits_the_running_jobs_and_refuses_new_ones() -> None:
    worker = Worker()
    started, stopped = threading.Event(), threading.Event()
    task = asyncio.ensure_future(worker.run(_until_stopped, started, stopped))
    assert await asyncio.to_thread(started.wait, 5)
    await worker.aclose()
    assert stopped.is_set() and worker.running == 0  # awaited: its thread has ended
    with pytest.raises(WorkStopped):
        await task
    with pytest.raises(RuntimeError, match="closed"):
        await worker.run(lambda: 1)


async def test_close_abandons_a_job_that_does_not_stop_after_its_grace() -> None:
    worker = Worker()
    release = threading.Event()
    task = asyncio.ensure_future(worker.run(release.wait, 5))
    await _until_running(worker, 1)
    began = time.monotonic()
    await worker.aclose(grace=0.1)
    assert time.monotonic() - began < 2
    release.set()
    assert await task is True


def test_checkpoint_outside_a_job_does_nothing() -> None:
    checkpoint()
