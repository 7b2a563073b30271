"""10. The agent's changes after they landed (issue 26), over a real LSP pipe.

A 10 000-line file the agent rewrote every tenth line of (1 000 hunks, written through
`fs/write_text_file` by the scripted test agent), open in the editor. The user types above every
hunk: K incremental `didChange`s alternately insert and delete a line at the top, so each one moves
all 1 000 hunks. Time per `didChange` = from the first change to the answer of a request sent right
after the last one (the sidecar handles notifications in order), divided by K. Baseline in the same
run: the same changes to an identical file the agent never touched (no hunks). Also: how long the
1 000 diagnostics take to reach the editor after one change (50 ms of it is the publish delay that
lets a burst of keystrokes move them once on screen).
"""

from __future__ import annotations

import asyncio
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from .common import PYTHON, ROOT, BenchResult, median, table
from .editor import SidecarEditor

SCRIPTED = str(ROOT / "tests" / "agents" / "scripted_agent.py")
LINES = 10_000
EVERY = 10  # one hunk every tenth line: 1 000 hunks
TARGET_RATIO = 3.0  # per didChange, against the same change to a file without hunks


def texts() -> tuple[str, str]:
    mine = [f"line {i} of the file, as the user wrote it\n" for i in range(LINES)]
    agent = [f"line {i} rewritten by the agent\n" if i % EVERY == 5 else line for i, line in enumerate(mine)]
    before, after = "".join(mine), "".join(agent)
    return before, after


class Diagnostics:
    def __init__(self, editor: SidecarEditor) -> None:
        self.by_uri: dict[str, tuple[int, list[Any]]] = {}
        self.changed = asyncio.Event()
        editor.client.handlers["textDocument/publishDiagnostics"] = self._on

    def _on(self, params: Any, now: int) -> None:
        self.by_uri[params["uri"]] = (now, params["diagnostics"])
        self.changed.set()

    async def wait(self, uri: str, pred: Any, timeout: float = 60) -> int:
        async with asyncio.timeout(timeout):
            while True:
                found = self.by_uri.get(uri)
                if found is not None and pred(found[1]):
                    return found[0]
                self.changed.clear()
                await self.changed.wait()


class Doc:
    def __init__(self, editor: SidecarEditor, path: Path) -> None:
        self.client = editor.client
        self.uri = path.as_uri()
        self.version = 1
        item = {"uri": self.uri, "languageId": "plaintext", "version": 1, "text": path.read_text()}
        self.client.notify("textDocument/didOpen", {"textDocument": item})

    def change(self, start: tuple[int, int], end: tuple[int, int], text: str) -> None:
        self.version += 1
        rng = {
            "start": {"line": start[0], "character": start[1]},
            "end": {"line": end[0], "character": end[1]},
        }
        self.client.notify(
            "textDocument/didChange",
            {
                "textDocument": {"uri": self.uri, "version": self.version},
                "contentChanges": [{"range": rng, "text": text}],
            },
        )

    async def burst(self, count: int) -> float:
        """Seconds per didChange: `count` changes above everything, then a request's answer."""
        started = time.perf_counter()
        for n in range(count):
            if n % 2 == 0:
                self.change((0, 0), (0, 0), "typed\n")
            else:
                self.change((0, 0), (1, 0), "")
        await self.client.command("acp.status")
        return (time.perf_counter() - started) / count


async def agent_changes(quick: bool) -> BenchResult:
    count = 100 if quick else 400
    rounds = 3 if quick else 5
    before, after = texts()
    with tempfile.TemporaryDirectory(prefix="acp-bench-changes-") as tmp:
        ws, state = Path(tmp, "ws"), Path(tmp, "state")
        ws.mkdir()
        state.mkdir()
        tracked, untouched = ws / "tracked.txt", ws / "untouched.txt"
        tracked.write_text(before)
        untouched.write_text(after)
        editor = await SidecarEditor.start(
            state, ws, agent=[PYTHON, SCRIPTED], options={"transcript": {"showOnPrompt": False}}
        )
        try:
            diagnostics = Diagnostics(editor)
            await editor.new_session()
            await editor.prompt(json.dumps([{"write": str(tracked), "content": after}]), 0, timeout=120)
            hunks = LINES // EVERY
            await diagnostics.wait(tracked.as_uri(), lambda d: len(d) == hunks)
            docs = {"with 1 000 hunks": Doc(editor, tracked), "baseline: no hunks": Doc(editor, untouched)}
            await editor.client.command("acp.status")
            per_change: dict[str, list[float]] = {name: [] for name in docs}
            for _ in range(rounds):
                for name, doc in docs.items():
                    per_change[name].append(await doc.burst(count))
            # One change, then the 1 000 diagnostics moved down a line on screen.
            doc = docs["with 1 000 hunks"]
            await diagnostics.wait(doc.uri, lambda d: len(d) == hunks and d[0]["range"]["start"]["line"] == 5)
            started = time.monotonic_ns()
            doc.change((0, 0), (0, 0), "one more\n")
            arrived = await diagnostics.wait(
                doc.uri, lambda d: len(d) == hunks and d[0]["range"]["start"]["line"] == 6
            )
            publish_ms = (arrived - started) / 1e6
            listed = await editor.client.command("acp.changes.list", doc.uri)
            kept = len(listed["files"][0]["hunks"]) if listed["files"] else 0
        finally:
            await editor.close()
    best = {name: min(values) * 1e6 for name, values in per_change.items()}
    med = {name: median(values) * 1e6 for name, values in per_change.items()}
    ratio = best["with 1 000 hunks"] / best["baseline: no hunks"]
    rows = [[name, f"{best[name]:.0f}", f"{med[name]:.0f}"] for name in per_change]
    text = table(
        ["10 000-line file", "us per didChange (best)", "median"],
        rows,
        f"Agent changes: {count} didChanges above every hunk, {rounds} rounds",
    )
    lost = [] if kept == hunks else [f"{hunks - kept} hunks lost while typing above them"]
    summary = (
        f"{best['with 1 000 hunks']:.0f} us per didChange with 1 000 hunks = {ratio:.2f}x the same file "
        f"without (target <= {TARGET_RATIO:.0f}x); 1 000 diagnostics on screen {publish_ms:.0f} ms "
        "after a change"
    )
    return BenchResult(
        "changes",
        text,
        summary,
        {"per_change_us": best, "median_us": med, "ratio": ratio, "publish_ms": publish_ms},
        ok=ratio <= TARGET_RATIO,
        lost=lost,
    )
