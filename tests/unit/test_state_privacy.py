"""State is private: the state dir 0700 and every file the sidecar creates there 0600, whatever the umask."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from sidecar.features.titles.api import TitleStore, apply_agent_info
from sidecar.kernel.agent_names import AgentNames
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


@pytest.mark.parametrize("mask", UMASKS)
def test_missing_parents_of_the_state_dir_are_private(tmp_path: Path, mask: int) -> None:
    from sidecar.state_dir import secure_state_dir

    state = tmp_path / "home" / ".local" / "state" / "acp-sidecar"
    with umask(mask):
        assert secure_state_dir(state) == []
    assert mode_of(state) == 0o700
    for parent in (tmp_path / "home", tmp_path / "home" / ".local", tmp_path / "home" / ".local" / "state"):
        assert mode_of(parent) == 0o700, parent


def test_a_state_dir_of_another_user_is_refused_never_tightened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As if the state dir (made by this test) belonged to another user: the sidecar runs as
    someone else. Nothing is tightened, nothing is written there."""
    import os

    from sidecar.kernel.state_files import private_dir
    from sidecar.state_dir import secure_state_dir

    state = tmp_path / "state"
    state.mkdir()
    state.chmod(0o755)
    (state / "theirs.txt").write_text("x")
    (state / "theirs.txt").chmod(0o644)
    owner = os.geteuid()
    monkeypatch.setattr(os, "geteuid", lambda: owner + 4242)
    [note] = secure_state_dir(state)
    assert str(state) in note and f"uid {owner}" in note and "not used" in note, note
    assert mode_of(state) == 0o755 and mode_of(state / "theirs.txt") == 0o644
    store = TitleStore.open_or_memory(state / "titles.sqlite3")
    try:
        assert store.in_memory
        assert any(f"uid {owner}" in w for w in store.warnings), store.warnings
    finally:
        store.close()
    AgentNames(state).remember(["agent"], "name")
    with pytest.raises(PermissionError, match=f"uid {owner}"):
        private_dir(state / "transcripts" / "agent", state)
    assert sorted(p.name for p in state.iterdir()) == ["theirs.txt"], "nothing written there"
    assert mode_of(state) == 0o755


def test_a_state_subdir_of_another_user_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from sidecar.kernel.state_files import private_dir
    from sidecar.state_dir import secure_state_dir

    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (state / "transcripts").mkdir()
    (state / "transcripts").chmod(0o755)
    me = os.geteuid()
    real_lstat, real_stat = os.lstat, os.stat
    transcripts = str(state / "transcripts")

    def foreign(real: Any) -> Any:
        def fake(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
            info = real(path, *args, **kwargs)
            if str(path) == transcripts:
                fields = list(info)
                fields[4] = me + 4242  # st_uid
                return os.stat_result(fields)
            return info

        return fake

    monkeypatch.setattr(os, "lstat", foreign(real_lstat))
    monkeypatch.setattr(os, "stat", foreign(real_stat))
    notes = secure_state_dir(state)
    assert any(transcripts in n and f"uid {me + 4242}" in n and "left as it is" in n for n in notes), notes
    assert mode_of(state / "transcripts") == 0o755, "another user's directory is never tightened"
    with pytest.raises(PermissionError, match=f"uid {me + 4242}"):
        private_dir(state / "transcripts" / "agent", state)
    assert not (state / "transcripts" / "agent").exists()
