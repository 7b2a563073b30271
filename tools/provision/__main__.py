"""`python -m tools.provision [STEP ...] [--check]`: install (or check) what the tests need."""

from __future__ import annotations

import argparse
import fcntl
import importlib
import sys
import time
from pathlib import Path
from types import ModuleType

from . import ProvisionError, cache_dir

# In dependency order. Each is a module of this package (see __init__).
STEPS = ("system", "vscode", "helix", "agents")


def _load(name: str) -> ModuleType:
    return importlib.import_module(f"{__package__}.{name}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.provision", description=__doc__)
    ap.add_argument("steps", nargs="*", help=f"steps to run (default: all of {', '.join(STEPS)})")
    ap.add_argument("--check", action="store_true", help="only report what is missing")
    args = ap.parse_args(argv)
    unknown = [s for s in args.steps if s not in STEPS]
    if unknown:
        ap.error(f"unknown step(s): {', '.join(unknown)}; known: {', '.join(STEPS)}")
    cache = cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    # Several checkouts (engineers, CI) may share the cache: one provisioning run at a time.
    with (cache / ".provision.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _run_steps(args.steps or list(STEPS), cache, check=args.check)


def _run_steps(names: list[str], cache: Path, *, check: bool) -> int:
    failed = 0
    for name in names:
        step = _load(name)
        started = time.monotonic()
        try:
            if check:
                problem = step.problem(cache)
                print(f"provision {name}: {problem or 'ready'}", flush=True)
                failed += problem is not None
                continue
            step.ensure(cache)
            problem = step.problem(cache)
            if problem:
                raise ProvisionError(f"installed, but still not ready: {problem}")
        except ProvisionError as exc:
            print(f"provision {name}: FAILED: {exc}", file=sys.stderr, flush=True)
            failed += 1
            continue
        print(f"provision {name}: ready ({time.monotonic() - started:.0f} s, cache {cache})", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
