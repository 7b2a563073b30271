"""The ACP client layer: knows nothing of LSP."""

from .client import AcpClient, AgentDescription, ClientHandler
from .errors import (
    AcpError,
    AuthRequired,
    CapabilityMissing,
    ConnectionClosed,
    InvalidParams,
    MethodNotFound,
    RemoteError,
    RequestTimeout,
)
from .process import AgentProcess

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
