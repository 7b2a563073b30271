"""A session's context window and cost, from the agent's `usage_update`, as `acp/status` shows them.

The update is untrusted: a field of the wrong type is dropped, not trusted
(claude-agent-acp 0.23.1 sends `"used": null`, which the schema does not
allow); an update with neither a usable `used` nor `size` changes nothing.
A number out of range (over 2**53 - 1, which every editor's JSON holds exactly; NaN; infinite)
is a bad number too, dropped with a log line: 10**400 would overflow any float arithmetic.
"""

from __future__ import annotations

import logging
import math
from typing import Any

from sidecar.text_safety import sanitize_text

log = logging.getLogger(__name__)

JsonObj = dict[str, Any]

# The largest integer a JSON number holds exactly in every editor (JavaScript's Number).
MAX_SAFE_INTEGER = 2**53 - 1

# ISO 4217 codes are 3 letters; "credits" and the like are longer, but a unit is a word.
_MAX_CURRENCY = 16


def _out_of_range(field: str, value: int | float) -> None:
    # Not str(value): a long enough integer refuses to become a string.
    shown = f"a {value.bit_length()}-bit integer" if isinstance(value, int) else repr(value)
    log.warning("usage_update: %s out of range (%s); ignored", field, shown)


def _tokens(field: str, value: object) -> int | None:
    if isinstance(value, float) and not math.isfinite(value):
        _out_of_range(field, value)
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    if value > MAX_SAFE_INTEGER:
        _out_of_range(field, value)
        return None
    return value


def _in_range(amount: int | float) -> bool:
    if isinstance(amount, int):
        return abs(amount) <= MAX_SAFE_INTEGER
    return math.isfinite(amount)


def _cost(value: object) -> JsonObj | None:
    if not isinstance(value, dict):
        return None
    amount, currency = value.get("amount"), value.get("currency")
    if isinstance(amount, bool) or not isinstance(amount, int | float):
        return None
    if not _in_range(amount):
        _out_of_range("cost.amount", amount)
        return None
    if not isinstance(currency, str):
        return None
    unit = sanitize_text(currency, _MAX_CURRENCY)
    return {"amount": amount, "currency": unit} if unit else None


def parse_usage(update: JsonObj) -> JsonObj | None:
    """`{used, size, cost?}` from a `usage_update` (a bad number becomes null), or None to ignore it."""
    used, size = _tokens("used", update.get("used")), _tokens("size", update.get("size"))
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
    if used > MAX_SAFE_INTEGER or size > MAX_SAFE_INTEGER:  # parse_usage never keeps these
        return None
    share = 100 * used / size
    if 0 < share < 1:
        return "<1% context"
    return f"{share:.0f}% context"
