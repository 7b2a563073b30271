"""6. Memory: peak RSS (VmHWM) of the sidecar process through long and many sessions.

One sidecar (demo agent): idle (the baseline, same run), after a turn of N/10
chunks, after a turn of N chunks in the same session, after S more sessions of
K chunks each; then a fresh sidecar on the same state with those S saved
sessions loaded (`acp.session.load`). The text is checked at the editor each
time. What bounds it: a session's transcript keeps at most 2 000 000
characters (sidecar/core/transcript.py), nothing else grows per chunk.
"""

from __future__ import annotations

from .common import BenchResult, chunk_text, table, temp_state, vm_hwm_kib, vm_rss_kib
from .editor import SidecarEditor

TRANSCRIPT_CAP_CHARS = 2_000_000


def _mib(kib: int | None) -> float:
    return float("nan") if kib is None else kib / 1024


async def memory(quick: bool) -> BenchResult:
    big = 50_000 if quick else 1_000_000
    mid = big // 10
    sessions = 5 if quick else 100
    per_session = 1_000 if quick else 10_000
    rows: list[list[object]] = []
    lost: list[str] = []
    marks: dict[str, float] = {}
    seconds: dict[int, float] = {}

    took = 0.0  # seconds streaming since the last mark

    def mark(label: str, key: str, pid: int, chunks: int) -> None:
        nonlocal took
        hwm, rss = vm_hwm_kib(pid), vm_rss_kib(pid)
        marks[key] = _mib(hwm)
        rows.append([label, chunks, _mib(hwm), _mib(rss), f"{took:.1f}" if took else "-"])
        took = 0.0

    async def stream(editor: SidecarEditor, count: int) -> None:
        nonlocal took
        expected = chunk_text(count)
        got = await editor.prompt(f"#chunks={count} memory", len(expected))
        took += got.seconds
        seconds[count] = got.seconds
        if got.text != expected:
            lost.append(f"memory: a {count}-chunk turn arrived with {len(got.text)} of {len(expected)} chars")

    async with temp_state() as (state, ws):
        editor = await SidecarEditor.start(state, ws)
        ids: list[str] = []
        try:
            mark("fresh sidecar, idle (baseline)", "idle", editor.pid, 0)
            await editor.new_session()
            await stream(editor, mid)
            mark(f"after a {mid:,}-chunk turn", "mid", editor.pid, mid)
            await stream(editor, big)
            mark(f"after a {big:,}-chunk turn (same session)", "big", editor.pid, mid + big)
            for _ in range(sessions):
                ids.append(await editor.new_session())
                await stream(editor, per_session)
            mark(
                f"after {sessions} more sessions x {per_session:,} chunks",
                "many",
                editor.pid,
                mid + big + sessions * per_session,
            )
        finally:
            await editor.close()
        fresh = await SidecarEditor.start(state, ws)
        try:
            mark("fresh sidecar on that state, idle", "fresh", fresh.pid, 0)
            for session_id in ids:
                await fresh.load_session(session_id)
            mark(f"with {len(ids)} saved sessions loaded", "loaded", fresh.pid, 0)
        finally:
            await fresh.close()
    growth = marks["big"] - marks["mid"]
    text = table(
        ["sidecar process", "chunks so far", "VmHWM MiB", "VmRSS MiB", "streaming s"],
        rows,
        "6. Memory of the sidecar process (demo agent; text checked at the editor)",
    )
    summary = (
        f"peak RSS {marks['big']:.0f} MiB after {big:,} chunks ({marks['big'] - marks['idle']:+.0f} MiB over "
        f"idle {marks['idle']:.0f} MiB; {growth:+.1f} MiB from {mid:,} to {mid + big:,} chunks), "
        f"{marks['many']:.0f} MiB with {sessions + 1} sessions streamed, {marks['loaded']:.0f} MiB with "
        f"{len(ids)} loaded; bound: idle + per session <= {TRANSCRIPT_CAP_CHARS:,} chars of transcript; "
        f"the {big:,}-chunk turn took {seconds[big]:.1f} s"
    )
    return BenchResult(
        "memory",
        text,
        summary,
        {"mib": marks, "chunks": big, "sessions": sessions, "big_turn_s": seconds[big]},
        ok=not lost,
        lost=lost,
    )
