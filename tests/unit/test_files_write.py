"""Writing files for the agent: permissions honoured, modes kept, atomic, nothing left behind."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from sidecar.kernel.errors import SidecarError
from sidecar.kernel.files import atomic_write, resolve_inside, write_text
from tests.fs_modes import mode_of, umask


def _write(path: Path, roots: list[Path], content: str) -> None:
    """What fs/write_text_file does on disk: check, then write."""
    atomic_write(resolve_inside(str(path), [str(r) for r in roots]), content)


def _temp_files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.name.endswith(".tmp")]


def test_read_only_file_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "ro.txt"
    path.write_text("original\n")
    path.chmod(0o444)
    with pytest.raises(SidecarError) as info:
        _write(path, [tmp_path], "replaced\n")
    assert "read-only" in info.value.message
    assert path.read_text() == "original\n" and mode_of(path) == 0o444
    assert not _temp_files(tmp_path)


@pytest.mark.parametrize("mode", [0o640, 0o600, 0o755, 0o664])
def test_existing_file_keeps_itsmode_of(tmp_path: Path, mode: int) -> None:
    path = tmp_path / "f.sh"
    path.write_text("old\n")
    path.chmod(mode)
    _write(path, [tmp_path], "new ✓\n")
    assert path.read_text() == "new ✓\n" and mode_of(path) == mode


@pytest.mark.parametrize(
    ("mask", "expected"), [(0o022, 0o644), (0o000, 0o666), (0o077, 0o600), (0o002, 0o664)]
)
def test_new_files_are_created_as_open_would(tmp_path: Path, mask: int, expected: int) -> None:
    with umask(mask):
        _write(tmp_path / "new.txt", [tmp_path], "hello\n")
        _write(tmp_path / "a" / "b" / "deep.txt", [tmp_path], "deep\n")
    assert mode_of(tmp_path / "new.txt") == expected
    assert mode_of(tmp_path / "a" / "b" / "deep.txt") == expected
    assert mode_of(tmp_path / "a" / "b") == 0o777 & ~mask  # as mkdir -p would
    assert (tmp_path / "a" / "b" / "deep.txt").read_text() == "deep\n"
    assert not _temp_files(tmp_path)


def test_writes_through_symlinks_inside_the_roots(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "f.txt").write_text("old\n")
    (tmp_path / "link.txt").symlink_to(tmp_path / "real" / "f.txt")
    (tmp_path / "dirlink").symlink_to(tmp_path / "real")
    _write(tmp_path / "link.txt", [tmp_path], "via file link\n")
    assert (tmp_path / "real" / "f.txt").read_text() == "via file link\n"
    assert (tmp_path / "link.txt").is_symlink()
    _write(tmp_path / "dirlink" / "g.txt", [tmp_path], "via dir link\n")
    assert (tmp_path / "real" / "g.txt").read_text() == "via dir link\n"


def test_failures_leave_no_temp_file(tmp_path: Path) -> None:
    (tmp_path / "adir").mkdir()
    with pytest.raises(SidecarError):
        _write(tmp_path / "adir", [tmp_path], "x")
    with pytest.raises(SidecarError) as info:
        _write(tmp_path / "f.txt", [tmp_path], "lone surrogate \udc80")
    assert "Unicode" in info.value.message
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(SidecarError, match="regular file"):
        _write(fifo, [tmp_path], "x")
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert not _temp_files(tmp_path)
    assert not (tmp_path / "f.txt").exists()


def test_large_content_round_trips(tmp_path: Path) -> None:
    text = "line ✓\n" * 300_000
    _write(tmp_path / "big.txt", [tmp_path], text)
    assert (tmp_path / "big.txt").read_text() == text


def test_the_directory_is_verified_inside_the_roots(tmp_path: Path) -> None:
    """Even a caller that skipped resolve_inside cannot write outside the roots it passes."""
    ws = tmp_path / "ws"
    ws.mkdir()
    with pytest.raises(SidecarError, match="outside the session"):
        write_text(tmp_path / "outside.txt", "x", [str(ws)])
    assert not (tmp_path / "outside.txt").exists()
    (tmp_path / "real").mkdir()
    (ws / "link").symlink_to(tmp_path / "real")
    with pytest.raises(SidecarError, match="changed while being used"):
        write_text(ws / "link" / "f.txt", "x", [str(ws)])
    assert not (tmp_path / "real" / "f.txt").exists()
    assert not _temp_files(tmp_path)
