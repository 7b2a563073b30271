"""What the editor is shown of a title is already saved: a kill -9 mid-burst loses nothing it saw."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.faults.figures import FIGURES
from tests.lsp.editor import open_editor
from tests.lsp.test_permissions_files import SCRIPTED_ARGS

pytestmark = pytest.mark.fault

SESSIONS = 3
BURST = 800


def _index(title: object) -> int:
    """The burst index of a title "S<session> T<index>"; -1 for anything else (the fallback title)."""
    found = re.fullmatch(r"S\d+ T(\d+)", title) if isinstance(title, str) else None
    return int(found.group(1)) if found else -1


def _shown(notes: list[tuple[float, str, Any]], session_id: str) -> int:
    best = -1
    for _, method, params in notes:
        if method in ("acp/sessionInfo", "acp/status") and params.get("sessionId") == session_id:
            best = max(best, _index(params.get("title")))
    return best


def _stored(db: Path) -> dict[str, int]:
    conn = sqlite3.connect(db)
    try:
        return {sid: _index(title) for sid, title in conn.execute("SELECT session_id, title FROM titles")}
    finally:
        conn.close()


@pytest.mark.parametrize("kill_at", [BURST // 2, BURST - 1])
async def test_kill_9_after_a_title_burst_loses_nothing_shown(
    workspace: Path, state_dir: Path, kill_at: int
) -> None:
    async with open_editor("vscode", workspace, state_dir, extra_args=SCRIPTED_ARGS) as ed:
        sids = [(await ed.command("acp.session.new"))["sessionId"] for _ in range(SESSIONS)]
        for number, sid in enumerate(sids):
            steps = [
                {"update": {"sessionUpdate": "session_info_update", "title": f"S{number} T{i}"}}
                for i in range(BURST)
            ]
            await ed.command("acp.prompt", {"text": json.dumps(steps), "sessionId": sid})
        target = sids[0]
        await ed.wait_for(
            "acp/sessionInfo",
            lambda i: i["sessionId"] == target and _index(i["title"]) >= kill_at,
            timeout=120,
        )
        server = ed.client._server
        assert server is not None
        os.kill(server.pid, signal.SIGKILL)
        async with asyncio.timeout(10):
            await server.wait()
        await asyncio.sleep(0.5)  # the editor reads what was already in the pipe
        shown = {sid: _shown(ed.notes, sid) for sid in sids}
    stored = _stored(state_dir / "titles.sqlite3")
    behind = {sid: shown[sid] - stored.get(sid, -1) for sid in sids if shown[sid] > stored.get(sid, -1)}
    FIGURES["titles: updates in bursts before a kill -9"] += SESSIONS * BURST
    FIGURES["titles: lost (shown to the editor, not stored after the kill -9)"] += sum(behind.values())
    assert shown[target] >= kill_at
    assert not behind, (
        f"stored titles behind what the editor was shown: {behind} (shown {shown}, stored {stored})"
    )
