"""Load: many sessions streaming at once with cancels and renames; many sidecars on one store."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import pytest

from sidecar.features.titles.api import TitleStore
from tests.faults.figures import FIGURES
from tests.lsp.editor import open_editor

pytestmark = pytest.mark.load

SESSIONS = 20
CHUNKS = 10_000


def expected_text(n: int) -> str:
    return "".join(f"c{i} " for i in range(n))


async def test_concurrent_sessions_stream_cancel_and_rename(workspace: Path, state_dir: Path) -> None:
    rng = random.Random(20261130)
    full = expected_text(CHUNKS)
    async with open_editor("vscode", workspace, state_dir) as ed:
        sessions = [(await ed.command("acp.session.new"))["sessionId"] for _ in range(SESSIONS)]
        turns: dict[str, str] = {}
        cancelled: set[str] = set()
        renames: dict[str, str] = {}

        async def drive(index: int, sid: str) -> None:
            # Slow enough that a cancel can land mid-stream, fast enough to stay bounded.
            admitted = await ed.command("acp.prompt", {"text": f"#chunks={CHUNKS} #slow=0", "sessionId": sid})
            turns[admitted["turnId"]] = sid
            action = rng.random()
            if action < 0.3:
                await asyncio.sleep(rng.random() * 0.05)
                if (await ed.command("acp.cancel", {"sessionId": sid}))["cancelled"]:
                    cancelled.add(admitted["turnId"])
            if action > 0.5 or index % 4 == 0:
                title = f"Load session {index}"
                await ed.command("acp.session.rename", {"title": title, "sessionId": sid})
                renames[sid] = title

        await asyncio.gather(*(drive(i, sid) for i, sid in enumerate(sessions)))
        for turn_id in turns:
            await ed.wait_turn_end(turn_id, timeout=120)
        for sid in renames:
            await ed.wait_for(
                "acp/sessionInfo",
                lambda i, s=sid: i["sessionId"] == s and i["renameState"] not in ("pending", None),
                timeout=60,
            )
        await asyncio.sleep(0.3)
        lost = 0
        for turn_id in turns:
            ends = [t for t in ed.turn_events(turn_id) if t["state"] == "ended"]
            assert len(ends) == 1, (turn_id, ends)
            text = ed.text_of(turn_id)
            if ends[0]["stopReason"] == "cancelled":
                assert full.startswith(text)
            else:
                assert ends[0]["stopReason"] == "end_turn"
                lost += len(full) - len(text)
                assert text == full
        listed = {s["sessionId"]: s for s in (await ed.command("acp.session.list"))["sessions"]}
        for sid, title in renames.items():
            assert listed[sid]["title"] == title and listed[sid]["titleSource"] == "user"
        chunks = sum(
            1
            for u in ed.of("acp/sessionUpdate")
            if u["update"]["sessionUpdate"] == "agent_message_chunk" and u["turnId"] in turns
        )
        FIGURES["load: concurrent sessions"] += SESSIONS
        FIGURES["load: chunks streamed by the agent (upper bound)"] += SESSIONS * CHUNKS
        FIGURES["load: notifications carrying them"] += chunks
        FIGURES["load: turns cancelled mid-stream"] += sum(
            1 for t in turns if ed.turn_events(t)[-1]["stopReason"] == "cancelled"
        )
        FIGURES["load: renames landed"] += len(renames)
        FIGURES["load: characters lost"] += lost


SIDECARS = 8
# Per sidecar: 250 sessions, each titled by a turn (2 000 titles written concurrently into one
# store). 500 took 140 s alone and over the 180 s test timeout beside the editor suites.
UPDATES = 250


@pytest.mark.slow
async def test_many_sidecars_share_one_title_store(workspace: Path, state_dir: Path) -> None:
    async def one(index: int) -> dict[str, str]:
        made: dict[str, str] = {}
        async with open_editor("helix", workspace, state_dir) as ed:
            for n in range(UPDATES):
                sid = (await ed.command("acp.session.new"))["sessionId"]
                title = f"sidecar {index} update {n}"
                await ed.prompt_and_wait(f"#title {title}")
                made[sid] = title
        return made

    results = await asyncio.gather(*(one(i) for i in range(SIDECARS)))
    expected = {sid: title for made in results for sid, title in made.items()}
    assert len(expected) == SIDECARS * UPDATES
    store = TitleStore(state_dir / "titles.sqlite3")
    try:
        stored = {r.session_id: r.title for r in store.list("acp-sidecar-demo")}
    finally:
        store.close()
    missing = {sid for sid in expected if stored.get(sid) != expected[sid]}
    FIGURES["load: sidecars sharing one store"] += SIDECARS
    FIGURES["load: title updates written"] += len(expected)
    FIGURES["load: title updates lost"] += len(missing)
    assert not missing
    assert len(stored) == SIDECARS * UPDATES
