"""Typed errors of the ACP client layer: each carries a JSON-RPC code and a message."""

from __future__ import annotations

from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
REQUEST_CANCELLED = -32800
AUTH_REQUIRED = -32000
RESOURCE_NOT_FOUND = -32002
# Our own codes (JSON-RPC reserves -32099..-32000 for implementations).
CONNECTION_CLOSED = -32098
REQUEST_TIMEOUT = -32097
CAPABILITY_MISSING = -32096


class AcpError(Exception):
    """An error with a JSON-RPC code, a human message and optional data."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def described(self, max_details: int = 500) -> str:
        """The message and what `data` adds (agents put the real reason there, e.g. -32603
        "Internal error" with `data.details`), on one line, bounded."""
        data = self.data
        extra = data if isinstance(data, str) else None
        if isinstance(data, dict):
            extra = next(
                (data[k] for k in ("details", "message", "reason") if isinstance(data.get(k), str)), None
            )
        extra = " ".join(extra.split()) if extra else ""
        if not extra or extra == self.message:
            return self.message
        if len(extra) > max_details:
            extra = extra[:max_details] + "…"
        return f"{self.message}: {extra}"

    def to_json(self) -> dict[str, Any]:
        err: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            err["data"] = self.data
        return err

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code}, {self.message!r})"


class RemoteError(AcpError):
    """The agent answered a request with an error."""


class AuthRequired(RemoteError):
    """The agent answered -32000: the user must authenticate first."""


class ConnectionClosed(AcpError):
    """The agent's connection ended while something still waited on it."""

    def __init__(self, message: str = "the agent connection is closed") -> None:
        super().__init__(CONNECTION_CLOSED, message)


class RequestTimeout(AcpError):
    def __init__(self, method: str, seconds: float) -> None:
        super().__init__(REQUEST_TIMEOUT, f"the agent did not answer {method} within {seconds:g} s")


class CapabilityMissing(AcpError):
    """We never call what the agent did not offer; this says so clearly instead."""

    def __init__(self, what: str) -> None:
        super().__init__(CAPABILITY_MISSING, f"the agent does not offer {what}")


class MethodNotFound(AcpError):
    def __init__(self, method: str) -> None:
        super().__init__(METHOD_NOT_FOUND, f"method not found: {method}")


class InvalidParams(AcpError):
    def __init__(self, message: str) -> None:
        super().__init__(INVALID_PARAMS, message)


def remote_error(payload: Any) -> RemoteError:
    """Build the typed exception for an `error` member received from the agent."""
    if not isinstance(payload, dict):
        return RemoteError(INTERNAL_ERROR, f"malformed error from agent: {payload!r:.200}")
    code = payload.get("code")
    message = payload.get("message")
    if not isinstance(code, int) or isinstance(code, bool):
        code = INTERNAL_ERROR
    if not isinstance(message, str) or not message:
        message = "the agent reported an error without a message"
    cls = AuthRequired if code == AUTH_REQUIRED else RemoteError
    return cls(code, message, payload.get("data"))
