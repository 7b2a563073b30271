"""The demo agent's behaviour switches, read once from the environment (see README)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from sidecar.demo_agent.protocol import log

CAP_TOKENS = {
    "no-load",
    "no-list",
    "no-resume",
    "no-close",
    "no-delete",
    "no-fork",
    "fork-not-live",
    "no-set-title",
    "no-embedded",
    "no-cost",
    "legacy-model",
    "auth",
    "own-writes",
}
RENAME_MODES = {"confirm", "ignore", "other", "slow"}
CRASH_POINTS = {"", "startup", "initialize"}
DIFF_STYLES = {"whole", "snippet"}


@dataclass
class Settings:
    """Behaviour switches read from the environment (see README)."""

    caps: set[str] = field(default_factory=set)
    chunk_delay_ms: float = 15.0
    page_size: int = 50
    list_loop: bool = False
    rename: str = "confirm"
    crash_at: str = ""
    diffs: str = "whole"  # whole | snippet (only the changed part, as claude-agent-acp's Edit)
    name: str = ""  # agentInfo.name (and title) in place of the demo agent's own (ACP_DEMO_NAME)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Settings:
        settings = cls()
        for token in env.get("ACP_DEMO_CAPS", "").split(","):
            token = token.strip().lower()
            if not token:
                continue
            if token in CAP_TOKENS:
                settings.caps.add(token)
            else:
                log(f"ACP_DEMO_CAPS: unknown token {token!r} ignored")
        settings.chunk_delay_ms = _env_number(env, "ACP_DEMO_CHUNK_DELAY_MS", 15.0)
        settings.page_size = max(1, int(_env_number(env, "ACP_DEMO_PAGE_SIZE", 50)))
        settings.list_loop = env.get("ACP_DEMO_LIST_LOOP", "") not in ("", "0", "false")
        rename = env.get("ACP_DEMO_RENAME", "confirm").strip().lower() or "confirm"
        if rename not in RENAME_MODES:
            log(f"ACP_DEMO_RENAME: unknown value {rename!r}, using confirm")
            rename = "confirm"
        settings.rename = rename
        settings.crash_at = env.get("ACP_DEMO_CRASH_AT", "").strip().lower()
        if settings.crash_at not in CRASH_POINTS:
            log(f"ACP_DEMO_CRASH_AT: unknown value {settings.crash_at!r} ignored")
        settings.diffs = env.get("ACP_DEMO_DIFFS", "whole").strip().lower() or "whole"
        if settings.diffs not in DIFF_STYLES:
            log(f"ACP_DEMO_DIFFS: unknown value {settings.diffs!r}, using whole")
            settings.diffs = "whole"
        settings.name = env.get("ACP_DEMO_NAME", "").strip()
        return settings

    def has(self, cap: str) -> bool:
        return cap in self.caps


def _env_number(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        log(f"{name}: not a number ({raw!r}), using {default:g}")
        return default
    return max(0.0, value)
