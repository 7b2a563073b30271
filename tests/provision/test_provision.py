"""tools.provision: ready after `make setup`, and loud, actionable failures when it cannot install."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tools.provision import ProvisionError, cache_dir, helix, system

REPO = Path(__file__).resolve().parents[2]
MISSING = "acp-sidecar-no-such-package"
COMMAND = f"sudo apt-get update && sudo apt-get install -y --no-install-recommends {MISSING}"


@pytest.fixture
def missing_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(system.PACKAGES, MISSING, "a package no machine has")


def provision(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tools.provision", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_everything_is_ready_after_make_setup() -> None:
    result = provision("--check")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "provision system: ready" in result.stdout
    assert "provision helix: ready" in result.stdout
    assert helix.version(helix.hx_path(cache_dir())) == "helix 25.07.1"


def test_unknown_step_is_refused() -> None:
    result = provision("no-such-step")
    assert result.returncode == 2 and "unknown step(s): no-such-step" in result.stderr


def test_a_missing_package_names_the_command_that_installs_it(missing_package: None) -> None:
    problem = system.problem(Path("/nonexistent"))
    assert problem is not None and COMMAND in problem


def test_not_root_fails_with_the_command(missing_package: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(ProvisionError, match="needs root") as raised:
        system.ensure(Path("/nonexistent"))
    assert COMMAND in str(raised.value)


def test_offline_apt_fails_with_a_clear_message(
    missing_package: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # An apt-get that behaves as offline: `update` warns and exits 0, as the real one does.
    fake = tmp_path / "apt-get"
    fake.write_text(
        '#!/bin/sh\necho "Err:1 http://deb.debian.org/debian bookworm InRelease"\n'
        "echo \"  Temporary failure resolving 'deb.debian.org'\"\n"
        'echo "W: Failed to fetch http://deb.debian.org/debian/dists/bookworm/InRelease"\n'
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    with pytest.raises(ProvisionError, match=r"^offline\?") as raised:
        system.ensure(Path("/nonexistent"))
    assert COMMAND in str(raised.value)


def test_helix_offline_fails_loudly_and_leaves_no_half_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # The real apt-get, pointed at a port where nothing listens.
    monkeypatch.setenv(helix.MIRROR_ENV, "http://127.0.0.1:9/debian")
    with pytest.raises(ProvisionError, match=r"^offline\? apt-get update") as raised:
        helix.ensure(tmp_path)
    assert "make setup" in str(raised.value)
    assert helix.problem(tmp_path) is not None
    assert not (tmp_path / "helix" / "root").exists()


def test_helix_wrapper_runs_sids_helix_with_sids_loader() -> None:
    wrapper = helix.hx_path(cache_dir()).read_text()
    root = helix.helix_dir(cache_dir()) / "root"
    assert f"exec {root}/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 --library-path" in wrapper
    assert f"HELIX_RUNTIME={root}/usr/lib/hx/runtime" in wrapper
    # --library-path, not LD_LIBRARY_PATH: the processes Helix starts keep the system's libraries.
    assert "LD_LIBRARY_PATH" not in wrapper
