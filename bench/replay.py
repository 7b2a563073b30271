"""9. Loading a long session: how the cost of `acp.session.load` grows with the history.

The replay agent (`bench/agents/replay_agent.py`) replays a synthetic history of
N updates on `session/load`. For N = 1 000, 10 000 and 100 000 (quick: 100 and
1 000), over a real LSP pipe, a fresh sidecar each time:

- the load's answer and the conversation document complete on disk (its last
  words written), from the command's send;
- the notifications the editor received during the load, the sidecar's CPU
  time and its peak RSS (VmHWM), and its write(2) calls (the document is
  written in bounded batches, never once per update);
- the same as the plugins ask for it (`notify.replayUpdates: false`: the history goes
  to the document only, no `acp/sessionUpdate` per replayed update);
- the baseline: a bare JSON parser in this process reading the same agent's
  frames for the same load (`json.loads` of each line until the answer).

Each round runs every size and the baseline once, interleaved (the host's speed
drifts over minutes); the figures are the medians of the rounds.

Targets: 10x the history costs at most 11x (load's answer and document), and
the largest replay completes within 2x the bare parser's time as the plugins
load it.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import sys
import time
from pathlib import Path
from urllib.parse import unquote, urlparse

from .common import (
    BENCH_DIR,
    STREAM_LIMIT,
    BenchResult,
    median,
    table,
    temp_state,
    vm_hwm_kib,
    write_calls,
)
from .editor import SidecarEditor

REPLAY_AGENT = [sys.executable, str(BENCH_DIR / "agents" / "replay_agent.py")]
LAST_WORDS = b"END-OF-REPLAY"
TAIL_BYTES = 64 * 1024  # the last words are in the last answer, before the prompt area
GROWTH_TARGET = 11.0
PARSER_TARGET = 2.0
RUNS = 5


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def bare_parser(count: int) -> float:
    """Seconds from `session/load` sent to its answer parsed, every frame through `json.loads`."""
    proc = await asyncio.create_subprocess_exec(
        *REPLAY_AGENT,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        limit=STREAM_LIMIT,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:

        async def call(msg_id: int, method: str, params: dict[str, object]) -> int:
            frame = {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write(json.dumps(frame).encode() + b"\n")
            await proc.stdin.drain()
            frames = 0
            while True:
                msg = json.loads(await proc.stdout.readline())
                frames += 1
                if msg.get("id") == msg_id:
                    return frames

        await call(1, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        started = time.perf_counter()
        frames = await call(2, "session/load", {"sessionId": f"replay-{count}", "cwd": "/", "mcpServers": []})
        elapsed = time.perf_counter() - started
        if frames < count + 1:
            raise RuntimeError(f"bare parser: {frames} frames for a replay of {count}")
        return elapsed
    finally:
        proc.stdin.close()
        await proc.wait()


def _holds_last_words(path: Path) -> bool:
    """Whether the document's end holds the replay's last words. Only its last bytes are read:
    reading megabytes every 2 ms took a share of the machine from the sidecar being measured."""
    try:
        with path.open("rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            fh.seek(max(0, size - TAIL_BYTES))
            return LAST_WORDS in fh.read()
    except OSError:
        return False


async def sidecar_load(count: int, replay_updates: bool = True) -> dict[str, float]:
    """One fresh sidecar loading `replay-N`: times, notifications, CPU, memory, writes.
    `replay_updates` False: as the plugins ask (`notify.replayUpdates`), no notification per update."""
    options = {"notify": {"replayUpdates": replay_updates}}
    async with temp_state() as (state, ws):
        editor = await SidecarEditor.start(state, ws, agent=REPLAY_AGENT, wait_idle=False, options=options)
        try:
            client = editor.client
            # The agent starts on first use: start it first, so the load is measured alone.
            await client.command("acp.session.new", {"cwd": str(ws)})
            before_notes = sum(client.counts.values())
            cpu0, writes0 = _cpu_seconds(editor.pid), write_calls(editor.pid) or 0
            started = time.perf_counter()
            await client.command("acp.session.load", {"sessionId": f"replay-{count}"}, timeout=600)
            answered = time.perf_counter() - started
            found = await client.command("acp.session.transcript", {"sessionId": f"replay-{count}"})
            path = Path(unquote(urlparse(found["uri"]).path))
            while True:
                if _holds_last_words(path):
                    break
                if time.perf_counter() - started > 600:
                    raise TimeoutError(f"the document of replay-{count} never held its last words")
                await asyncio.sleep(0.002)
            complete = time.perf_counter() - started
            return {
                "answered_s": answered,
                "complete_s": complete,
                "notifications": sum(client.counts.values()) - before_notes,
                "cpu_s": _cpu_seconds(editor.pid) - cpu0,
                "writes": (write_calls(editor.pid) or 0) - writes0,
                "peak_mib": (vm_hwm_kib(editor.pid) or 0) / 1024,
                "document_kib": path.stat().st_size / 1024,
            }
        finally:
            await editor.close()


async def replay(quick: bool) -> BenchResult:
    sizes = (100, 1_000) if quick else (1_000, 10_000, 100_000)
    runs = 1 if quick else RUNS
    rows: list[list[object]] = []
    figures: dict[int, dict[str, float]] = {}
    # Rounds outside, sizes and baseline inside: the host's speed drifts over minutes, and each
    # ratio (to the parser, from one size to the next) compares runs of the same minutes.
    parsers: dict[int, list[float]] = {count: [] for count in sizes}
    loaded: dict[int, list[dict[str, float]]] = {count: [] for count in sizes}
    quieted: dict[int, list[dict[str, float]]] = {count: [] for count in sizes}
    for _ in range(runs):
        for count in sizes:
            parsers[count].append(await bare_parser(count))
            loaded[count].append(await sidecar_load(count))
            quieted[count].append(await sidecar_load(count, replay_updates=False))
    for count in sizes:
        parser, loads, quiet = median(parsers[count]), loaded[count], quieted[count]
        best = {key: median([run[key] for run in loads]) for key in loads[0]}
        best["parser_s"] = parser
        figures[count] = best
        plugin = {key: median([run[key] for run in quiet]) for key in quiet[0]}
        best["plugin_complete_s"] = plugin["complete_s"]
        best["plugin_answered_s"] = plugin["answered_s"]
        best["plugin_notifications"] = plugin["notifications"]
        best["plugin_cpu_s"] = plugin["cpu_s"]
        rows.append(
            [
                count,
                best["answered_s"] * 1000,
                best["complete_s"] * 1000,
                parser * 1000,
                f"{best['complete_s'] / parser:.2f}x",
                int(best["notifications"]),
                int(best["writes"]),
                best["cpu_s"] * 1000,
                best["peak_mib"],
                best["document_kib"],
                plugin["answered_s"] * 1000,
                plugin["complete_s"] * 1000,
                f"{plugin['complete_s'] / parser:.2f}x",
                int(plugin["notifications"]),
                plugin["cpu_s"] * 1000,
            ]
        )
    growth: dict[str, float] = {}
    for small, big in itertools.pairwise(sizes):
        for key in ("answered_s", "complete_s", "plugin_answered_s", "plugin_complete_s"):
            growth[f"{key} {small}->{big}"] = figures[big][key] / figures[small][key]
    largest = figures[sizes[-1]]
    vs_parser = largest["complete_s"] / largest["parser_s"]
    plugins_vs_parser = largest["plugin_complete_s"] / largest["parser_s"]
    # The editors' plugins (what users run) ask for no notification per replayed update.
    ok = max(growth.values()) <= GROWTH_TARGET and plugins_vs_parser <= PARSER_TARGET
    text = table(
        [
            "updates",
            "answer ms",
            "document ms",
            "bare parser ms",
            "document / parser",
            "notifications",
            "write calls",
            "sidecar CPU ms",
            "peak RSS MiB",
            "document KiB",
            "plugins: answer ms",
            "plugins: document ms",
            "plugins: / parser",
            "plugins: notifications",
            "plugins: CPU ms",
        ],
        rows,
        f"9. Loading a long session (median of {runs}; a fresh sidecar each run)",
    )
    text += "\n" + "\n".join(f"growth {name}: {value:.2f}x" for name, value in growth.items())
    summary = (
        f"{sizes[-1]:,} updates: document complete in {largest['plugin_complete_s'] * 1000:.0f} ms = "
        f"{plugins_vs_parser:.2f}x a bare parser as the plugins load (target <= {PARSER_TARGET}x), "
        f"{vs_parser:.2f}x with an acp/sessionUpdate per update; 10x history costs at most "
        f"{max(growth.values()):.2f}x (target <= {GROWTH_TARGET}x)"
    )
    return BenchResult(
        "replay",
        text,
        summary,
        {
            "sizes": {str(k): v for k, v in figures.items()},
            "growth": growth,
            "vs_parser": vs_parser,
            "plugins_vs_parser": plugins_vs_parser,
        },
        ok=ok,
    )
