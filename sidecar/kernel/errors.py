"""Errors the session engine reports to the editor: a code and a human message."""

from __future__ import annotations

from typing import Any

from sidecar.acp.errors import AcpError

# JSON-RPC codes for the editor side (LSP reserves -32899..-32800 and -32099..-32000).
INVALID_PARAMS = -32602
UNKNOWN_SESSION = -32001
NO_ACTIVE_SESSION = -32003
QUEUE_FULL = -32004
AGENT_DOWN = -32005
CAPABILITY = -32006
PATH_REFUSED = -32007
AUTH_REQUIRED = -32000


class SidecarError(AcpError):
    """An error meant for the user; the message says what happened and what to do."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(code, message, data)


def unknown_session(session_id: str) -> SidecarError:
    return SidecarError(UNKNOWN_SESSION, f"unknown session: {session_id!r:.80}")


def no_active_session() -> SidecarError:
    return SidecarError(
        NO_ACTIVE_SESSION,
        "no active session: start one with acp.session.new or load one with acp.session.load",
    )


def invalid(message: str) -> SidecarError:
    return SidecarError(INVALID_PARAMS, message)


def queue_full(session_id: str, bound: int) -> SidecarError:
    return SidecarError(
        QUEUE_FULL,
        f"the prompt queue of session {session_id} is full ({bound} turns waiting); "
        "wait for a turn to end or cancel it",
    )


def agent_down(reason: str) -> SidecarError:
    return SidecarError(AGENT_DOWN, f"the agent is not running: {reason}")


def path_refused(path: str, why: str) -> SidecarError:
    return SidecarError(PATH_REFUSED, f"refused access to {path!r:.300}: {why}")
