"""Runs an agent and copies every frame the client sends it into a log file.

Usage: tee_agent.py LOG AGENT_CMD...  Lets tests validate what the sidecar writes.
"""

from __future__ import annotations

import subprocess
import sys
import threading


def main() -> int:
    log_path, *cmd = sys.argv[1:]
    child = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=sys.stdout.buffer)
    assert child.stdin is not None
    with open(log_path, "wb") as log:
        for line in sys.stdin.buffer:
            log.write(line)
            log.flush()
            try:
                child.stdin.write(line)
                child.stdin.flush()
            except BrokenPipeError:
                break
    child.stdin.close()
    return child.wait()


if __name__ == "__main__":
    threading.stack_size(1 << 20)
    raise SystemExit(main())
