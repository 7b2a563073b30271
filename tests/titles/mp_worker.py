"""One of several processes hammering one title store (test_titles_store_mp).

Usage: mp_worker.py DB WORKER_ID DISTINCT SHARED_KEYS SHARED_UPDATES COUNTER GO_FILE
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from sidecar.features.titles.api import TitleRecord, TitleStore, apply_agent_info

AGENT = "mp-agent"


def main(argv: list[str]) -> int:
    db, wid = Path(argv[1]), int(argv[2])
    distinct, shared_keys, shared_updates, counter = (int(a) for a in argv[3:7])
    go = Path(argv[7])
    store = TitleStore(db)
    # Start together so the writes really contend.
    deadline = time.monotonic() + 30
    while not go.exists():
        if time.monotonic() > deadline:
            return 3
        time.sleep(0.005)

    def info(sid: str, **kw: Any) -> None:
        store.update(
            AGENT,
            sid,
            lambda rec: apply_agent_info(rec, agent=AGENT, session_id=sid, now=time.time(), **kw),
        )

    def increment(rec: TitleRecord | None) -> TitleRecord:
        n = (rec.meta or {}).get("n", 0) if rec is not None else 0
        return apply_agent_info(rec, agent=AGENT, session_id="counter", now=time.time(), meta={"n": n + 1})

    steps = max(distinct, shared_updates, counter)
    for j in range(steps):
        # Interleave the three kinds so every key sees contention.
        if j < distinct:
            info(f"w{wid}-{j}", title=f"worker {wid} #{j}", meta={"writer": wid, "j": j})
        if j < shared_updates:
            info(f"shared-{j % shared_keys}", meta={f"w{wid}": {str(j): j}})
        if j < counter:
            store.update(AGENT, "counter", increment)
    store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
