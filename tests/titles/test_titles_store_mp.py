"""Several sidecar processes writing one title store at once: nothing lost."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sidecar.features.titles.api import TitleStore

ROOT = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).with_name("mp_worker.py")
AGENT = "mp-agent"

PROCESSES = 8
DISTINCT = 500  # updates of the worker's own sessions
SHARED_KEYS = 5
SHARED_UPDATES = 50  # merges into _meta of sessions every worker writes
COUNTER = 100  # read-increment-write of one row every worker writes


@pytest.mark.load
def test_eight_processes_lose_nothing(tmp_path: Path) -> None:
    db = tmp_path / "titles.db"
    go = tmp_path / "go"
    TitleStore(db).close()  # create and migrate once; workers also cope alone
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    args = [str(a) for a in (db, 0, DISTINCT, SHARED_KEYS, SHARED_UPDATES, COUNTER, go)]
    procs = []
    for wid in range(PROCESSES):
        args[1] = str(wid)
        procs.append(
            subprocess.Popen(
                [sys.executable, str(WORKER), *args],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    time.sleep(0.5)  # let them import and open the store
    go.touch()
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err

    with TitleStore(db) as store:
        rows = {r.session_id: r for r in store.list(AGENT)}
        own = [r for sid, r in rows.items() if sid.startswith("w")]
        assert len(own) == PROCESSES * DISTINCT == 4000
        for wid in range(PROCESSES):
            for j in range(DISTINCT):
                rec = rows[f"w{wid}-{j}"]
                assert rec.title == f"worker {wid} #{j}"
                assert rec.meta == {"writer": wid, "j": j}

        per_key = SHARED_UPDATES // SHARED_KEYS
        for k in range(SHARED_KEYS):
            meta = rows[f"shared-{k}"].meta
            assert meta is not None
            assert meta == {
                f"w{wid}": {str(j): j for j in range(SHARED_UPDATES) if j % SHARED_KEYS == k}
                for wid in range(PROCESSES)
            }
            assert all(len(v) == per_key for v in meta.values())

        counter = rows["counter"].meta
        assert counter == {"n": PROCESSES * COUNTER}
        assert len(rows) == 4000 + SHARED_KEYS + 1
