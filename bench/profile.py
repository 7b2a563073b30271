"""Profile the sidecar's relay hot path: `python -m bench.profile [CHUNKS] [--out FILE]`.

Runs one `#chunks=CHUNKS` turn (default 200 000) through `acp-sidecar` started
under pyinstrument (`pip install pyinstrument`; not a dependency of the
project) and writes its text report (default: stdout). The sidecar's own
process is what is sampled; the demo agent and this client are not.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import sys
import tempfile
from pathlib import Path

from .common import PYTHON, chunk_text, temp_state
from .editor import SidecarEditor


async def profile(count: int, out: Path) -> float:
    expected = chunk_text(count)
    prefix = [PYTHON, "-m", "pyinstrument", "-i", "0.0005", "-r", "text", "--show-all", "-o", str(out)]
    async with temp_state() as (state, ws):
        editor = await SidecarEditor.start(state, ws, prefix=prefix)
        try:
            await editor.new_session()
            got = await editor.prompt(f"#chunks={count} profile", len(expected))
            if got.text != expected:
                raise RuntimeError("the text arrived damaged")
            return count / got.seconds
        finally:
            await editor.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.profile", description=__doc__)
    ap.add_argument("chunks", nargs="?", type=int, default=200_000)
    ap.add_argument("--out", type=Path, help="report file (default: print it)")
    args = ap.parse_args(argv)
    if importlib.util.find_spec("pyinstrument") is None:
        print("pyinstrument is not installed: .venv/bin/pip install pyinstrument", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        out = args.out or Path(tmp) / "profile.txt"
        rate = asyncio.run(profile(args.chunks, out))
        if args.out is None:
            print(out.read_text())
    print(f"{args.chunks:,} chunks at {rate:,.0f} chunks/s under the profiler (slower than without)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
