"""What the demo agent offers: its identity, modes, models, options and permission choices."""

from __future__ import annotations

from sidecar import __version__
from sidecar.demo_agent.protocol import JsonObject
from sidecar.demo_agent.store import SessionRecord

PROTOCOL_VERSION = 1
AGENT_INFO = {"name": "acp-sidecar-demo", "title": "acp-sidecar demo agent", "version": __version__}


def agent_info(name: str = "") -> dict[str, str]:
    """`agentInfo`: the demo agent's, or under `name` (ACP_DEMO_NAME: a second agent in tests)."""
    if not name:
        return AGENT_INFO
    return {"name": name, "title": f"{name} (demo agent)", "version": __version__}


MODES = [
    {"id": "ask", "name": "Ask", "description": "Ask before every edit"},
    {"id": "code", "name": "Code", "description": "Edit files (still asks permission)"},
    {"id": "plan", "name": "Plan", "description": "Plan only, never edit"},
]
MODE_IDS = {m["id"] for m in MODES}
MODELS = [("demo-fast", "Demo Fast"), ("demo-smart", "Demo Smart")]
MODEL_IDS = {v for v, _ in MODELS}
VERBOSITY = [("normal", "Normal"), ("terse", "Terse")]
CONTEXT_SIZE = {"demo-fast": 128_000, "demo-smart": 200_000}
# USD per million tokens in context, for usage_update's cumulative cost.
PRICE_PER_MILLION_TOKENS = {"demo-fast": 2.0, "demo-smart": 10.0}
PERMISSION_OPTIONS = [
    {"optionId": "allow-once", "name": "Allow", "kind": "allow_once"},
    {"optionId": "allow-always", "name": "Always allow", "kind": "allow_always"},
    {"optionId": "reject-once", "name": "Reject", "kind": "reject_once"},
]
PERMISSION_NAMES = {o["optionId"]: o["name"] for o in PERMISSION_OPTIONS}
ALLOW_OPTIONS = {"allow-once", "allow-always"}
AUTH_METHOD = {
    "id": "demo-login",
    "name": "Demo login",
    "description": "Pretend to log in; always succeeds (ACP_DEMO_CAPS=auth)",
}


def config_options(record: SessionRecord, *, legacy_model: bool) -> list[JsonObject]:
    """The session's config options; the model is one unless it uses the legacy model API."""
    options: list[JsonObject] = []
    if not legacy_model:
        options.append(
            {
                "id": "model",
                "name": "Model",
                "category": "model",
                "type": "select",
                "currentValue": record.config["model"],
                "options": [{"value": v, "name": n} for v, n in MODELS],
            }
        )
    options.append(
        {
            "id": "verbosity",
            "name": "Verbosity",
            "type": "select",
            "currentValue": record.config["verbosity"],
            "options": [{"value": v, "name": n} for v, n in VERBOSITY],
        }
    )
    return options


def session_state(record: SessionRecord, *, legacy_model: bool) -> JsonObject:
    """Modes, config options (and legacy models) as new/load/resume answer them."""
    state: JsonObject = {
        "modes": {"currentModeId": record.mode_id, "availableModes": MODES},
        "configOptions": config_options(record, legacy_model=legacy_model),
    }
    if legacy_model:
        state["models"] = {
            "currentModelId": record.config["model"],
            "availableModels": [{"modelId": v, "name": n} for v, n in MODELS],
        }
    return state
