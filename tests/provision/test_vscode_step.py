"""tools.provision's vscode step: a working code-server after `make setup`, fast when cached, loud offline."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from tools.provision import ProvisionError, cache_dir
from tools.provision import vscode as step

REPO = Path(__file__).resolve().parents[2]


def test_code_server_runs_on_node_24_after_make_setup(tmp_path: Path) -> None:
    cache = cache_dir()
    assert step.problem(cache) is None, step.problem(cache)
    node = subprocess.run(
        [str(step.node_bin(cache)), "--version"], capture_output=True, text=True, timeout=60
    )
    assert node.stdout.strip() == f"v{step.NODE_VERSION}"
    env = step.node_env(cache) | {"XDG_CONFIG_HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path)}
    version = subprocess.run(
        [str(step.node_bin(cache)), str(step.code_server_entry(cache)), "--version"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert f"{step.CODE_SERVER_VERSION} " in version.stdout and "with Code 1.139.1" in version.stdout, (
        version.stdout + version.stderr
    )
    assert (step.playwright_dir(cache) / "package.json").is_file()


def test_fast_when_cached() -> None:
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "tools.provision", "vscode"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "provision vscode: ready" in result.stdout
    assert time.monotonic() - started < 30.0


def test_offline_fails_loudly_and_leaves_nothing_taken_for_ready(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An npm registry where nothing listens, a fresh npm cache (nothing served from it), no retries.
    monkeypatch.setenv("npm_config_registry", "http://127.0.0.1:9/")
    monkeypatch.setenv("npm_config_cache", str(tmp_path / "npm-cache"))
    monkeypatch.setenv("npm_config_fetch_retries", "0")
    cache = tmp_path / "cache"
    with pytest.raises(ProvisionError, match="not reachable"):
        step.ensure(cache)
    problem = step.problem(cache)
    assert problem is not None and "Node 24.15.0" in problem and "make setup" in problem
    assert not (step.node_dir(cache) / step.STAMP).exists()


def test_a_part_without_its_stamp_is_not_ready(tmp_path: Path) -> None:
    # What an interrupted install leaves: the files, no stamp.
    part = tmp_path / "code-server" / "node_modules" / "code-server" / "out" / "node"
    part.mkdir(parents=True)
    (part / "entry.js").write_text("")
    problem = step.problem(tmp_path)
    assert problem is not None and "code-server 4.139.1" in problem
