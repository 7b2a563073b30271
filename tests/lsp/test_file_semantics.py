"""fs/* semantics through the real sidecar: lines, encodings, permissions and modes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fs_modes import mode_of, umask
from tests.lsp.editor import open_editor
from tests.lsp.test_permissions_files import SCRIPTED_ARGS, error_of, scripted

FORM_FEED = "int a;\n\f\nint b;\n"


async def test_lines_and_encodings(workspace: Path, state_dir: Path) -> None:
    (workspace / "ff.c").write_text(FORM_FEED)
    (workspace / "crlf.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    (workspace / "seps.txt").write_text("a\u2028b\x85c\nd\n")
    (workspace / "latin1.txt").write_bytes("café\n".encode("latin-1"))
    buffer = workspace / "buffer.c"
    buffer.write_text("on disk\n")
    async with open_editor("neovim", workspace, state_dir, extra_args=SCRIPTED_ARGS) as ed:
        await ed.command("acp.session.new")
        ed.open(buffer, text=FORM_FEED)
        results = await scripted(
            ed,
            [
                {"read": str(workspace / "ff.c"), "line": 3, "limit": 1},
                {"read": str(workspace / "crlf.txt"), "line": 2, "limit": 1},
                {"read": str(workspace / "seps.txt"), "line": 2},
                {"read": str(workspace / "latin1.txt")},
                {"read": str(buffer), "line": 3, "limit": 1},
            ],
        )
    assert results[0] == {"result": {"content": "int b;\n"}}
    assert results[1] == {"result": {"content": "two\r\n"}}
    assert results[2] == {"result": {"content": "d\n"}}
    assert "not UTF-8" in error_of(results[3])
    assert results[4] == {"result": {"content": "int b;\n"}}, "the editor's buffer counts lines the same way"


@pytest.mark.parametrize(("mask", "expected"), [(0o022, 0o644), (0o000, 0o666)])
async def test_permissions_and_modes_on_disk_writes(
    workspace: Path, state_dir: Path, mask: int, expected: int
) -> None:
    read_only = workspace / "ro.txt"
    read_only.write_text("keep me\n")
    read_only.chmod(0o444)
    script = workspace / "run.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o750)
    with umask(mask):
        # Neovim offers no file create/change through applyEdit: the sidecar writes to disk.
        async with open_editor("neovim", workspace, state_dir, extra_args=SCRIPTED_ARGS) as ed:
            await ed.command("acp.session.new")
            results = await scripted(
                ed,
                [
                    {"write": str(read_only), "content": "replaced\n"},
                    {"write": str(script), "content": "#!/bin/sh\necho hi\n"},
                    {"write": str(workspace / "new" / "made.txt"), "content": "new\n"},
                ],
            )
    assert "read-only" in error_of(results[0])
    assert read_only.read_text() == "keep me\n" and mode_of(read_only) == 0o444
    assert results[1] == {"result": {}} and mode_of(script) == 0o750
    assert script.read_text() == "#!/bin/sh\necho hi\n"
    assert results[2] == {"result": {}}
    assert mode_of(workspace / "new" / "made.txt") == expected
