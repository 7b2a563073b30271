"""Provisioning of what the tests need beyond PyPI: system packages, real editors, production agents.

One place, one cache. Each step is a module of this package with

    NAME: str                      # the step's name on the command line
    def ensure(cache: Path) -> None   # install into `cache` (idempotent, fast when done)
    def problem(cache: Path) -> str | None  # None when ready, else what is missing

Downloads go to one cache directory outside the repository, reused by later
runs: `$ACP_SIDECAR_TOOLS_CACHE`, else `$XDG_CACHE_HOME/acp-sidecar-tools`,
else `~/.cache/acp-sidecar-tools`. A step that cannot run (offline, not root
for apt) fails loudly with what to do; tests that need a missing tool fail
with the command that installs it, never skip.
"""

from __future__ import annotations

import os
from pathlib import Path

SETUP_HINT = "run `make setup` (python -m tools.provision) to install it"


def cache_dir() -> Path:
    explicit = os.environ.get("ACP_SIDECAR_TOOLS_CACHE")
    if explicit:
        return Path(explicit).expanduser().resolve()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser().resolve() / "acp-sidecar-tools"


class ProvisionError(RuntimeError):
    """A step could not install what it provides; the message says what to do."""


# What apt-get (and other downloaders) say when the network is not there. `apt-get update`
# exits 0 with only warnings when a mirror is unreachable: look at what it says, not its code.
_OFFLINE_SIGNS = (
    "Could not resolve",
    "Temporary failure resolving",
    "Could not connect",
    "Network is unreachable",
    "Connection timed out",
    "Failed to fetch",
)


def looks_offline(output: str) -> bool:
    return any(sign in output for sign in _OFFLINE_SIGNS)


def tail(output: str, lines: int = 8) -> str:
    return "\n".join(output.strip().splitlines()[-lines:])
