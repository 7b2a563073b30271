"""State is private: the state dir 0700 and every file the sidecar creates there 0600, whatever the umask."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from sidecar.core.agent_names import AgentNames
from sidecar.titles import TitleStore, apply_agent_info
from tests.fs_modes import mode_of, umask

UMASKS = [0o022, 0o000, 0o002]


def _put(store: TitleStore, sid: str, title: str) -> None:
    store.update(
        "demo", sid, lambda r: apply_agent_info(r, agent="demo", session_id=sid, now=time.time(), title=title)
    )


@pytest.mark.parametrize("mask", UMASKS)
def test_title_cache_files_are_private(tmp_path: Path, mask: int) -> None:
    state = tmp_path / "state"
    with umask(mask):
        store = TitleStore(state / "titles.sqlite3")
        try:
            _put(store, "s1", "A private title")
            files = {p.name: mode_of(p) for p in state.iterdir()}
            assert {"titles.sqlite3", "titles.sqlite3-wal", "titles.sqlite3-shm"} <= set(files), files
            assert mode_of(state) == 0o700
            assert files == dict.fromkeys(files, 0o600), files
        finally:
            store.close()


@pytest.mark.parametrize("mask", UMASKS)
def test_recovery_lock_and_moved_aside_files_are_private(tmp_path: Path, mask: int) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (state / "titles.sqlite3").write_bytes(b"this is not a database" * 100)
    (state / "titles.sqlite3").chmod(0o600)
    with umask(mask):
        store = TitleStore(state / "titles.sqlite3")
        try:
            assert store.warnings, "the corrupt file was moved aside"
            _put(store, "s1", "t")
        finally:
            store.close()
    modes = {p.name: mode_of(p) for p in state.iterdir()}
    assert any(name.endswith(".lock") for name in modes), modes
    assert modes == dict.fromkeys(modes, 0o600), modes


@pytest.mark.parametrize("mask", UMASKS)
def test_agent_names_file_is_private(tmp_path: Path, mask: int) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    with umask(mask):
        names = AgentNames(state)
        names.remember(["agent", "--acp"], "first")
        assert mode_of(state / "agents.json") == 0o600
        (state / "agents.json").chmod(0o644)  # as an older version left it
        names.remember(["agent", "--acp"], "second")
    assert mode_of(state / "agents.json") == 0o600
    assert names.lookup(["agent", "--acp"]) == "second"


def test_too_open_state_is_tightened_at_start(tmp_path: Path) -> None:
    from sidecar.state_dir import secure_state_dir

    state = tmp_path / "state"
    state.mkdir()
    state.chmod(0o755)
    (state / "titles.sqlite3").write_text("")
    (state / "titles.sqlite3").chmod(0o644)
    (state / "agents.json").write_text("{}")
    (state / "agents.json").chmod(0o664)
    (state / "transcripts" / "agent").mkdir(parents=True)
    (state / "transcripts").chmod(0o755)
    (state / "transcripts" / "agent" / "s.md").write_text("# a whole prompt\n")
    (state / "transcripts" / "agent" / "s.md").chmod(0o644)
    (state / "owner-only.txt").write_text("x")
    (state / "owner-only.txt").chmod(0o400)
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("not ours to change")
    outside.chmod(0o644)
    (state / "link").symlink_to(outside)
    notes = secure_state_dir(state)
    assert mode_of(state) == 0o700
    assert mode_of(state / "titles.sqlite3") == 0o600 and mode_of(state / "agents.json") == 0o600
    assert mode_of(state / "transcripts") == 0o700
    assert mode_of(state / "transcripts" / "agent" / "s.md") == 0o600
    assert mode_of(state / "owner-only.txt") == 0o400, "only group and other bits are removed"
    assert mode_of(outside) == 0o644, "a symlink is not followed"
    assert mode_of(state / "transcripts" / "agent") == 0o700
    assert len(notes) == 6 and all("made it private" in n for n in notes), notes
    assert secure_state_dir(state) == [], "nothing to say the second time"
