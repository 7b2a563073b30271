"""A terminal command that tries to outlive its terminal: for the no-orphans tests of terminal/*.

    stubborn_command.py PIDS_FILE

It ignores SIGTERM, SIGINT and SIGHUP and starts three helpers that do too: one in its process
group, one that leaves it (setsid), one re-parented (its parent exits at once). Every pid (its own
first) is appended to PIDS_FILE, then "done". Then it prints a line every 0.1 s, forever; the
helpers keep its output pipe open.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

HELPER = (
    "import os, signal, sys, time\n"
    "for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP): signal.signal(s, signal.SIG_IGN)\n"
    "if 'setsid' in sys.argv: os.setsid()\n"
    "if 'double' in sys.argv:\n"
    "    if os.fork(): os._exit(0)\n"
    "with open(sys.argv[1], 'a') as fh: fh.write(f'{os.getpid()}\\n')\n"
    "time.sleep(3600)\n"
)


def main() -> None:
    pids_file = sys.argv[1]
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    with open(pids_file, "a") as fh:
        fh.write(f"{os.getpid()}\n")
    helpers = [
        subprocess.Popen([sys.executable, "-c", HELPER, pids_file, how], stdin=subprocess.DEVNULL)
        for how in ("group", "setsid", "double")
    ]
    helpers[2].wait()
    while len(Path(pids_file).read_text().split()) < 4:
        time.sleep(0.01)
    with open(pids_file, "a") as fh:
        fh.write("done\n")
    tick = 0
    while True:
        print(f"stubborn tick {tick}", flush=True)
        tick += 1
        time.sleep(0.1)


if __name__ == "__main__":
    main()
