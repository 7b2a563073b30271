"""`python -m bench --quick`, end to end: every benchmark runs and loses nothing.

Benchmarks are never timed tests: this asserts that each one produced its
figures and that the text arrived whole, never how fast.
"""

from __future__ import annotations

import pytest

from bench.__main__ import BENCHES, final_line, run
from bench.common import BenchResult


@pytest.mark.slow
# Every quick benchmark in one test: on a loaded CI machine (3 workers on 2 CPUs) it took over 120 s.
@pytest.mark.timeout(420)
async def test_every_benchmark_runs_in_quick_mode_and_loses_nothing() -> None:
    printed: list[str] = []
    results = await run(list(BENCHES), quick=True, timeout=90, out=printed.append)

    failed = {name: r for name, r in results.items() if not isinstance(r, BenchResult)}
    assert not failed, failed
    done = {name: r for name, r in results.items() if isinstance(r, BenchResult)}
    for name, result in done.items():
        assert result.lost == [], (name, result.lost)
        assert result.table.count("\n") >= 2 and result.summary, name

    relay = done["throughput"].figures
    assert set(relay["rate"]) == {"pipe", "raw", "sdk", "sidecar"}
    assert all(rate > 0 for rate in relay["rate"].values())

    load = done["load"].figures
    assert 0 < load["notifications"] <= load["chunks"] / 20
    assert load["write_calls"] <= load["chunks"] / 20  # nothing written per chunk (editor, agent, store)

    latency = done["latency"].figures
    assert latency["samples"] == latency["count"]  # every stamp reached the editor
    assert latency["p50_ms"] > 0

    startup = done["startup"].figures
    assert startup["bare_ms"] > 0 and startup["initialize_ms"] > 0 and startup["idle_ms"] > 0

    titles = done["titles"].figures
    assert set(titles["growth"]) == {"reconcile", "reconcile again", "list", "session_info"}

    memory = done["memory"].figures["mib"]
    assert set(memory) == {"idle", "mid", "big", "many", "fresh", "loaded"}
    assert all(mib > 0 for mib in memory.values())

    compose = done["compose"].figures
    assert set(compose["trees"]) == {"git", "plain"}
    assert all(0 < tree["max_items"] <= 100 and tree["cold_ms"] > 0 for tree in compose["trees"].values())
    assert set(compose["growth"]) == {"every session", "one session", "no session"}
    # 100 seeded sessions and one new: all listed; 1 000 and one: the newest 1 000, more exist.
    listed = {n: (f["list: shown"], f["list: more"]) for n, f in compose["symbols"].items()}
    assert listed == {100: (101, False), 1000: (1000, True)}, listed
    assert compose["list_growth"] > 0

    changes = done["changes"].figures
    assert set(changes["per_change_us"]) == {"with 1 000 hunks", "baseline: no hunks"}
    assert changes["ratio"] > 0 and changes["publish_ms"] > 0

    replay = done["replay"].figures["sizes"]
    assert set(replay) == {"100", "1000"}
    for size, figures in replay.items():
        assert figures["notifications"] >= int(size) // 2  # the replay reached the editor
        assert figures["plugin_notifications"] < 10  # not with notify.replayUpdates false
    # Batched: neither the document nor the editor's messages cost a write per update.
    assert replay["1000"]["writes"] <= 1000 / 10

    line = final_line(results)
    assert line.startswith("bench: ") and "\n" not in line
    assert len(printed) == len(BENCHES)
