"""Shared helpers: paths, the machine, statistics, tables, process plumbing."""

from __future__ import annotations

import asyncio
import contextlib
import os
import platform
import statistics
import sys
import tempfile
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PYTHON = sys.executable
BIN = Path(sys.executable).parent
SIDECAR = str(BIN / "acp-sidecar")
BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
STAMP_AGENT = str(BENCH_DIR / "agents" / "stamp_agent.py")
BARE_SERVER = str(BENCH_DIR / "bare_server.py")
DEMO_AGENT = [PYTHON, "-m", "sidecar.demo_agent"]

# Large frames must never kill a reader of ours.
STREAM_LIMIT = 2**26


@dataclass
class BenchResult:
    """What one benchmark hands back: a table, one summary line, and its figures."""

    name: str
    table: str
    summary: str
    figures: dict[str, Any] = field(default_factory=dict)
    ok: bool = True  # the target was met
    lost: list[str] = field(default_factory=list)  # anything lost; must stay empty

    def render(self) -> str:
        return f"{self.table}\n{self.name}: {self.summary}"


def machine() -> dict[str, str]:
    model = "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {
        "nproc": str(os.cpu_count()),
        "cpu": model,
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "system": f"{platform.system()} {platform.release()}",
    }


def not_run_quick(name: str, why: str) -> BenchResult:
    """The result of a benchmark that --quick skips (a real editor: minutes), saying so."""
    return BenchResult(
        name=name,
        table=table(["what", "why"], [["not run", f"--quick: {why}"]]),
        summary=f"not run in --quick mode (python -m bench --only {name} runs it)",
        figures={"skipped": True},
    )


def percentile(values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile (no interpolation: p99 of 500 samples is the 495th)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, min(len(ordered), -(-len(ordered) * pct // 100)))
    return ordered[int(rank) - 1]


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], title: str = "") -> str:
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    out = []
    if title:
        out.append(f"## {title}")
    out.append("| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)) + " |")
    out.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in cells:
        out.append(
            "| "
            + " | ".join(v.rjust(w) if _numeric(v) else v.ljust(w) for v, w in zip(row, widths, strict=True))
            + " |"
        )
    return "\n".join(out)


def _cell(value: Any) -> str:
    if isinstance(value, float):
        if value != value:  # NaN
            return "-"
        if abs(value) >= 1000:
            return f"{value:,.0f}"
        if abs(value) >= 10:
            return f"{value:.1f}"
        return f"{value:.2f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def _numeric(text: str) -> bool:
    return bool(text) and (text[0].isdigit() or (text[0] == "-" and len(text) > 1))


def vm_hwm_kib(pid: int) -> int | None:
    """Peak resident set size (VmHWM) of a live process, in KiB."""
    return _status_field(pid, "VmHWM")


def vm_rss_kib(pid: int) -> int | None:
    return _status_field(pid, "VmRSS")


def _status_field(pid: int, name: str) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(name + ":"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def write_calls(pid: int) -> int | None:
    """write(2)-family calls made so far by a process, all its threads (/proc/<pid>/io syscw)."""
    try:
        for line in Path(f"/proc/{pid}/io").read_text().splitlines():
            if line.startswith("syscw:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def children(pid: int) -> list[int]:
    """Direct children of a process (Linux /proc)."""
    found: list[int] = []
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError, ValueError):
                found.extend(int(c) for c in (task / "children").read_text().split())
    return found


@contextlib.asynccontextmanager
async def temp_state() -> AsyncIterator[tuple[Path, Path]]:
    """A private state dir and an empty workspace dir, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="acp-bench-") as tmp:
        state = Path(tmp) / "state"
        ws = Path(tmp) / "ws"
        state.mkdir()
        ws.mkdir()
        yield state, ws


def bench_env(state: Path, **extra: str) -> dict[str, str]:
    """Environment for the sidecar and its agent: private state, nothing from the user's setup.

    Bytecode caches are allowed (as for any installed program): with
    PYTHONDONTWRITEBYTECODE every start would compile the sidecar's sources
    while pygls, installed, starts from its caches.
    """
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ACP_SIDECAR_", "ACP_DEMO_")) and k != "PYTHONDONTWRITEBYTECODE"
    }
    env["ACP_SIDECAR_STATE_DIR"] = str(state)
    env["PYTHONUNBUFFERED"] = "0"
    env.update(extra)
    return env


async def stop_process(proc: asyncio.subprocess.Process, grace: float = 5.0) -> None:
    """Wait for a process we started; terminate, then kill it if it lingers."""
    if proc.returncode is not None:
        return
    try:
        await asyncio.wait_for(proc.wait(), grace)
        return
    except TimeoutError:
        pass
    with contextlib.suppress(ProcessLookupError):
        proc.terminate()
    try:
        await asyncio.wait_for(proc.wait(), 3)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()


def chunk_text(count: int) -> str:
    """The exact text the demo agent streams for `#chunks=count`."""
    return "".join(f"c{i} " for i in range(count))
