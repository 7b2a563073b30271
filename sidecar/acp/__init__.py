"""The ACP client layer: knows nothing of LSP."""

from sidecar.acp.client import AcpClient, AgentDescription, ClientHandler
from sidecar.acp.errors import (
    AcpError,
    AuthRequired,
    CapabilityMissing,
    ConnectionClosed,
    InvalidParams,
    MethodNotFound,
    RemoteError,
    RequestTimeout,
)
from sidecar.acp.process import AgentProcess

__all__ = [
    "AcpClient",
    "AcpError",
    "AgentDescription",
    "AgentProcess",
    "AuthRequired",
    "CapabilityMissing",
    "ClientHandler",
    "ConnectionClosed",
    "InvalidParams",
    "MethodNotFound",
    "RemoteError",
    "RequestTimeout",
]
