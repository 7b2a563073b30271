"""7. Several agents: what three configured agents cost before use, while running, after the idle stop.

One sidecar with three agents configured (`demo`, and the demo agent as `second` and `third`,
each with its own session store) and `agentIdleStopSeconds` = 2. Marks: the sidecar idle (no
agent started: configured agents cost nothing until used), after a session and a turn on each
of the three (every agent running), and after all three were stopped idle. At each mark: the
sidecar's RSS, and the number and total RSS of the agents' processes (each agent behind its
reaper). Nothing of an agent may be left after its stop.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from sidecar.acp.reaper import descendants

from .common import BenchResult, table, temp_state, vm_rss_kib
from .editor import SidecarEditor

IDLE_STOP_SECONDS = 2
NAMES = ("demo", "second", "third")


def _mib(kib: int | None) -> float:
    return float("nan") if kib is None else kib / 1024


async def multi_agent(quick: bool) -> BenchResult:
    rows: list[list[object]] = []
    marks: dict[str, dict[str, float]] = {}
    lost: list[str] = []
    async with temp_state() as (state, ws):
        demo = [sys.executable, "-m", "sidecar.demo_agent"]
        options: dict[str, Any] = {
            "agents": {
                name: {
                    "command": demo,
                    "env": {"ACP_DEMO_NAME": f"{name}-agent", "ACP_DEMO_AGENT_STATE_DIR": str(state / name)},
                }
                for name in NAMES[1:]
            },
            "defaultAgent": "demo",
            "agentIdleStopSeconds": IDLE_STOP_SECONDS,
        }
        editor = await SidecarEditor.start(state, ws, options=options)

        def mark(label: str, key: str) -> None:
            kids = descendants(editor.pid)
            agents_kib = sum(vm_rss_kib(p) or 0 for p in kids)
            sidecar = _mib(vm_rss_kib(editor.pid))
            marks[key] = {
                "sidecar_mib": sidecar,
                "agent_processes": len(kids),
                "agents_mib": agents_kib / 1024,
            }
            rows.append([label, f"{sidecar:.1f}", len(kids), f"{agents_kib / 1024:.1f}"])

        async def states() -> dict[str, str]:
            listed = await editor.client.command("acp.agents")
            return {a["name"]: a["state"] for a in listed["agents"]}

        try:
            mark("three agents configured, none started", "idle")
            for name in NAMES:
                result = await editor.client.command("acp.session.new", {"cwd": str(ws), "agent": name})
                editor.session_id = str(result["sessionId"])
                got = await editor.prompt("#chunks=2000 warm up", len("".join(f"c{i} " for i in range(2000))))
                if got.stop_reason != "end_turn":
                    lost.append(f"agents: the turn of {name} ended {got.stop_reason}")
            if set((await states()).values()) != {"idle"}:
                lost.append(f"agents: not all three running: {await states()}")
            mark("a session and a turn on each (three running)", "running")
            async with asyncio.timeout(IDLE_STOP_SECONDS * 20):
                while set((await states()).values()) != {"stopped"}:
                    await asyncio.sleep(0.1)
            for _ in range(50):  # the processes are reaped right after the state changes
                if not descendants(editor.pid):
                    break
                await asyncio.sleep(0.1)
            mark(f"all three stopped idle ({IDLE_STOP_SECONDS} s)", "stopped")
            if marks["stopped"]["agent_processes"]:
                left = marks["stopped"]["agent_processes"]
                lost.append(f"agents: {left:.0f} agent processes left after the stop")
        finally:
            await editor.close()
    text = table(
        ["sidecar with three agents", "sidecar RSS MiB", "agent processes", "their RSS MiB"],
        rows,
        "7. Several agents behind one sidecar (the demo agent three times)",
    )
    m = marks
    summary = (
        f"sidecar {m['idle']['sidecar_mib']:.0f} MiB with three agents configured, "
        f"{m['running']['sidecar_mib']:.0f} MiB with all three running "
        f"(+{m['running']['agents_mib']:.0f} MiB in {m['running']['agent_processes']:.0f} agent processes), "
        f"{m['stopped']['sidecar_mib']:.0f} MiB after the idle stop with "
        f"{m['stopped']['agent_processes']:.0f} agent processes left"
    )
    return BenchResult("agents", text, summary, {"marks": marks}, ok=not lost, lost=lost)
