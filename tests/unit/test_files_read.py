"""Reading files for the agent: lines at "\\n" only, UTF-8 or a clear error, regular files only, bounded."""

from __future__ import annotations

import os
import socket
import threading
from pathlib import Path

import pytest

from sidecar.kernel.errors import SidecarError
from sidecar.kernel.files import read_disk_text, read_text, resolve_inside, window


def _read(path: Path, roots: list[Path], line: int | None = None, limit: int | None = None) -> str:
    """What fs/read_text_file answers for a file on disk: check, then read the window."""
    checked = [str(r) for r in roots]
    real = resolve_inside(str(path), checked)
    text = read_text(real, checked, line, limit)
    if real.is_file() and real.stat().st_size < 1024 * 1024:
        # The whole-file primitive (the engine's today) must agree with the streaming one.
        assert window(read_disk_text(real), line, limit) == text
    return text


FORM_FEED = "int a;\n\f\nint b;\n"


@pytest.mark.parametrize(
    ("text", "line", "limit", "expected"),
    [
        (FORM_FEED, 3, 1, "int b;\n"),
        (FORM_FEED, 2, 1, "\f\n"),
        ("a\u2028b\nc\n", 2, 1, "c\n"),
        ("a\x1cb\x1dc\x1ed\x85e\nz\n", 2, None, "z\n"),
        ("one\r\ntwo\r\nthree", 2, 1, "two\r\n"),
        ("one\r\ntwo\r\nthree", 3, 5, "three"),
        ("one\rtwo\nthree\n", 1, 1, "one\rtwo\n"),
        ("a\nb\n", 5, 2, ""),
        ("a\nb\n", 1, 0, ""),
        ("a\nb", None, 1, "a\n"),
        ("a\nb", 2, None, "b"),
    ],
)
def test_lines_end_at_newline_only(text: str, line: int | None, limit: int | None, expected: str) -> None:
    assert window(text, line, limit) == expected


@pytest.mark.parametrize("text", [FORM_FEED, "x\u2028y\u2029z\nw\r\nv\x0b\x0cq\n"])
def test_disk_reads_count_the_same_lines_as_buffers(tmp_path: Path, text: str) -> None:
    path = tmp_path / "f.c"
    path.write_bytes(text.encode())
    lines = text.split("\n")
    for number in range(1, len(lines) + 1):
        assert _read(path, [tmp_path], number, 1) == window(text, number, 1)
        assert window(text, number, 1) == (lines[number - 1] + "\n" if number < len(lines) else lines[-1])


def test_file_that_is_not_utf8_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "latin1.txt"
    path.write_bytes("café\nnaïve\n".encode("latin-1"))
    with pytest.raises(SidecarError) as info:
        _read(path, [tmp_path])
    assert "not UTF-8" in info.value.message and "0xe9" in info.value.message
    utf16 = tmp_path / "utf16.txt"
    utf16.write_bytes("hello\n".encode("utf-16"))
    with pytest.raises(SidecarError, match="not UTF-8"):
        _read(utf16, [tmp_path])


def test_utf8_with_bom_and_nul_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "ok.txt"
    text = "\ufeffhé\x00llo ✓ 𝄞\n"
    path.write_bytes(text.encode())
    assert _read(path, [tmp_path]) == text


def _without_blocking(fn: object, timeout: float = 5.0) -> BaseException | str:
    """Run fn in a daemon thread; fail the test (instead of hanging it) if it blocks."""
    outcome: list[BaseException | str] = []

    def run() -> None:
        try:
            outcome.append(fn())  # type: ignore[operator]
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout)
    assert outcome, f"the call blocked for {timeout} s"
    return outcome[0]


def test_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    try:
        result = _without_blocking(lambda: _read(fifo, [tmp_path]))
        assert isinstance(result, SidecarError), result
        assert "named pipe" in result.message and "regular file" in result.message
    finally:
        # Release a reader that blocked on today's code, so the thread ends.
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK) if _has_reader(fifo) else None
        if fd is not None:
            os.close(fd)


def _has_reader(fifo: Path) -> bool:
    try:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:
        return False
    return True


def test_socket_and_device_are_refused(tmp_path: Path) -> None:
    sock_path = tmp_path / "s.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(sock_path))
    try:
        result = _without_blocking(lambda: _read(sock_path, [tmp_path]))
        assert isinstance(result, SidecarError) and "socket" in result.message, result
    finally:
        server.close()
    result = _without_blocking(lambda: read_disk_text(Path("/dev/zero")))
    assert isinstance(result, SidecarError) and "device" in result.message, result
    with pytest.raises(SidecarError, match="directory"):
        _read(tmp_path, [tmp_path])


def test_symlink_inside_the_roots_still_reads(tmp_path: Path) -> None:
    (tmp_path / "real.txt").write_text("real\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "link.txt").symlink_to(tmp_path / "real.txt")
    (tmp_path / "dirlink").symlink_to(tmp_path / "sub")
    assert _read(tmp_path / "sub" / "link.txt", [tmp_path]) == "real\n"
    assert _read(tmp_path / "dirlink" / "link.txt", [tmp_path]) == "real\n"


def test_answers_are_capped_at_16_mib(tmp_path: Path) -> None:
    big = "x" * 1000 + "\n"
    text = big * (17 * 1024)  # 17 MiB of 1001-byte lines
    with pytest.raises(SidecarError, match="16 MiB"):
        window(text, None, None)
    assert window(text, 3, 2) == big * 2
    path = tmp_path / "big.txt"
    path.write_text(text)
    with pytest.raises(SidecarError, match="16 MiB"):
        _read(path, [tmp_path])
    assert _read(path, [tmp_path], 17000, 1) == big


def test_missing_file_and_bad_window(tmp_path: Path) -> None:
    with pytest.raises(SidecarError, match="not found"):
        _read(tmp_path / "nope.txt", [tmp_path])
    (tmp_path / "a.txt").write_text("a\n")
    for line, limit in ((0, None), (None, -1), (True, None), ("2", None)):
        with pytest.raises(SidecarError):
            _read(tmp_path / "a.txt", [tmp_path], line, limit)  # type: ignore[arg-type]


def test_the_opened_file_is_verified_inside_the_roots(tmp_path: Path) -> None:
    """Even a caller that skipped resolve_inside cannot read outside the roots it passes."""
    ws, outside = tmp_path / "ws", tmp_path / "outside.txt"
    ws.mkdir()
    outside.write_text("SECRET\n")
    with pytest.raises(SidecarError, match="outside the session"):
        read_text(outside, [str(ws)])
    (ws / "in.txt").write_text("inside\n")
    assert read_text(ws / "in.txt", [str(ws)]) == "inside\n"


def test_a_path_with_a_symlink_in_it_is_refused_at_use(tmp_path: Path) -> None:
    """read_text takes the checked real path: a symlink in it means it changed since the check."""
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "f.txt").write_text("x\n")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(SidecarError, match="changed while being used"):
        read_text(tmp_path / "link" / "f.txt", [str(tmp_path)])
    (tmp_path / "flink.txt").symlink_to(tmp_path / "real" / "f.txt")
    with pytest.raises(SidecarError, match="changed while being used"):
        read_text(tmp_path / "flink.txt", [str(tmp_path)])
