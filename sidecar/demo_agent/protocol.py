"""Newline-delimited JSON-RPC 2.0 over the process's stdin/stdout.

Only JSON-RPC frames ever go to stdout; diagnostics go to stderr through
:func:`log`. Incoming requests each run as their own task so that the reader
keeps going while a prompt runs (``session/cancel`` arrives mid-prompt).
Writes are synchronous appends to the transport buffer, so a handler that
sends several frames without awaiting in between keeps them together and in
order; long streams call :meth:`Connection.drain` for back-pressure.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import select
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from sidecar.acp.errors import (  # one definition of the codes for both sides
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    REQUEST_CANCELLED,
)

JsonObject = dict[str, Any]

CANCEL_REQUEST_METHOD = "$/cancel_request"
# Client frames can carry whole embedded files; a larger frame is dropped
# (answered with a parse error) instead of killing the reader.
MAX_FRAME = 64 * 1024 * 1024
_READ_CHUNK = 256 * 1024


class RpcError(Exception):
    """An error to answer (or that the client answered) as a JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_json(self) -> JsonObject:
        err: JsonObject = {"code": self.code, "message": self.message}
        if self.data is not None:
            err["data"] = self.data
        return err


def log(message: str) -> None:
    """Write one diagnostic line to stderr (never stdout)."""
    write_stderr(f"acp-sidecar demo agent: {message}\n".encode(errors="replace"))


def write_stderr(data: bytes) -> None:
    # stderr may share its open file description with stdout, which asyncio
    # made non-blocking: retry partial and would-block writes instead of
    # losing data or raising.
    view = memoryview(data)
    while view:
        try:
            n = os.write(2, view)
        except BlockingIOError:
            select.select([], [2], [], 0.05)
            continue
        except OSError:
            return  # stderr closed: diagnostics are best effort
        view = view[n:]


def encode(obj: Any) -> bytes:
    try:
        text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
        return text.encode() + b"\n"
    except UnicodeEncodeError:
        # Lone surrogates (e.g. echoed from a hostile title) are not UTF-8.
        return json.dumps(obj, separators=(",", ":")).encode() + b"\n"


