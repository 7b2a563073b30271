"""A scripted model server on 127.0.0.1 (a free port) that the production agents use as their provider.

`MockModel` serves the three provider APIs of `mock_providers` with the answers of `mock_script`,
records every request, answers an unknown path 404 with a message naming it (and logs it), and
refuses proxy requests (CONNECT, absolute URLs) at once, so that an agent that phones an outside
host at start fails fast when its proxy variable points here.
"""

from __future__ import annotations

import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from tests.production.mock_providers import route
from tests.production.mock_script import Request, Script

log = logging.getLogger("mock_model")


class MockModel:
    """`with MockModel() as mock:`; `base_url` is `http://127.0.0.1:PORT`; `script` the scenarios."""

    def __init__(self) -> None:
        self.script = Script()
        self.requests: list[Request] = []
        self.unknown: list[str] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> MockModel:
        model = self

        class Handler(_Handler):
            mock = model

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        server = self._server
        self._thread = threading.Thread(
            target=lambda: server.serve_forever(poll_interval=0.05), name="mock-model", daemon=True
        )
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.script.stopping.set()  # ends slow streams, so their threads finish
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(10)

    @property
    def base_url(self) -> str:
        assert self._server is not None, "enter the mock first"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def record(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)
        if request.provider in ("unknown", "proxy"):
            log.warning("mock model refused %s %s", request.method, request.path)

    def of(self, scenario: str) -> list[Request]:
        """The main-loop requests of one scenario, in arrival order."""
        with self._lock:
            return [r for r in self.requests if r.scenario == scenario]

    def describe(self) -> str:
        """One line per request, for assertion messages."""
        with self._lock:
            return "\n".join(
                f"{r.provider} {r.method} {r.path} [{r.scenario}] results={len(r.tool_results)}"
                for r in self.requests
            )


class _Handler(BaseHTTPRequestHandler):
    mock: MockModel
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s " + format, self.address_string(), *args)

    def do_CONNECT(self) -> None:
        self.mock.record(Request("proxy", "CONNECT", self.path, None))
        self._refuse(403, "mock model: no outside hosts here")

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def _dispatch(self, method: str) -> None:
        raw = self._body()
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode(errors="replace")
        if self.path.startswith(("http://", "https://")):
            self.mock.record(Request("proxy", method, self.path, body))
            self._refuse(403, "mock model: no outside hosts here")
            return
        path = urlsplit(self.path).path
        provider = route(method, path)
        if provider is None:
            self.mock.unknown.append(f"{method} {self.path}")
            self.mock.record(Request("unknown", method, self.path, body))
            self._refuse(404, f"mock model: no route for {method} {self.path}")
            return
        provider(self, self.mock.script, path, body)

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() != "chunked":
            length = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(length) if length else b""
        data = b""
        while size := int(self.rfile.readline().strip().split(b";")[0], 16):
            data += self.rfile.read(size)
            self.rfile.readline()
        self.rfile.readline()
        return data

    def _refuse(self, status: int, message: str) -> None:
        self.send_json(status, {"error": {"code": status, "message": message, "type": "mock_refused"}})
        self.close_connection = True

    # ------------------------------------------------------------------ what providers use
    def record(self, request: Request) -> None:
        self.mock.record(request)

    def send_json(self, status: int, obj: Any) -> None:
        payload = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def start_sse(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")  # the stream ends with the connection
        self.end_headers()
        self.close_connection = True

    def sse(self, data: Any, event: str | None = None) -> bool:
        """Send one event; False when the client has gone (a cancelled turn)."""
        # A string goes as it is: Chat Completions ends its stream with `data: [DONE]`.
        payload = data if isinstance(data, str) else json.dumps(data)
        frame = (f"event: {event}\n" if event else "") + f"data: {payload}\n\n"
        try:
            self.wfile.write(frame.encode())
            self.wfile.flush()
        except OSError:
            return False
        return True
