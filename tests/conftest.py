"""Shared fixtures: a workspace with files, a private state dir."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "README.md").write_text("# Practice repo\n\nA small project for tests.\nLine four.\n")
    (ws / "src").mkdir()
    (ws / "src" / "app.py").write_text("def main():\n    return 'héllo wörld ✓'\n")
    return ws


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    state = tmp_path / "state"
    state.mkdir()
    return state
