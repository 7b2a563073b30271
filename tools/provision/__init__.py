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
