"""The agent's file access: path admission, buffers before disk, line windows, writes."""

from __future__ import annotations

from pathlib import Path

import pytest

from sidecar.acp.errors import RESOURCE_NOT_FOUND
from sidecar.kernel import errors
from sidecar.kernel.errors import SidecarError
from sidecar.kernel.files import resolve_inside
from tests.unit.fake_agent import Composed, Recorder


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    secret = tmp_path / "outside.txt"
    secret.write_text("secret\n")
    return secret


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        ("README.md", "not absolute"),
        ("~/x", "'~' is not expanded"),
        ("file:///etc/passwd", "not a URI"),
        ("{ws}/%2e%2e/outside.txt", "URL-encoded"),
        ("{ws}/a\x00b", "NUL character"),
        ("{ws}/../outside.txt", "outside the session's directories"),
        ("{ws}/link.txt", "outside the session's directories"),
        ("{ws}/linkdir/outside.txt", "outside the session's directories"),
        ("{ws}/\udcff", "not valid UTF-8"),
    ],
)
def test_paths_outside_or_ambiguous_are_refused(
    raw: str, why: str, workspace: Path, outside: Path, tmp_path: Path
) -> None:
    (workspace / "link.txt").symlink_to(outside)
    (workspace / "linkdir").symlink_to(tmp_path)
    with pytest.raises(SidecarError) as refused:
        resolve_inside(raw.format(ws=workspace), [str(workspace)])
    assert refused.value.code == errors.PATH_REFUSED and why in refused.value.message


@pytest.mark.parametrize("raw", [None, "", 42])
def test_a_path_that_is_not_a_string_is_invalid(raw: object, workspace: Path) -> None:
    with pytest.raises(SidecarError) as refused:
        resolve_inside(raw, [str(workspace)])
    assert refused.value.code == errors.INVALID_PARAMS


def test_paths_inside_any_root_are_admitted_as_their_real_path(workspace: Path, tmp_path: Path) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    (workspace / "inner-link").symlink_to(workspace / "src")
    roots = [str(workspace), str(extra)]
    assert resolve_inside(str(workspace / "README.md"), roots) == workspace / "README.md"
    assert resolve_inside(str(workspace / "new" / "file.txt"), roots) == workspace / "new" / "file.txt"
    assert resolve_inside(str(workspace / "inner-link" / "app.py"), roots) == workspace / "src" / "app.py"
    assert resolve_inside(str(extra / "x"), roots) == extra / "x"
    assert resolve_inside(str(workspace), roots) == workspace


async def test_read_prefers_the_editor_buffer_and_windows_lines(
    engine: Composed, recorder: Recorder, workspace: Path
) -> None:
    sid = await engine.registry.new(str(workspace))
    readme = workspace / "README.md"
    disk = await engine.fs.read_text_file({"sessionId": sid, "path": str(readme), "line": 3, "limit": 1})
    assert disk == {"content": "A small project for tests.\n"}
    recorder.documents[readme] = "unsaved\nbuffer\n"
    assert await engine.fs.read_text_file({"sessionId": sid, "path": str(readme)}) == {
        "content": "unsaved\nbuffer\n"
    }
    with pytest.raises(SidecarError, match="line must be a positive integer"):
        await engine.fs.read_text_file({"sessionId": sid, "path": str(readme), "line": 0})
    with pytest.raises(SidecarError) as missing:
        await engine.fs.read_text_file({"sessionId": sid, "path": str(workspace / "nope.txt")})
    assert "file not found" in missing.value.message


async def test_write_goes_through_the_editor_else_to_disk(
    engine: Composed, recorder: Recorder, workspace: Path
) -> None:
    sid = await engine.registry.new(str(workspace))
    target = workspace / "src" / "new.txt"
    recorder.editor_applies = True
    assert (
        await engine.fs.write_text_file({"sessionId": sid, "path": str(target), "content": "via editor"})
        == {}
    )
    assert recorder.editor_writes == [(target, "via editor")] and not target.exists()
    recorder.editor_applies = False
    assert (
        await engine.fs.write_text_file({"sessionId": sid, "path": str(target), "content": "on disk"}) == {}
    )
    assert target.read_text() == "on disk"
    with pytest.raises(SidecarError, match="content must be a string"):
        await engine.fs.write_text_file({"sessionId": sid, "path": str(target), "content": 5})


async def test_file_requests_name_a_known_session(engine: Composed, workspace: Path, outside: Path) -> None:
    with pytest.raises(SidecarError) as unknown:
        await engine.fs.read_text_file({"sessionId": "nope", "path": str(workspace / "README.md")})
    assert unknown.value.code == RESOURCE_NOT_FOUND
    sid = await engine.registry.new(str(workspace))
    with pytest.raises(SidecarError) as refused:
        await engine.fs.write_text_file({"sessionId": sid, "path": str(outside), "content": "x"})
    assert refused.value.code == errors.PATH_REFUSED
    assert outside.read_text() == "secret\n"


async def test_diffs_of_a_tool_call_are_admitted_like_writes(
    engine: Composed, agents: object, workspace: Path, outside: Path
) -> None:
    from tests.unit.fake_agent import FakeAgents

    assert isinstance(agents, FakeAgents)
    sid = await engine.registry.new(str(workspace))
    for call_id, path in (("inside", workspace / "README.md"), ("escape", outside)):
        await agents.current.send_update(
            sid,
            {
                "sessionUpdate": "tool_call",
                "toolCallId": call_id,
                "status": "pending",
                "content": [{"type": "diff", "path": str(path), "oldText": "a", "newText": "b"}],
            },
        )
    assert engine.fs.tool_call_diffs(sid, "inside")[0]["newText"] == "b"
    assert {call_id for _, call_id, _, _ in engine.fs.pending_edits()} == {"inside"}  # only what applies
    with pytest.raises(SidecarError) as refused:
        engine.fs.tool_call_diffs(sid, "escape")
    assert refused.value.code == errors.PATH_REFUSED
    with pytest.raises(SidecarError, match="has no diff"):
        engine.fs.tool_call_diffs(sid, "nothing")
