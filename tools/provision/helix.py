"""Real Helix for tests/editors/helix: Debian sid's `hx`, run with sid's own loader.

Debian 12 has no Helix, and sid's `hx` needs a newer glibc than the system's.
So: a private apt configuration (its own sources list with one line
`deb MIRROR sid main`, MIRROR being the Debian mirror the machine's apt
sources already use; its own lists and cache dirs) downloads `hx`, `libc6`
and `libgcc-s1`; `dpkg-deb -x` extracts all three into one root in the
cache; a wrapper script runs hx with that root's loader and libraries. The
system's apt state is never touched. Processes Helix starts (the sidecar)
use the system loader: `--library-path` is not inherited the way
LD_LIBRARY_PATH would be.

Layout under CACHE/helix: apt/ (private apt state), debs/, root/, hx (the wrapper).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path

from . import ProvisionError, looks_offline, tail

NAME = "helix"
PACKAGES = ("hx", "libc6", "libgcc-s1")
MIRROR_ENV = "ACP_SIDECAR_DEBIAN_MIRROR"
LIBDIR = "usr/lib/x86_64-linux-gnu"


def helix_dir(cache: Path) -> Path:
    return cache / "helix"


def hx_path(cache: Path) -> Path:
    """The wrapper the tests run as `hx`."""
    return helix_dir(cache) / "hx"


def runtime_dir(cache: Path) -> Path:
    return helix_dir(cache) / "root" / "usr/lib/hx/runtime"


def version(hx: Path) -> str | None:
    """`hx --version` (e.g. "helix 25.07.1"), or None when it does not run."""
    try:
        result = subprocess.run([str(hx), "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    out = result.stdout.strip()
    return out if result.returncode == 0 and out.startswith("helix ") else None


def problem(cache: Path) -> str | None:
    hx = hx_path(cache)
    if not hx.exists():
        return f"no Helix at {hx}"
    if version(hx) is None:
        return f"{hx} --version fails (a broken download? remove {helix_dir(cache)} and run again)"
    return None


def debian_mirror() -> str:
    """The Debian archive URI the machine's own apt sources use (ACP_SIDECAR_DEBIAN_MIRROR overrides)."""
    explicit = os.environ.get(MIRROR_ENV)
    if explicit:
        return explicit
    if shutil.which("apt-get") is None:
        raise ProvisionError(f"Helix comes from Debian sid with apt-get, which this machine lacks ({_HINT})")
    result = subprocess.run(
        ["apt-get", "indextargets", "--format", "$(REPO_URI) $(RELEASE) $(COMPONENT) $(TARGET_OF)"],
        capture_output=True,
        text=True,
        check=False,
    )
    for line in result.stdout.splitlines():
        fields = line.split()
        # The main archive: a plain suite (not -security, -updates, -backports) with `main`.
        if len(fields) == 4 and fields[3] == "deb" and fields[2] == "main" and "-" not in fields[1]:
            return fields[0]
    raise ProvisionError(f"no Debian mirror found in the machine's apt sources ({_HINT})")


_HINT = f"set {MIRROR_ENV} to a Debian mirror URL, e.g. http://deb.debian.org/debian"


def _apt_options(apt: Path) -> list[str]:
    return [
        "-o", f"Dir::Etc::SourceList={apt / 'sources.list'}",
        "-o", f"Dir::Etc::SourceParts={apt / 'sources.list.d'}",
        "-o", f"Dir::Etc::Preferences={apt / 'preferences'}",
        "-o", f"Dir::Etc::PreferencesParts={apt / 'preferences.d'}",
        "-o", f"Dir::State::Lists={apt / 'lists'}",
        "-o", f"Dir::Cache={apt / 'cache'}",
        # The download user `_apt` may not write into the cache; we are the only user of these dirs.
        "-o", "APT::Sandbox::User=root",
        "-q",
    ]  # fmt: skip


def _run(cmd: list[str], cwd: Path, what: str) -> None:
    result = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    output = result.stdout + result.stderr
    if looks_offline(output):
        raise ProvisionError(
            f"offline? {what} could not reach the Debian mirror. Connect to the network and run "
            f"`make setup` again (or {_HINT}).\n$ {shlex.join(cmd)}\n{tail(output)}"
        )
    if result.returncode != 0:
        raise ProvisionError(
            f"{what} failed (exit {result.returncode}); does the mirror have Debian sid? ({_HINT})\n"
            f"$ {shlex.join(cmd)}\n{tail(output)}"
        )


def _wrapper(root: Path) -> str:
    loader = shlex.quote(str(root / LIBDIR / "ld-linux-x86-64.so.2"))
    libs = shlex.quote(str(root / LIBDIR))
    binary = shlex.quote(str(root / "usr/lib/hx/hx"))
    runtime = shlex.quote(str(root / "usr/lib/hx/runtime"))
    return (
        "#!/bin/sh\n"
        "# Debian sid's Helix with sid's own loader (tools/provision/helix.py).\n"
        f"HELIX_RUNTIME={runtime}\n"
        "export HELIX_RUNTIME\n"
        f'exec {loader} --library-path {libs} {binary} "$@"\n'
    )


def ensure(cache: Path) -> None:
    if problem(cache) is None:
        return
    base = helix_dir(cache)
    apt = base / "apt"
    debs = base / "debs"
    for d in (
        apt / "sources.list.d",
        apt / "preferences.d",
        apt / "lists" / "partial",
        apt / "cache" / "archives" / "partial",
    ):
        d.mkdir(parents=True, exist_ok=True)
    mirror = debian_mirror()
    (apt / "sources.list").write_text(f"deb {mirror} sid main\n")
    options = _apt_options(apt)
    print(f"provision helix: hx from {mirror} sid", flush=True)
    _run(["apt-get", *options, "update"], base, "apt-get update (sid, private lists)")
    shutil.rmtree(debs, ignore_errors=True)
    debs.mkdir()
    _run(["apt-get", *options, "download", *PACKAGES], debs, "apt-get download " + " ".join(PACKAGES))
    # Extract into a fresh directory, then swap it in: a failed run never leaves half a root.
    fresh = base / "root.new"
    shutil.rmtree(fresh, ignore_errors=True)
    fresh.mkdir()
    for deb in sorted(debs.glob("*.deb")):
        _run(["dpkg-deb", "-x", str(deb), str(fresh)], base, f"dpkg-deb -x {deb.name}")
    root = base / "root"
    shutil.rmtree(root, ignore_errors=True)
    fresh.rename(root)
    wrapper = hx_path(cache)
    wrapper.write_text(_wrapper(root))
    wrapper.chmod(0o755)
