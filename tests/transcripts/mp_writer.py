"""One of several sidecar processes writing one session's transcript (test_store_mp).

Usage: mp_writer.py STATE WORKER COUNT GO_FILE MAX_BYTES PAYLOAD

Writes COUNT turns: a prompt "prompt W-I", then an answer streamed in three appends
("chunk W-I-0" ...), inside a code block half the time. After each append it prints
"committed W-I-K" (K = 0..3) so that a test that kills it knows what was written.

With MP_SLOW_WRITES=1 every file write goes out in small pieces with pauses, and "tearing" is
printed after the first piece: a test that kills the process then kills it in mid-write, as a
crash on a slow disk would.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from sidecar.features.conversation import appending, locked_document
from sidecar.features.conversation.render import Renderer
from sidecar.features.conversation.store import ConversationStore
from sidecar.kernel import state_files as files

AGENT, SESSION = "mp-agent", "shared-session"


def slow_write_all(fd: int, data: bytes, position: int) -> None:
    for offset in range(0, len(data), 4096):
        os.pwrite(fd, data[offset : offset + 4096], position + offset)
        if offset == 0 and len(data) > 4096:
            print("tearing", flush=True)
        time.sleep(0.002)


def main(argv: list[str]) -> int:
    if os.environ.get("MP_SLOW_WRITES") == "1":
        files.write_all = slow_write_all  # type: ignore[assignment]
        appending.write_all = slow_write_all  # type: ignore[assignment]
        locked_document.write_all = slow_write_all  # type: ignore[assignment]
    state, worker, count = Path(argv[1]), int(argv[2]), int(argv[3])
    go, max_bytes, payload = Path(argv[4]), int(argv[5]), int(argv[6])
    store = ConversationStore(state, max_bytes=max_bytes, durable=True)
    deadline = time.monotonic() + 60
    while not go.exists():
        if time.monotonic() > deadline:
            return 3
        time.sleep(0.005)
    renderer = Renderer()
    filler = "x" * payload
    for index in range(count):
        name = f"{worker}-{index}"
        renderer.prompt([{"type": "text", "text": f"prompt {name}"}])
        for part in range(3):
            text = f"chunk {name}-{part} {filler}\n"
            if part == 0 and index % 2:
                text = "```\n" + text
            renderer.update(
                {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}
            )
            if part == 2:
                renderer.turn_ended("end_turn")
            batch = renderer.take()
            assert batch is not None
            store.append(AGENT, SESSION, batch)
            print(f"committed {name}-{part}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
