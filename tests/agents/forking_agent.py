"""An agent whose helper processes try to outlive it: for the no-orphans tests.

At start it spawns helpers that ignore SIGTERM, SIGINT and SIGHUP and sleep
for an hour: one stays in the agent's process group, one leaves it (setsid),
one is a grandchild of a helper that exits at once (so it is re-parented).
Their pids are appended to the file named by $FORKING_AGENT_PIDS, one per
line, with "done" when all are running. Then it becomes the scripted agent;
with FORKING_AGENT_STUBBORN=1 it instead ignores SIGTERM, SIGINT and SIGHUP
itself and sleeps, never reading its stdin (an agent stuck for good).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

STUBBORN = (
    "import os, signal, sys, time\n"
    "for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP): signal.signal(s, signal.SIG_IGN)\n"
    "if 'setsid' in sys.argv: os.setsid()\n"
    "if 'double' in sys.argv:\n"
    "    if os.fork(): os._exit(0)\n"
    "with open(sys.argv[1], 'a') as fh: fh.write(f'{os.getpid()}\\n')\n"
    "time.sleep(3600)\n"
)


def main() -> None:
    pids_file = os.environ["FORKING_AGENT_PIDS"]
    helpers = []
    for how in ("group", "setsid", "double"):
        helpers.append(
            subprocess.Popen(
                [sys.executable, "-c", STUBBORN, pids_file, how],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
    helpers[2].wait()  # the "double" helper's parent exits; its child is re-parented
    while len(Path(pids_file).read_text().split()) < 3:
        time.sleep(0.01)
    with open(pids_file, "a") as fh:
        fh.write("done\n")
    if os.environ.get("FORKING_AGENT_STUBBORN") == "1":
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
        time.sleep(3600)
    scripted = Path(__file__).with_name("scripted_agent.py")
    os.execv(sys.executable, [sys.executable, str(scripted)])


if __name__ == "__main__":
    main()
