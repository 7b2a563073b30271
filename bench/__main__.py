"""`python -m bench [--quick] [--only NAME,...]`: every benchmark of issue 7, baselines in the same run.

Each benchmark prints a table and one summary line; the last line of the run
is `bench: <summary with the ratios>`. Exit status 1 when a target is missed
or anything was lost.
"""

from __future__ import annotations

import argparse
import asyncio
import shlex
import sys
import time
from collections.abc import Awaitable, Callable, Sequence

from .agent_changes import agent_changes
from .common import BenchResult, machine
from .compose import compose
from .helix_stall import helix_stall
from .latency import BEFORE_P50_MS, BEFORE_P99_MS, OLD_TARGET_P99_MS, TARGET_P50_MS, TARGET_P99_MS, latency
from .memory import memory
from .multi_agent import multi_agent
from .nvim_flush import nvim_flush
from .relay import editor_load, throughput
from .replay import replay
from .startup import startup
from .titles import titles
from .transcript import transcript
from .vscode_flush import vscode_flush

Bench = Callable[[bool], Awaitable[BenchResult]]

BENCHES: dict[str, Bench] = {
    "throughput": throughput,
    "latency": latency,
    "load": editor_load,
    "startup": startup,
    "titles": titles,
    "memory": memory,
    "compose": compose,
    "transcript": transcript,
    "agents": multi_agent,
    "changes": agent_changes,
    "replay": replay,
    "vscode-flush": vscode_flush,
    "nvim-flush": nvim_flush,
    "helix-stall": helix_stall,
}


async def run(
    names: Sequence[str], quick: bool, timeout: float, out: Callable[[str], None] = print
) -> dict[str, BenchResult | str]:
    """Run the named benchmarks in order; a failure is recorded as its message."""
    results: dict[str, BenchResult | str] = {}
    for name in names:
        started = time.monotonic()
        try:
            result = await asyncio.wait_for(BENCHES[name](quick), timeout)
        except TimeoutError:
            results[name] = f"did not finish within {timeout:.0f} s"
        except Exception as exc:
            results[name] = f"failed: {type(exc).__name__}: {exc}"
        else:
            results[name] = result
            out(result.render() + f"  [{time.monotonic() - started:.0f} s]\n")
            continue
        out(f"{name}: {results[name]}\n")
    return results


def final_line(results: dict[str, BenchResult | str]) -> str:
    parts: list[str] = []
    missed: list[str] = []
    for name, result in results.items():
        if isinstance(result, str):
            parts.append(f"{name} {result}")
            missed.append(name)
            continue
        f = result.figures
        if name == "throughput":
            parts.append(f"relay {f['vs_sdk']:.2f}x the SDK client ({f['rate']['sidecar']:,.0f} chunks/s)")
        elif name == "latency":
            parts.append(
                f"p50 {f['p50_ms']:.1f} ms / p99 {f['p99_ms']:.1f} ms at 50/s "
                f"(targets <= {TARGET_P50_MS:.0f} / <= {TARGET_P99_MS:.0f} ms; old target p99 < "
                f"{OLD_TARGET_P99_MS:.0f} ms, was p50 {BEFORE_P50_MS} / p99 {BEFORE_P99_MS} ms)"
            )
        elif name == "load":
            parts.append(f"{f['factor']:.0f}x fewer notifications than chunks")
        elif name == "startup":
            parts.append(
                f"initialize {f['ratio']:.2f}x bare pygls ({f['initialize_ms']:.0f} ms), "
                f"idle {f['idle_ratio']:.2f}x bare pygls + the demo agent"
            )
        elif name == "titles":
            parts.append(f"titles growth {max(f['growth'].values()):.2f}x for 10x sessions")
        elif name == "compose":
            git, growth = f["trees"]["git"], max(f["growth"].values())
            parts.append(
                f"@ on {f['files']:,} files {git['cold_ms'] / git['baseline_ms']:.2f}x git ls-files, "
                f"workspace/symbol growth {growth:.2f}x for 10x sessions"
            )
        elif name == "memory":
            parts.append(f"peak RSS {f['mib']['big']:.0f} MiB after {f['chunks']:,} chunks")
        elif name == "transcript":
            parts.append(
                f"Neovim transcript: first/last chunk {f['first_ms']:.0f}/{f['last_ms']:.0f} ms, "
                f"stall {f['stall_ms']:.0f} ms with 5 MB"
            )
        elif name == "changes":
            parts.append(
                f"didChange with 1 000 agent hunks {f['ratio']:.2f}x one without "
                f"({f['per_change_us']['with 1 000 hunks']:.0f} us)"
            )
        elif name == "replay":
            parts.append(
                f"session load: {f['plugins_vs_parser']:.2f}x a bare parser, "
                f"growth {max(f['growth'].values()):.2f}x for 10x history"
            )
        elif name == "vscode-flush" and not f.get("skipped"):
            parts.append(
                f"VS Code chat per flush at 1 MB vs 10 KB: host {f['ratio']['host']:.2f}x, "
                f"webview {f['ratio']['view']:.2f}x"
            )
        elif name == "nvim-flush":
            parts.append(f"Neovim chat per edit {f['ratio']:.2f}x, stall {f['max_gap_ms']:.0f} ms")
        elif name == "helix-stall" and not f.get("skipped"):
            parts.append(f"Helix answers a key within {f['streaming_s']['max']:.0f} ms while 5 MB stream in")
        if not result.ok or result.lost:
            missed.append(name)
    verdict = "all targets met, nothing lost" if not missed else f"MISSED: {', '.join(missed)}"
    return "bench: " + "; ".join(parts) + f" -- {verdict}"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    ap.add_argument("--quick", action="store_true", help="small N: a smoke run in well under a minute")
    ap.add_argument("--only", help=f"comma list of: {', '.join(BENCHES)}")
    ap.add_argument("--timeout", type=float, default=600.0, help="per benchmark, seconds (600)")
    args = ap.parse_args(argv)
    names = [n.strip() for n in args.only.split(",")] if args.only else list(BENCHES)
    unknown = [n for n in names if n not in BENCHES]
    if unknown:
        ap.error(f"unknown benchmark(s): {', '.join(unknown)}")
    info = machine()
    print(
        f"# acp-sidecar benchmarks{' (quick)' if args.quick else ''}\n"
        f"machine: {info['nproc']} CPUs, {info['cpu']}, {info['implementation']} {info['python']}, "
        f"{info['system']}\n"
        f"command: {shlex.join(['python', '-m', 'bench', *(argv or sys.argv[1:])])}\n",
        flush=True,
    )
    started = time.monotonic()
    results = asyncio.run(run(names, args.quick, args.timeout, lambda s: print(s, flush=True)))
    print(f"total {time.monotonic() - started:.0f} s")
    line = final_line(results)
    print(line, flush=True)
    return 0 if "MISSED" not in line else 1


if __name__ == "__main__":
    sys.exit(main())
