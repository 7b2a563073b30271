"""A session's context window and cost, from the agent's `usage_update`, as `acp/status` shows them.

The update is untrusted: a field of the wrong type is dropped, not trusted
(claude-agent-acp 0.23.1 sends `"used": null`, which the schema does not
allow); an update with neither a usable `used` nor `size` changes nothing.
"""

from __future__ import annotations

import math
from typing import Any

from ..titles import sanitize_text

JsonObj = dict[str, Any]

# ISO 4217 codes are 3 letters; "credits" and the like are longer, but a unit is a word.
_MAX_CURRENCY = 16


def _tokens(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def _cost(value: object) -> JsonObj | None:
    if not isinstance(value, dict):
        return None
    amount, currency = value.get("amount"), value.get("currency")
    if isinstance(amount, bool) or not isinstance(amount, int | float) or not math.isfinite(amount):
        return None
    if not isinstance(currency, str):
        return None
    unit = sanitize_text(currency, _MAX_CURRENCY)
    return {"amount": amount, "currency": unit} if unit else None


def parse_usage(update: JsonObj) -> JsonObj | None:
    """`{used, size, cost?}` from a `usage_update` (a bad number becomes null), or None to ignore it."""
    used, size = _tokens(update.get("used")), _tokens(update.get("size"))
    if used is None and size is None:
        return None
    usage: JsonObj = {"used": used, "size": size}
    cost = _cost(update.get("cost"))
    if cost is not None:
        usage["cost"] = cost
    return usage


def context_share(usage: JsonObj | None) -> str | None:
    """How full the context window is, for the status line ("4% context"), when both numbers are known."""
    if usage is None:
        return None
    used, size = usage.get("used"), usage.get("size")
    if not isinstance(used, int) or not isinstance(size, int) or size <= 0:
        return None
    share = 100 * used / size
    if 0 < share < 1:
        return "<1% context"
    return f"{share:.0f}% context"
