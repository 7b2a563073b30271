"""1. Relay throughput and 3. editor load.

Throughput: the demo agent streams N chunks (`#chunks=N`) as fast as it can;
we time from the prompt until the client holds all of the text, for
  (a) the limit: the same frames, recorded, through `cat` into a JSON-lines
      parser; and the demo agent read by that same bare parser,
  (b) a minimal client on the ACP Python SDK talking to the demo agent,
  and the sidecar: our minimal LSP client <-> acp-sidecar <-> demo agent.

Editor load: a burst of chunks through the sidecar; notifications the editor
receives, with the text checked character for character.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from .common import DEMO_AGENT, BenchResult, bench_env, chunk_text, median, table, temp_state, write_calls
from .editor import SidecarEditor
from .raw_client import RawAcp, TextCollector, open_session, pipe_limit
from .sdk_client import sdk_prompt

TARGET_VS_SDK = 3.0  # issue 10: relay throughput stays >= 3x the ACP SDK client
TARGET_LOAD = 1000.0  # issue 10: a 10 000-chunk burst, >= 1 000x fewer notifications


@dataclass
class Run:
    seconds: float
    frames: int  # what the client received that carried agent text
    intact: bool  # text received == text sent


async def _raw_agent(count: int) -> Run:
    expected = chunk_text(count)
    async with temp_state() as (state, ws):
        collector = TextCollector(len(expected))
        acp = await RawAcp.spawn(DEMO_AGENT, bench_env(state), collector)
        try:
            session_id = await open_session(acp, ws)
            start = time.monotonic_ns()
            prompt = [{"type": "text", "text": f"#chunks={count} bench"}]
            await acp.request("session/prompt", {"sessionId": session_id, "prompt": prompt})
            await collector.done
            return Run((collector.done_ns - start) / 1e9, collector.frames, collector.text == expected)
        finally:
            await acp.close()


async def _sdk(count: int) -> Run:
    expected = chunk_text(count)
    async with temp_state() as (state, ws):
        run = await sdk_prompt(DEMO_AGENT, bench_env(state), ws, f"#chunks={count} bench", len(expected))
        return Run(run.seconds, run.frames, run.text == expected)


async def _sidecar(count: int) -> tuple[Run, int, int]:
    """(run, all acp/sessionUpdate notifications of the turn, write calls the sidecar made in it)."""
    expected = chunk_text(count)
    async with temp_state() as (state, ws):
        editor = await SidecarEditor.start(state, ws)
        try:
            await editor.new_session()
            before = write_calls(editor.pid) or 0
            got = await editor.prompt(f"#chunks={count} bench", len(expected))
            writes = (write_calls(editor.pid) or 0) - before
            run = Run(got.seconds, got.chunk_notifications, got.text == expected)
            return run, got.notifications, writes
        finally:
            await editor.close()


async def _pipe(count: int) -> Run:
    seconds, frames, intact = await pipe_limit(count)
    return Run(seconds, frames, intact)


async def throughput(quick: bool) -> BenchResult:
    count = 5_000 if quick else 100_000
    repeats = 1 if quick else 3
    names = {
        "pipe": "(a) recorded frames -> cat -> JSON parse",
        "raw": "(a) demo agent -> JSON parse",
        "sdk": "(b) demo agent -> ACP SDK client",
        "sidecar": "demo agent -> acp-sidecar -> LSP client",
    }
    runs: dict[str, list[Run]] = {k: [] for k in names}
    for _ in range(repeats):  # interleaved, so drift of the machine hits all alike
        runs["pipe"].append(await _pipe(count))
        runs["raw"].append(await _raw_agent(count))
        runs["sdk"].append(await _sdk(count))
        runs["sidecar"].append((await _sidecar(count))[0])
    rate = {k: count / median([r.seconds for r in v]) for k, v in runs.items()}
    rows = []
    for key, label in names.items():
        secs = [r.seconds for r in runs[key]]
        rows.append(
            [
                label,
                f"{median(secs) * 1000:.1f}",
                f"{min(secs) * 1000:.1f}",
                rate[key],
                runs[key][-1].frames,
                "yes" if all(r.intact for r in runs[key]) else "NO",
                f"{rate[key] / rate['sdk']:.2f}x",
            ]
        )
    ratio = rate["sidecar"] / rate["sdk"]
    lost = [f"throughput/{k}: text differs" for k, v in runs.items() if not all(r.intact for r in v)]
    text = table(
        ["path", "ms (median)", "ms (best)", "chunks/s", "text msgs", "text intact", "vs SDK"],
        rows,
        f"1. Relay throughput: {count:,} chunks, median of {repeats}",
    )
    summary = (
        f"sidecar {rate['sidecar']:,.0f} chunks/s = {ratio:.2f}x the ACP SDK client "
        f"({rate['sdk']:,.0f}/s; target >= {TARGET_VS_SDK}x), "
        f"{rate['sidecar'] / rate['raw']:.2f}x the bare parser on the same agent "
        f"({rate['raw']:,.0f}/s), pipe limit {rate['pipe']:,.0f}/s"
    )
    return BenchResult(
        "throughput",
        text,
        summary,
        {
            "chunks": count,
            "rate": rate,
            "vs_sdk": ratio,
            "vs_raw": rate["sidecar"] / rate["raw"],
        },
        ok=ratio >= TARGET_VS_SDK and not lost,
        lost=lost,
    )


async def editor_load(quick: bool) -> BenchResult:
    count = 10_000
    repeats = 1 if quick else 3
    rows = []
    notes: list[int] = []
    writes: list[int] = []
    lost: list[str] = []
    for i in range(repeats):
        run, all_notes, wrote = await _sidecar(count)
        notes.append(all_notes)
        writes.append(wrote)
        if not run.intact:
            lost.append(f"editor load run {i + 1}: text differs")
        rows.append(
            [
                f"run {i + 1}",
                count,
                all_notes,
                run.frames,
                count / all_notes if all_notes else float("nan"),
                wrote,
                "yes" if run.intact else "NO",
            ]
        )
    worst = max(notes)
    factor = count / worst if worst else float("nan")
    text = table(
        [
            "burst",
            "chunks from agent",
            "notifications",
            "of them text",
            "chunks per notification",
            "sidecar write calls",
            "intact",
        ],
        rows,
        f"3. Editor load: {count:,}-chunk bursts through the sidecar "
        "(baseline: without coalescing, 1 notification per chunk; write calls from /proc/<pid>/io)",
    )
    summary = (
        f"{worst} notifications per {count:,} chunks (worst of {repeats}) = {factor:.0f}x fewer "
        f"(target >= {TARGET_LOAD:.0f}x), nothing lost: {'yes' if not lost else 'NO'}; "
        f"at most {max(writes)} write calls by the sidecar per burst (editor, agent and title store "
        "together: nothing is written per chunk)"
    )
    return BenchResult(
        "editor load",
        text,
        summary,
        {"chunks": count, "notifications": worst, "factor": factor, "write_calls": max(writes)},
        ok=factor >= TARGET_LOAD and not lost,
        lost=lost,
    )
