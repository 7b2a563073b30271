"""4. Start-up: process start to the `initialize` answer, and to `acp/status` idle.

Baselines in the same run: a bare pygls server that does nothing
(`bench/bare_server.py`, same interpreter and pygls), the interpreter alone,
and the demo agent alone (start to its ACP `initialize` answer), which the
sidecar's path to idle contains.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from .common import (
    BARE_SERVER,
    DEMO_AGENT,
    PYTHON,
    SIDECAR,
    BenchResult,
    bench_env,
    median,
    table,
    temp_state,
)
from .lsp_client import LspClient, StatusWatch
from .raw_client import RawAcp

TARGET_RATIO = 1.1  # issue 10: start-up to `initialize` <= 1.1x a bare pygls server
# issue 28: idle with the demo agent <= 1.3x (bare pygls initialize + the demo agent's initialize)
TARGET_IDLE_RATIO = 1.3


def _ms(start: int, end: int) -> float:
    return (end - start) / 1e6


async def _python_alone() -> float:
    start = time.monotonic_ns()
    proc = await asyncio.create_subprocess_exec(PYTHON, "-c", "pass")
    await proc.wait()
    return _ms(start, time.monotonic_ns())


async def _bare(ws: Path, state: Path) -> float:
    start = time.monotonic_ns()
    client = await LspClient.spawn([PYTHON, BARE_SERVER], env=bench_env(state), cwd=ws)
    try:
        await client.initialize(ws)
        return _ms(start, time.monotonic_ns())
    finally:
        await client.close()


async def _sidecar(ws: Path, state: Path) -> tuple[float, float]:
    start = time.monotonic_ns()
    client = await LspClient.spawn([SIDECAR], env=bench_env(state), cwd=ws)
    status = StatusWatch(client)
    try:
        await client.initialize(ws)
        initialized = time.monotonic_ns()
        client.notify("initialized", {})
        idle = await status.wait_state("idle")
        return _ms(start, initialized), _ms(start, idle)
    finally:
        await client.close()


async def _agent_alone(state: Path) -> float:
    start = time.monotonic_ns()
    acp = await RawAcp.spawn(DEMO_AGENT, bench_env(state), lambda _msg, _now: None)
    try:
        await acp.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        return _ms(start, time.monotonic_ns())
    finally:
        await acp.close()


async def startup(quick: bool) -> BenchResult:
    rounds = 2 if quick else 10
    python: list[float] = []
    bare: list[float] = []
    init: list[float] = []
    idle: list[float] = []
    agent: list[float] = []
    async with temp_state() as (state, ws):
        await _sidecar(ws, state)  # first start creates the title cache: not what a user sees daily
        for _ in range(rounds):
            python.append(await _python_alone())
            bare.append(await _bare(ws, state))
            a, b = await _sidecar(ws, state)
            init.append(a)
            idle.append(b)
            agent.append(await _agent_alone(state))
    rows = [
        ["python -c pass", median(python), min(python), "-"],
        ["bare pygls server: start -> initialize answer", median(bare), min(bare), "1.00x"],
        [
            "acp-sidecar: start -> initialize answer",
            median(init),
            min(init),
            f"{median(init) / median(bare):.2f}x",
        ],
        ["demo agent alone: start -> ACP initialize answer", median(agent), min(agent), "-"],
        [
            "acp-sidecar: start -> acp/status idle (demo agent)",
            median(idle),
            min(idle),
            f"{median(idle) / median(bare):.2f}x",
        ],
        [
            "bare pygls initialize + demo agent initialize",
            median(bare) + median(agent),
            min(bare) + min(agent),
            f"{(median(bare) + median(agent)) / median(bare):.2f}x",
        ],
    ]
    ratio = median(init) / median(bare)
    idle_ratio = median(idle) / (median(bare) + median(agent))
    text = table(
        ["process", "ms (median)", "ms (best)", "vs bare"],
        rows,
        f"4. Start-up, {rounds} rounds interleaved (warm file cache)",
    )
    summary = (
        f"initialize answered in {median(init):.0f} ms = {ratio:.2f}x the bare pygls server "
        f"({median(bare):.0f} ms; target <= {TARGET_RATIO}x); idle with the demo agent "
        f"after {median(idle):.0f} ms = {idle_ratio:.2f}x bare pygls + the agent alone "
        f"({median(bare) + median(agent):.0f} ms; target <= {TARGET_IDLE_RATIO}x)"
    )
    return BenchResult(
        "start-up",
        text,
        summary,
        {
            "bare_ms": median(bare),
            "initialize_ms": median(init),
            "idle_ms": median(idle),
            "agent_ms": median(agent),
            "ratio": ratio,
            "idle_ratio": idle_ratio,
        },
        ok=ratio <= TARGET_RATIO and idle_ratio <= TARGET_IDLE_RATIO,
    )
