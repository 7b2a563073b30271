"""Shared fixtures: a workspace with files, a private state dir."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import settings

# Property tests judge results, not speed: a per-example deadline fails at random on a
# loaded machine (seen: 265 ms against the default 200 ms while other test runs shared it).
settings.register_profile("sidecar", deadline=None)
settings.load_profile("sidecar")


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
