"""Which parts of docs/protocol.md the installed sidecar offers, asked of the sidecar itself.

Some workbench scenarios need sidecar features that land separately
(`acp/permission` with `notify.permissionDialog`, transcript documents). The
probe starts the sidecar once over a real LSP pipe, as the extension does, and
reads its answer: the commands it registers and the options it refuses.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from typing import Any

from tests.editors.vscode.harness import SIDECAR

OPTIONS = {"notify": {"permissionDialog": False}, "transcript": {"showOnPrompt": False}}


@dataclass(frozen=True)
class SidecarFeatures:
    transcripts: bool
    permission_notifications: bool

    def missing(self, feature: str) -> str | None:
        """None when offered, else what is missing (for the xfail reason)."""
        if feature == "transcripts" and not self.transcripts:
            return "transcript documents (acp.session.transcript, issue 12)"
        if feature == "permission_notifications" and not self.permission_notifications:
            return "acp/permission notifications with notify.permissionDialog (docs/protocol.md)"
        return None


def _send(proc: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
    body = json.dumps(message).encode()
    assert proc.stdin is not None
    proc.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    proc.stdin.flush()


def _read(proc: subprocess.Popen[bytes]) -> dict[str, Any]:
    assert proc.stdout is not None
    length = 0
    while True:
        line = proc.stdout.readline()
        if not line:
            raise AssertionError("the sidecar closed its output during the feature probe")
        if line in (b"\r\n", b"\n"):
            break
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    result: dict[str, Any] = json.loads(proc.stdout.read(length))
    return result


def probe() -> SidecarFeatures:
    with tempfile.TemporaryDirectory() as state:
        proc = subprocess.Popen(
            [SIDECAR, "--stdio", "--state-dir", state],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            _send(
                proc,
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "processId": None,
                        "rootUri": None,
                        "capabilities": {},
                        "initializationOptions": OPTIONS,
                    },
                },
            )
            commands: list[str] = []
            while True:
                msg = _read(proc)
                if msg.get("id") == 1:
                    commands = (
                        msg["result"]["capabilities"].get("executeCommandProvider", {}).get("commands", [])
                    )
                    break
            _send(proc, {"jsonrpc": "2.0", "method": "initialized", "params": {}})
            # Option problems are reported after `initialized`; acp.status answers after them.
            _send(
                proc,
                {
                    "jsonrpc": "2.0",
                    "id": 2,
                    "method": "workspace/executeCommand",
                    "params": {"command": "acp.status", "arguments": [{}]},
                },
            )
            refused: list[str] = []
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                msg = _read(proc)
                if msg.get("method") == "window/showMessage":
                    refused.append(str(msg["params"].get("message")))
                if msg.get("id") == 2:
                    break
            _send(proc, {"jsonrpc": "2.0", "id": 3, "method": "shutdown", "params": None})
            _send(proc, {"jsonrpc": "2.0", "method": "exit", "params": None})
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(30)  # how it exits is for the lifecycle tests; the answers are in
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # the sidecar's group: its agent too
            proc.wait(10)
    return SidecarFeatures(
        transcripts="acp.session.transcript" in commands,
        permission_notifications=not any("permissionDialog" in m for m in refused),
    )
