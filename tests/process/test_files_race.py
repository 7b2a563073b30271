"""Check and use are one operation: a racing swapper never gets a read or a write outside the workspace."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from sidecar.kernel.errors import SidecarError
from sidecar.kernel.files import atomic_write, read_disk_text, read_text, resolve_inside, window, write_text
from tests.swapper import swapping

TRIES = 3000


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path]:
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("SECRET\n")
    return ws, outside


def _stage(exc: SidecarError) -> str:
    return "refused at check" if "outside the session" in exc.message else "refused at use"


def _escaped_files(outside: Path) -> list[str]:
    return sorted(p.name for p in outside.iterdir() if p.name != "secret.txt")


def _temp_files(*roots: Path) -> list[Path]:
    return [p for root in roots for p in root.rglob("*") if p.name.endswith(".tmp")]


@pytest.mark.parametrize("pause_us", [0, 200])
@pytest.mark.parametrize("reader", ["streaming", "whole file"])
def test_reads_never_follow_a_swapped_symlink(places: tuple[Path, Path], reader: str, pause_us: int) -> None:
    ws, outside = places
    target = ws / "f.txt"
    target.write_text("inside\n")
    outcomes: Counter[str] = Counter()
    with swapping(target, outside / "secret.txt", pause_us):
        for _ in range(TRIES):
            try:
                real = resolve_inside(str(target), [str(ws)])
                if reader == "streaming":
                    text = read_text(real, [str(ws)], 1, 5)
                else:
                    text = window(read_disk_text(real), 1, 5)
            except SidecarError as exc:
                outcomes[
                    "refused at check" if "outside the session" in exc.message else "refused at use"
                ] += 1
                continue
            outcomes["escaped" if "SECRET" in text else "read inside"] += 1
    assert outcomes["escaped"] == 0, outcomes
    assert outcomes["read inside"] and outcomes["refused at check"], f"the race did not happen: {outcomes}"
    if pause_us:
        assert outcomes["refused at use"], f"no swap landed between check and use: {outcomes}"


@pytest.mark.parametrize("pause_us", [0, 200])
@pytest.mark.parametrize("writer", ["with roots", "compat"])
def test_writes_never_land_outside_through_a_swapped_directory(
    places: tuple[Path, Path], writer: str, pause_us: int
) -> None:
    ws, outside = places
    sub = ws / "sub"
    sub.mkdir()
    (sub / "existing.txt").write_text("old\n")
    outcomes: Counter[str] = Counter()
    with swapping(sub, outside, pause_us):
        for index in range(TRIES):
            name = "existing.txt" if index % 2 else f"new-{index % 7}.txt"
            try:
                real = resolve_inside(str(sub / name), [str(ws)])
                if writer == "with roots":
                    write_text(real, f"AGENT {index}\n", [str(ws)])
                else:
                    atomic_write(real, f"AGENT {index}\n")
            except SidecarError as exc:
                outcomes[
                    "refused at check" if "outside the session" in exc.message else "refused at use"
                ] += 1
                continue
            except OSError as exc:  # counted, so that the escapes are still looked at
                outcomes[f"raw {type(exc).__name__}"] += 1
                continue
            outcomes["written"] += 1
    assert _escaped_files(outside) == [], outcomes
    assert not [k for k in outcomes if k.startswith("raw ")], f"errors without a clear message: {outcomes}"
    assert (outside / "secret.txt").read_text() == "SECRET\n"
    assert _temp_files(ws, outside) == []
    assert outcomes["written"] and outcomes["refused at check"], f"the race did not happen: {outcomes}"
    if pause_us:
        assert outcomes["refused at use"], f"no swap landed between check and use: {outcomes}"