class Stdio:
    """Byte transport over fds 0/1; asyncio pipes, or threads for regular files."""

    def __init__(self) -> None:
        self._reader: asyncio.StreamReader | None = None
        self._wtransport: asyncio.WriteTransport | None = None
        self._wprotocol: _WriteProtocol | None = None
        self._queue: asyncio.Queue[bytes] | None = None
        self.lost: asyncio.Event = asyncio.Event()

    async def open(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            reader = asyncio.StreamReader(limit=MAX_FRAME)
            await loop.connect_read_pipe(
                lambda: asyncio.StreamReaderProtocol(reader),
                os.fdopen(0, "rb", buffering=0, closefd=False),
            )
            self._reader = reader
        except (ValueError, OSError):
            self._start_reader_thread(loop)
        try:
            proto = _WriteProtocol(self.lost)
            transport, _ = await loop.connect_write_pipe(
                lambda: proto, os.fdopen(1, "wb", buffering=0, closefd=False)
            )
            self._wtransport = transport
            self._wprotocol = proto
        except (ValueError, OSError):
            pass  # blocking writes to a regular file, see write()

    def _start_reader_thread(self, loop: asyncio.AbstractEventLoop) -> None:
        queue: asyncio.Queue[bytes] = asyncio.Queue()
        self._queue = queue

        def pump() -> None:
            while True:
                try:
                    data = os.read(0, _READ_CHUNK)
                except OSError:
                    data = b""
                try:
                    loop.call_soon_threadsafe(queue.put_nowait, data)
                except RuntimeError:
                    return  # loop closed
                if not data:
                    return

        threading.Thread(target=pump, name="demo-agent-stdin", daemon=True).start()

    async def read(self) -> bytes:
        """Next chunk of stdin; ``b""`` at EOF."""
        if self._reader is not None:
            return await self._reader.read(_READ_CHUNK)
        assert self._queue is not None
        return await self._queue.get()

    def write(self, data: bytes) -> None:
        if self.lost.is_set():
            return
        if self._wtransport is not None:
            self._wtransport.write(data)
            return
        view = memoryview(data)
        while view:
            try:
                n = os.write(1, view)
            except BlockingIOError:
                select.select([], [1], [], 0.05)
                continue
            except OSError:
                self.lost.set()
                return
            view = view[n:]

    async def drain(self) -> None:
        if self._wprotocol is not None:
            await self._wprotocol.drain()

    def pending(self) -> int:
        if self._wtransport is None or self.lost.is_set():
            return 0
        return self._wtransport.get_write_buffer_size()

    async def flush(self, limit_s: float = 5.0) -> None:
        """Wait until everything written so far has left the process."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(limit_s):
                # The transport has no "buffer empty" event: poll its size.
                while self.pending():  # noqa: ASYNC110
                    await asyncio.sleep(0.005)


class _WriteProtocol(asyncio.BaseProtocol):
    def __init__(self, lost: asyncio.Event) -> None:
        self._paused = False
        self._waiters: list[asyncio.Future[None]] = []
        self._lost = lost

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        self._wake()

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost.set()
        self._wake()

    def _wake(self) -> None:
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._waiters.clear()

    async def drain(self) -> None:
        if self._paused and not self._lost.is_set():
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            await waiter


RequestHandler = Callable[[str, JsonObject, "Incoming"], Awaitable[Any]]
NotificationHandler = Callable[[str, JsonObject], Awaitable[None]]


class Incoming:
    """A client request being handled; answered exactly once."""

    def __init__(self, conn: Connection, request_id: Any, method: str) -> None:
        self.conn = conn
        self.id = request_id
        self.method = method
        self.answered = False
        self.task: asyncio.Task[None] | None = None

    def respond(self, result: Any) -> None:
        if not self.answered:
            self.answered = True
            self.conn.write({"jsonrpc": "2.0", "id": self.id, "result": result})

    def fail(self, error: RpcError) -> None:
        if not self.answered:
            self.answered = True
            self.conn.write({"jsonrpc": "2.0", "id": self.id, "error": error.to_json()})


def _id_key(request_id: Any) -> tuple[str, Any]:
    # 1 and "1" are different JSON-RPC ids.
    return (type(request_id).__name__, request_id)


class Connection:
    def __init__(
        self,
        io: Stdio,
        on_request: RequestHandler,
        on_notification: NotificationHandler,
    ) -> None:
        self.io = io
        self._on_request = on_request
        self._on_notification = on_notification
        self._ids = itertools.count(1)
        self._pending: dict[tuple[str, Any], asyncio.Future[Any]] = {}
        self._incoming: dict[tuple[str, Any], Incoming] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        # #hang: read (to notice EOF) but ignore everything and write nothing.
        self.hung = False

    # -- writing -----------------------------------------------------------

    def write(self, obj: Any) -> None:
        if not self.hung:
            self.io.write(encode(obj))

    def write_raw(self, data: bytes) -> None:
        if not self.hung:
            self.io.write(data)

    async def drain(self) -> None:
        await self.io.drain()

    def notify(self, method: str, params: Any) -> None:
        self.write({"jsonrpc": "2.0", "method": method, "params": params})

    async def request(self, method: str, params: Any) -> Any:
        """Send a request to the client; raises RpcError if it answers with one."""
        request_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        key = _id_key(request_id)
        self._pending[key] = future
        try:
            self.write({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
            return await future
        finally:
            self._pending.pop(key, None)

    # -- reading -----------------------------------------------------------

    def spawn(self, coro: Awaitable[Any]) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log(f"task failed: {task.exception()!r}")

    async def run(self) -> None:
        """Read frames until stdin reaches EOF."""
        buffer = bytearray()
        discarding = False
        while True:
            chunk = await self.io.read()
            if not chunk:
                break
            start = 0
            while True:
                newline = chunk.find(b"\n", start)
                if newline < 0:
                    break
                if discarding:
                    discarding = False
                    buffer.clear()
                    self._reject_frame("frame too large")
                else:
                    buffer += chunk[start:newline]
                    line = bytes(buffer)
                    buffer.clear()
                    self._handle_line(line)
                start = newline + 1
            if not discarding:
                buffer += chunk[start:]
                if len(buffer) > MAX_FRAME:
                    discarding = True
                    buffer.clear()
        if buffer.strip() and not discarding:
            self._handle_line(bytes(buffer))

    def _reject_frame(self, why: str) -> None:
        log(f"parse error: {why}")
        self.write({"jsonrpc": "2.0", "id": None, "error": {"code": PARSE_ERROR, "message": why}})

    def _handle_line(self, line: bytes) -> None:
        if self.hung or not line.strip():
            return
        try:
            msg = json.loads(line)
        except ValueError as exc:
            self._reject_frame(f"Parse error: {exc}")
            return
        if not isinstance(msg, dict):
            self.write(
                {
                    "jsonrpc": "2.0",
                    "id": None,
                    "error": {"code": INVALID_REQUEST, "message": "frame is not a JSON object"},
                }
            )
            return
        method = msg.get("method")
        has_id = "id" in msg
        if method is None and has_id and ("result" in msg or "error" in msg):
            self._handle_response(msg)
            return
        request_id = msg.get("id")
        if not isinstance(method, str) or (
            has_id and request_id is not None and not isinstance(request_id, str | int)
        ):
            self.write(
                {
                    "jsonrpc": "2.0",
                    "id": request_id if isinstance(request_id, str | int) else None,
                    "error": {"code": INVALID_REQUEST, "message": "invalid JSON-RPC request"},
                }
            )
            return
        params = msg.get("params")
        if has_id:
            incoming = Incoming(self, request_id, method)
            if params is None:
                params = {}
            if not isinstance(params, dict):
                incoming.fail(RpcError(INVALID_PARAMS, "params must be an object"))
                return
            incoming.task = self.spawn(self._run_request(incoming, params))
        else:
            if method == CANCEL_REQUEST_METHOD:
                self._cancel_request(params)
                return
            self.spawn(self._run_notification(method, params if isinstance(params, dict) else {}))

    def _handle_response(self, msg: JsonObject) -> None:
        future = self._pending.pop(_id_key(msg.get("id")), None)
        if future is None or future.done():
            log(f"response to an unknown request id {msg.get('id')!r}, ignored")
            return
        error = msg.get("error")
        if error is not None:
            code = error.get("code") if isinstance(error, dict) else None
            message = error.get("message") if isinstance(error, dict) else None
            future.set_exception(
                RpcError(
                    code if isinstance(code, int) else INTERNAL_ERROR,
                    message if isinstance(message, str) else "client error",
                )
            )
        else:
            future.set_result(msg.get("result"))

    async def _run_request(self, incoming: Incoming, params: JsonObject) -> None:
        key = _id_key(incoming.id)
        self._incoming[key] = incoming
        try:
            result = await self._on_request(incoming.method, params, incoming)
        except RpcError as exc:
            incoming.fail(exc)
        except asyncio.CancelledError:
            raise  # whoever cancelled answers (or nobody: shutdown)
        except Exception as exc:
            log(f"{incoming.method} failed: {exc!r}")
            incoming.fail(RpcError(INTERNAL_ERROR, f"internal error: {exc}"))
        else:
            incoming.respond(result)
        finally:
            if self._incoming.get(key) is incoming:
                del self._incoming[key]

    async def _run_notification(self, method: str, params: JsonObject) -> None:
        try:
            await self._on_notification(method, params)
        except RpcError as exc:
            log(f"notification {method} rejected: {exc.message}")

    def _cancel_request(self, params: Any) -> None:
        if not isinstance(params, dict) or "requestId" not in params:
            return
        request_id = params["requestId"]
        if not isinstance(request_id, str | int):
            return
        incoming = self._incoming.get(_id_key(request_id))
        if incoming is None or incoming.answered:
            return
        incoming.fail(RpcError(REQUEST_CANCELLED, "Request cancelled"))
        if incoming.task is not None:
            incoming.task.cancel()

    async def shutdown(self, grace_s: float = 0.0) -> None:
        """Cancel every task this connection started and wait for them.

        ``grace_s`` lets requests read just before EOF finish first, so that
        ``echo '{...}' | agent`` still gets its answer.
        """
        if grace_s and self._tasks:
            await asyncio.wait(list(self._tasks), timeout=grace_s)
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        for future in self._pending.values():
            future.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=2.0)
