"""A long answer in the VS Code chat view (issue 28, item 4): the cost of one flush as it grows.

The real extension in code-server (VS Code 1.139) with headless Chromium, the demo agent
streaming one answer of about 1 MB (``#answer=BYTES #para=6``: paragraphs, every fifth a code
block) at a steady pace. The extension's perf probe (``ACP_SIDECAR_VSCODE_PERF``,
editor-configs/vscode/src/perf.ts) writes the cost of each flush: in the extension host (reading
and parsing the transcript file's new piece, rendering, the message to the webview) and in the
webview (applying the change, with the layout it forces), the extension host's longest event-loop
delay between two flushes (the one before the first flush, the host's own start, is reported
apart) and the webview's longest task.

Figures: the median cost per flush while the document is about 10 KB, 100 KB and 1 MB, and the
ratio 1 MB / 10 KB (the baseline is the 10 KB window of the same run; target: at most 1.5x), the
longest stall (target: never over 50 ms). In --quick mode it does not run (it needs code-server
and a build of the extension, minutes): the result says so.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from .common import BenchResult, median, not_run_quick, percentile, table

ANSWER = 1_050_000
PIECE = 600
SLOW_MS = 25
# Windows of the document's size (bytes) where flushes are sampled, as (label, low, high).
WINDOWS = (("10 KB", 5_000, 40_000), ("100 KB", 90_000, 140_000), ("1 MB", 980_000, 1_060_000))
TARGET_RATIO = 1.5
TARGET_STALL_MS = 50.0


def _run(work: Path) -> list[dict[str, Any]]:
    """Streams the answer in a real code-server; returns the probe's records."""
    from tests.editors.vscode.build import build_vsix
    from tests.editors.vscode.harness import CodeServer, Driver, find_tools
    from tests.editors.vscode.workbench import Workbench

    perf = work / "perf.jsonl"

    class ProbedCodeServer(CodeServer):
        def env(self) -> dict[str, str]:
            return {**super().env(), "ACP_SIDECAR_VSCODE_PERF": str(perf)}

    tools = find_tools()
    build = build_vsix(work / "build")
    ws = work / "ws"
    ws.mkdir()
    (ws / "README.md").write_text("# A workspace for the bench\n")
    server = ProbedCodeServer(tools, work / "code-server", ws)
    server.install_extension(build.vsix)
    try:
        server.start()
        driver = Driver(tools, server.root / "driver.log")
        try:
            bench = Workbench(server, driver, work / "artifacts")
            bench.open()
            bench.open_chat()
            bench.chat_send(f"Bench #answer={ANSWER} #para=6 #piece={PIECE} #slow={SLOW_MS}")
            bench.wait_conversation("END OF ANSWER", timeout=600.0)
            bench.wait_status(r"· idle$", timeout=120.0)
            time.sleep(1.0)  # the probe writes every 0.25 s
        finally:
            driver.close()
    finally:
        server.cleanup()
    return [json.loads(line) for line in perf.read_text().splitlines() if line.strip()]


def summarize(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Per window and side: median and p90 ms per flush; the longest stalls; the ratios."""
    figures: dict[str, Any] = {"windows": {}, "flushes": {"host": 0, "view": 0}}
    for side in ("host", "view"):
        figures["flushes"][side] = sum(1 for r in records if r["side"] == side)
    for label, low, high in WINDOWS:
        row: dict[str, Any] = {}
        for side in ("host", "view"):
            values = [r["ms"] for r in records if r["side"] == side and low <= r["size"] < high]
            row[side] = {"n": len(values), "median": median(values), "p90": percentile(values, 90)}
        figures["windows"][label] = row
    first, last = WINDOWS[0][0], WINDOWS[-1][0]
    figures["ratio"] = {
        side: figures["windows"][last][side]["median"] / figures["windows"][first][side]["median"]
        for side in ("host", "view")
    }
    # The first host record's loop delay covers everything before the first flush (the extension
    # host starting, the extension activating, the chat opening: 50-170 ms quiet), not the answer.
    host = [r for r in records if r["side"] == "host"]
    figures["host_start_loop_ms"] = host[0].get("loop", 0.0) if host else 0.0
    figures["host_loop_max_ms"] = max((r.get("loop", 0.0) for r in host[1:]), default=0)
    figures["view_long_task_max_ms"] = max(
        (r.get("longTask", 0.0) for r in records if r["side"] == "view"), default=0
    )
    figures["view_flush_max_ms"] = max((r["ms"] for r in records if r["side"] == "view"), default=0)
    figures["host_flush_max_ms"] = max((r["ms"] for r in records if r["side"] == "host"), default=0)
    return figures


async def vscode_flush(quick: bool) -> BenchResult:
    if quick:
        return not_run_quick("vscode-flush", "needs code-server and a build (minutes)")
    with tempfile.TemporaryDirectory(prefix="acp-bench-vscode-") as tmp:
        records = await asyncio.to_thread(_run, Path(tmp))
    if os.environ.get("ACP_SIDECAR_BENCH_KEEP"):
        Path(os.environ["ACP_SIDECAR_BENCH_KEEP"]).write_text(json.dumps(records))
    f = summarize(records)
    rows = []
    for label, _, _ in WINDOWS:
        w = f["windows"][label]
        rows.append(
            [
                label,
                f"{w['host']['median']:.2f} (p90 {w['host']['p90']:.2f}, n {w['host']['n']})",
                f"{w['view']['median']:.2f} (p90 {w['view']['p90']:.2f}, n {w['view']['n']})",
            ]
        )
    rows.append(["1 MB / 10 KB", f"{f['ratio']['host']:.2f}x", f"{f['ratio']['view']:.2f}x"])
    stall = max(f["host_loop_max_ms"], f["view_long_task_max_ms"], f["view_flush_max_ms"])
    ok = max(f["ratio"].values()) <= TARGET_RATIO and stall <= TARGET_STALL_MS
    rows.append(
        [
            "longest",
            f"flush {f['host_flush_max_ms']:.1f}, loop delay {f['host_loop_max_ms']:.1f}"
            f" (before the first flush {f['host_start_loop_ms']:.0f})",
            f"flush {f['view_flush_max_ms']:.1f}, long task {f['view_long_task_max_ms']:.1f}",
        ]
    )
    return BenchResult(
        name="vscode-flush",
        table=table(
            ["document", "extension host ms/flush", "webview ms/flush"],
            rows,
            title=f"VS Code chat, one {ANSWER // 1000} KB answer ({PIECE}-char pieces, {SLOW_MS} ms apart)",
        ),
        summary=(
            f"per flush at 1 MB vs 10 KB: host {f['ratio']['host']:.2f}x, webview {f['ratio']['view']:.2f}x "
            f"(target <= {TARGET_RATIO}x); longest stall {stall:.0f} ms (target <= {TARGET_STALL_MS:.0f}); "
            f"{'met' if ok else 'MISSED'}"
        ),
        figures=f,
        ok=ok,
    )
