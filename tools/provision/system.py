"""System packages from Debian that the tests need, installed with apt-get when missing.

Only this step touches the system; everything else goes to the cache. It runs
apt-get non-interactively as root (CI is root on a fresh Debian machine); as
another user, or without apt, or offline, it fails with the exact command to
run instead.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from . import ProvisionError, looks_offline, tail

NAME = "system"

# Debian package -> why the tests need it.
PACKAGES: dict[str, str] = {
    "lua-check": "luacheck for `make lint` (the Neovim plugin's Lua)",
    "tmux": "runs real Helix in tests/editors/helix",
    "chromium": "drives code-server in the VS Code tests",
    "chromium-driver": "drives code-server in the VS Code tests",
    "libkrb5-dev": "code-server's native build (kerberos module)",
}

# Another engineer's (or CI job's) apt run may hold the dpkg lock: wait for it rather than fail.
_APT_OPTIONS = ("-o", "DPkg::Lock::Timeout=600", "-o", "APT::Get::Assume-Yes=true")


def install_command(packages: list[str]) -> str:
    return f"sudo apt-get update && sudo apt-get install -y --no-install-recommends {' '.join(packages)}"


def missing_packages() -> list[str]:
    """The packages dpkg does not report as installed (all of them when there is no dpkg)."""
    if shutil.which("dpkg-query") is None:
        return list(PACKAGES)
    result = subprocess.run(
        ["dpkg-query", "-W", "-f=${Package} ${db:Status-Status}\n", *PACKAGES],
        capture_output=True,
        text=True,
        check=False,
    )
    installed = {line.split()[0] for line in result.stdout.splitlines() if line.endswith(" installed")}
    return [p for p in PACKAGES if p not in installed]


def problem(cache: Path) -> str | None:
    missing = missing_packages()
    if not missing:
        return None
    reasons = "; ".join(f"{p}: {PACKAGES[p]}" for p in missing)
    return f"missing Debian packages ({reasons}); install with: {install_command(missing)}"


def _apt(args: list[str], what: str, packages: list[str]) -> None:
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    result = subprocess.run(
        ["apt-get", *_APT_OPTIONS, *args], capture_output=True, text=True, env=env, check=False
    )
    output = result.stdout + result.stderr
    offline = looks_offline(output)
    if result.returncode == 0 and not offline:
        return
    if offline:
        raise ProvisionError(
            f"offline? apt-get {what} could not reach the Debian mirror. Connect to the network "
            f"and run `make setup` again, or install by hand: {install_command(packages)}\n{tail(output)}"
        )
    raise ProvisionError(
        f"apt-get {what} failed (exit {result.returncode}); "
        f"install by hand: {install_command(packages)}\n{tail(output)}"
    )


def ensure(cache: Path) -> None:
    missing = missing_packages()
    if not missing:
        return
    if shutil.which("apt-get") is None or shutil.which("dpkg-query") is None:
        raise ProvisionError(
            f"not a Debian system (no apt-get/dpkg): install the equivalents of {', '.join(missing)} "
            f"({'; '.join(PACKAGES[p] for p in missing)})"
        )
    if os.geteuid() != 0:
        raise ProvisionError(f"installing Debian packages needs root; run: {install_command(missing)}")
    print(f"provision system: apt-get install {' '.join(missing)}", flush=True)
    _apt(["update", "-q"], "update", missing)
    _apt(["install", "-q", "--no-install-recommends", *missing], "install", missing)
