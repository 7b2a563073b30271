"""Several processes on one transcript: nothing torn, nothing lost, nothing twice; and writers
killed in the middle of a write never damage what was written before."""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sidecar.features.conversation.store import ConversationStore
from tests.unit.transcripts.helpers import assert_well_formed

ROOT = Path(__file__).resolve().parents[2]
WRITER = Path(__file__).with_name("mp_writer.py")
AGENT, SESSION = "mp-agent", "shared-session"
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}


def start(
    state: Path, worker: int, count: int, go: Path, max_bytes: int, payload: int, slow: bool = False
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            str(WRITER),
            str(state),
            str(worker),
            str(count),
            str(go),
            str(max_bytes),
            str(payload),
        ],
        env={**ENV, "MP_SLOW_WRITES": "1" if slow else "0"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.load
def test_four_processes_append_to_one_session(tmp_path: Path) -> None:
    workers, turns = 4, 25
    go = tmp_path / "go"
    procs = [start(tmp_path, w, turns, go, 64 * 1024 * 1024, 100) for w in range(workers)]
    time.sleep(0.5)
    go.touch()
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    text = ConversationStore(tmp_path).read(AGENT, SESSION)
    assert text is not None
    assert_well_formed(text)
    for w in range(workers):
        for i in range(turns):
            assert text.count(f"prompt {w}-{i}\n") == 1, (w, i)
            for part in range(3):
                assert text.count(f"chunk {w}-{i}-{part} ") == 1, (w, i, part)
    # Each writer's pieces are in its own order.
    for w in range(workers):
        positions = [text.index(f"chunk {w}-{i}-{p} ") for i in range(turns) for p in range(3)]
        assert positions == sorted(positions)


@pytest.mark.fault
def test_killed_writers_never_damage_earlier_content(tmp_path: Path) -> None:
    rng = random.Random(12)
    go = tmp_path / "go"
    go.touch()
    committed: list[str] = []
    sizes: dict[str, int] = {}
    store = ConversationStore(tmp_path)
    kills = repairs = rewrites = 0
    for round_number in range(12):
        # A small bound makes some appends whole rewrites (trims) as well.
        payload = rng.choice([8_000, 30_000, 90_000])
        bound = rng.choice([256 * 1024, 4 * 1024 * 1024])
        proc = start(tmp_path, round_number, 1000, go, bound, payload, slow=True)
        assert proc.stdout is not None
        seen: list[str] = []
        wanted = rng.randint(1, 8)
        while True:  # some appends, then kill it in the middle of the next write
            line = proc.stdout.readline()
            assert line, proc.stderr.read() if proc.stderr else "writer ended"
            if line.startswith("committed"):
                seen.append(line.split()[1])
            elif len(seen) >= wanted:
                break
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        kills += 1
        rest = proc.stdout.read()
        seen += [line.split()[1] for line in rest.splitlines() if line.startswith("committed")]
        text = store.read(AGENT, SESSION) or ""
        assert "\x00" not in text
        sizes.update(dict.fromkeys(seen, payload))
        committed += seen
        # What was acknowledged before the kill is in the file: all of it, but for the oldest
        # part that trims took from the head.
        present = [f"chunk {name} {'x' * sizes[name]}\n" in text for name in committed]
        assert present[-1], (committed[-1], text[-2000:])
        first = present.index(True)
        assert all(present[first:]), [n for n, p in zip(committed, present, strict=True) if not p][-5:]
        assert first == 0 or re.search(r"_… \d+ earlier bytes trimmed …_", text)
        # The next sidecar repairs what the kill left: a document cut short (a write in place) or
        # a temp file (a whole rewrite, which left the document as it was).
        folder = store.path(AGENT, SESSION).parent
        temp_files = [p for p in folder.iterdir() if p.suffix == ".tmp"]
        if ConversationStore(tmp_path).ensure(AGENT, SESSION) is not None:
            repairs += 1
        rewrites += bool(temp_files)
        assert not [p for p in folder.iterdir() if p.suffix == ".tmp"]
        repaired = store.read(AGENT, SESSION)
        assert repaired is not None
        assert_well_formed(repaired)
        assert len(repaired.encode()) <= 4 * 1024 * 1024
    assert kills == 12
    # Nearly every kill really interrupted a write (one may land just after its last piece).
    assert repairs >= 3 and repairs + rewrites >= 9, (repairs, rewrites)
    print(f"{kills} writers killed mid-write: {repairs} documents repaired, {rewrites} rewrites abandoned")
