"""Newline-delimited JSON-RPC 2.0 over a byte stream pair (ACP's transport).

One reader task parses frames. Responses resolve their waiters at once;
notifications and incoming requests go through one queue that a single
dispatcher drains, so the layer above sees them strictly in arrival order.
Incoming requests are *started* in that order but run as their own tasks:
a permission request may wait minutes for the user while updates keep flowing.

This is the relay's hot path (one pass per agent frame): frames are split from
each read in one go, parsed once (msgspec, json.loads for what it refuses),
and queued as plain tuples in a bounded deque with the two wake-ups it needs,
not through `asyncio.Queue`'s layers.

The dispatcher hands the loop back every `DISPATCH_SLICE` seconds of work: a burst of
thousands of queued frames (each one read, routed, relayed to the editor) would otherwise be
one callback, and the editor's requests would wait behind all of it. Nothing is reordered:
the one dispatcher takes up the queue where it left it, and the caller of a request resumes
only once every frame that came before its answer is dispatched (a `session/load` answer after
the replay it ends, a prompt's answer after its last chunks).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import json
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Protocol

from sidecar.acp.errors import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    REQUEST_CANCELLED,
    AcpError,
    ConnectionClosed,
    MethodNotFound,
    RequestTimeout,
    remote_error,
)
from sidecar.tasks import OwnedTasks

log = logging.getLogger(__name__)

CANCEL_METHOD = "$/cancel_request"
DEFAULT_MAX_FRAME = 64 * 1024 * 1024
_READ_CHUNK = 256 * 1024
DISPATCH_SLICE = 0.005  # seconds the dispatcher works before the loop gets a turn


@functools.cache
def _fast_decoder() -> tuple[Callable[[bytes], Any], type[Exception]]:
    """msgspec's JSON decoder and its error, imported on first use (not at start-up).

    Parsing is most of the cost of a frame, and msgspec's decoder takes a
    quarter of json.loads' time. What it accepts, it decodes exactly as
    json.loads would (big integers stay ints, floats round the same, the last
    duplicate key wins); whatever it refuses goes to json.loads.
    """
    import msgspec

    return msgspec.json.Decoder().decode, msgspec.DecodeError


NotificationHandler = Callable[[str, Any], None]  # sync: called in arrival order, never awaited
# (method, the params of the notification queued last, the new one's) -> True when the new one was
# folded into the queued one (it is then not dispatched on its own).
NotificationMerger = Callable[[str, Any, Any], bool]
RequestHandler = Callable[[str, Any], Awaitable[Any]]


class ByteSink(Protocol):
    def write(self, data: bytes) -> None: ...
    async def drain(self) -> None: ...
    def close(self) -> None: ...
    def is_closing(self) -> bool: ...


# A notification or request waiting in the ordered queue: (method, params,
# request id or None for a notification). None in the queue is the end.
_Incoming = tuple[str, Any, Any]
# The third element of a notification: not None, since a request's id may be null.
_NOTIFICATION: Any = object()


class FrameStats:
    """Counters that tests and diagnostics read; cheap to keep."""

    def __init__(self) -> None:
        self.frames_in = 0
        self.frames_out = 0
        self.skipped_oversize = 0
        self.skipped_invalid = 0
        self.unknown_responses = 0


class JsonRpcConnection:
    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: ByteSink,
        *,
        on_notification: NotificationHandler,
        on_request: RequestHandler,
        max_frame_bytes: int = DEFAULT_MAX_FRAME,
        queue_size: int = 4096,
        name: str = "agent",
        merge: NotificationMerger | None = None,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._on_notification = on_notification
        self._on_request = on_request
        self._merge = merge
        self._max_frame = max_frame_bytes
        self._name = name
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._pending_methods: dict[int, str] = {}
        # Bounded: a flood fills it, the reader waits, and the agent's pipe
        # gives it back-pressure instead of our memory growing without bound.
        self._queue: deque[_Incoming | None] = deque()
        self._queue_size = max(1, queue_size)
        self._queue_ready: asyncio.Future[None] | None = None  # the dispatcher waits for an item
        self._queue_room: asyncio.Future[None] | None = None  # the reader waits for room
        self._incoming_tasks: dict[Any, asyncio.Task[None]] = {}
        # The ordered queue's items dispatched so far: an answer that arrives while frames still
        # wait is marked with the count that includes them (dispatched + queued), and its caller
        # waits for this count to reach the mark (`_after_earlier_frames`).
        self._dispatched = 0
        self._marks: dict[int, int] = {}  # request id -> frames queued before its answer came
        self._catching_up: list[tuple[int, asyncio.Future[None]]] = []
        self._dispatcher_done = False
        self._tasks = OwnedTasks(f"jsonrpc-{name}")
        self._closed = asyncio.Event()
        self._close_reason = "the agent connection is closed"
        self._decode, self._decode_error = _fast_decoder()
        self.stats = FrameStats()

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        self._spawn(self._read_loop(), "reader")
        self._spawn(self._dispatch_loop(), "dispatcher")

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    async def wait_closed(self) -> None:
        await self._closed.wait()

    async def aclose(self) -> None:
        """Stop reading, fail every waiter, cancel and await every task we own."""
        self._mark_closed("the agent connection was closed by the sidecar")
        with contextlib.suppress(Exception):
            self._writer.close()
        await self._tasks.aclose()

    def _spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        return self._tasks.spawn(coro, name)

    def _mark_closed(self, reason: str) -> None:
        if self._closed.is_set():
            return
        self._close_reason = reason
        self._closed.set()
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(ConnectionClosed(reason))
        self._pending.clear()
        self._pending_methods.clear()

    # ------------------------------------------------------------------ sending
    async def _send(self, obj: dict[str, Any]) -> None:
        if self._closed.is_set() or self._writer.is_closing():
            raise ConnectionClosed(self._close_reason)
        data = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "replace")
        try:
            self._writer.write(data + b"\n")
            await self._writer.drain()
        except (ConnectionError, OSError, RuntimeError) as exc:
            self._mark_closed(f"writing to the agent failed: {exc}")
            raise ConnectionClosed(self._close_reason) from exc
        self.stats.frames_out += 1

    async def request(self, method: str, params: Any, timeout: float | None = None) -> Any:
        """Send a request and wait for its result; errors raise typed AcpErrors.

        Cancelling the caller sends `$/cancel_request` so the agent can stop too.
        """
        request_id = next(self._ids)
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = fut
        self._pending_methods[request_id] = method
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            msg["params"] = params
        try:
            await self._send(msg)
            try:
                if timeout is None:
                    result = await fut
                else:
                    try:
                        result = await asyncio.wait_for(asyncio.shield(fut), timeout)
                    except TimeoutError:
                        await self._cancel_remote(request_id)
                        raise RequestTimeout(method, timeout) from None
            except AcpError:  # the agent's error answer, too, comes after the frames before it
                await self._after_earlier_frames(request_id)
                raise
            await self._after_earlier_frames(request_id)
            return result
        except asyncio.CancelledError:
            await asyncio.shield(self._cancel_remote(request_id))
            raise
        finally:
            self._pending.pop(request_id, None)
            self._pending_methods.pop(request_id, None)
            self._marks.pop(request_id, None)

    async def _after_earlier_frames(self, request_id: int) -> None:
        """Return once the frames that arrived before this request's answer are dispatched."""
        mark = self._marks.pop(request_id, None)
        if mark is None or self._dispatched >= mark or self._dispatcher_done:
            return
        waiter = asyncio.get_running_loop().create_future()
        self._catching_up.append((mark, waiter))
        await waiter

    def _caught_up(self, everyone: bool = False) -> None:
        waiting, self._catching_up = self._catching_up, []
        for mark, waiter in waiting:
            if everyone or self._dispatched >= mark:
                if not waiter.done():
                    waiter.set_result(None)
            else:
                self._catching_up.append((mark, waiter))

    async def _cancel_remote(self, request_id: int) -> None:
        fut = self._pending.get(request_id)
        if fut is None or fut.done() or self.closed:
            return
        with contextlib.suppress(AcpError):
            await self.notify(CANCEL_METHOD, {"requestId": request_id})

    async def notify(self, method: str, params: Any) -> None:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        await self._send(msg)

    # ------------------------------------------------------------------ reading
    async def _read_loop(self) -> None:
        buf = bytearray()  # the start of a frame whose newline has not come yet
        discarding = False  # inside an oversize frame: drop bytes up to its newline
        queue = self._queue
        read = self._reader.read
        merge = self._merge
        try:
            while True:
                chunk = await read(_READ_CHUNK)
                if not chunk:
                    break
                lines = chunk.split(b"\n")
                rest = lines.pop()  # after the last newline: an unfinished frame
                if lines:
                    if discarding:
                        discarding = False
                        lines[0] = b""  # the end of an oversize frame
                    elif buf:
                        buf += lines[0]
                        lines[0] = bytes(buf)
                        buf.clear()
                    max_frame = self._max_frame
                    for line in lines:
                        if len(line) > max_frame:
                            self._oversize(len(line))
                            continue
                        if not line.strip():
                            continue
                        msg = self._parse(line)
                        if msg is None:
                            continue
                        method = msg.get("method")
                        if type(method) is str and "id" not in msg and method != CANCEL_METHOD:
                            # The common case, a notification: straight into the queue, or into
                            # the one waiting last there when they merge (text chunks).
                            params = msg.get("params")
                            if merge is not None and queue:
                                last = queue[-1]
                                if (
                                    last is not None
                                    and last[2] is _NOTIFICATION
                                    and last[0] == method
                                    and merge(method, last[1], params)
                                ):
                                    continue
                            if len(queue) >= self._queue_size:
                                await self._wait_room()
                            queue.append((method, params, _NOTIFICATION))
                            if self._queue_ready is not None:
                                self._wake_dispatcher()
                        else:
                            await self._handle_message(msg, line)
                if rest and not discarding:
                    buf += rest
                    if len(buf) > self._max_frame:
                        self._oversize(len(buf))
                        buf.clear()
                        discarding = True
            if buf.strip() and not discarding:
                await self._handle_line(bytes(buf))
            self._mark_closed(f"the {self._name} closed its output")
        except (ConnectionError, OSError) as exc:
            self._mark_closed(f"reading from the {self._name} failed: {exc}")
        finally:
            # Wake the dispatcher so it finishes after everything already queued.
            queue.append(None)
            self._wake_dispatcher()

    async def _wait_room(self) -> None:
        while len(self._queue) >= self._queue_size:
            room = self._queue_room = asyncio.get_running_loop().create_future()
            await room

    def _wake_dispatcher(self) -> None:
        ready, self._queue_ready = self._queue_ready, None
        if ready is not None and not ready.done():
            ready.set_result(None)

    async def _put(self, item: _Incoming) -> None:
        if len(self._queue) >= self._queue_size:
            await self._wait_room()
        self._queue.append(item)
        self._wake_dispatcher()

    def _oversize(self, size: int) -> None:
        self.stats.skipped_oversize += 1
        log.warning(
            "%s sent a frame over %d bytes (%d seen); skipped, connection kept",
            self._name,
            self._max_frame,
            size,
        )

    def _parse(self, line: bytes) -> dict[str, Any] | None:
        """The frame as a JSON object; None (counted, logged) when it is not one."""
        try:
            try:
                msg = self._decode(line)
            except self._decode_error:
                # What msgspec refuses, json judges exactly as it always did:
                # NaN, lone surrogates, a BOM or UTF-16, or a frame that is bad.
                msg = json.loads(line)
        except (ValueError, RecursionError) as exc:
            # RecursionError: nesting too deep for the fallback parser; still just a bad frame.
            self.stats.skipped_invalid += 1
            log.warning("%s sent invalid JSON (%s): %.200r; skipped", self._name, type(exc).__name__, line)
            return None
        if not isinstance(msg, dict):
            self.stats.skipped_invalid += 1
            log.warning("%s sent a non-object frame: %.200r; skipped", self._name, line)
            return None
        self.stats.frames_in += 1
        return msg

    async def _handle_line(self, line: bytes) -> None:
        msg = self._parse(line)
        if msg is not None:
            await self._handle_message(msg, line)

    async def _handle_message(self, msg: dict[str, Any], line: bytes) -> None:
        method = msg.get("method")
        if isinstance(method, str):
            if "id" in msg:
                await self._put((method, msg.get("params"), msg["id"]))
            elif method == CANCEL_METHOD:
                self._cancel_incoming(msg.get("params"))
            else:
                await self._put((method, msg.get("params"), _NOTIFICATION))
            return
        if "id" in msg and ("result" in msg or "error" in msg):
            self._resolve(msg)
            return
        if "id" in msg:
            # A request we cannot parse: tell the agent instead of leaving it waiting.
            await self._reply_error(msg["id"], AcpError(INVALID_REQUEST, "invalid request"))
        self.stats.skipped_invalid += 1
        log.warning("%s sent a frame that is not JSON-RPC: %.200r; skipped", self._name, line)

    def _resolve(self, msg: dict[str, Any]) -> None:
        request_id = msg.get("id")
        fut = self._pending.get(request_id) if isinstance(request_id, int) else None
        if fut is None or fut.done() or not isinstance(request_id, int):
            self.stats.unknown_responses += 1
            log.warning("%s answered an unknown or finished request id %r", self._name, request_id)
            return
        if self._queue:  # its caller waits for the frames before it
            # The dispatcher is parked before its next item here (or has none), so every frame
            # that arrived is either dispatched or still queued.
            self._marks[request_id] = self._dispatched + len(self._queue)
        if "error" in msg and msg["error"] is not None:
            fut.set_exception(remote_error(msg["error"]))
        else:
            fut.set_result(msg.get("result"))

    def _cancel_incoming(self, params: Any) -> None:
        request_id = params.get("requestId") if isinstance(params, dict) else None
        task = self._incoming_tasks.get(_id_key(request_id))
        if task is not None:
            task.cancel()

    # ------------------------------------------------------------------ dispatch
    async def _dispatch_loop(self) -> None:
        queue = self._queue
        half = self._queue_size // 2
        loop = asyncio.get_running_loop()
        clock = loop.time
        turn_ends = clock() + DISPATCH_SLICE
        try:
            while True:
                if not queue:
                    ready = self._queue_ready = loop.create_future()
                    await ready
                    turn_ends = clock() + DISPATCH_SLICE
                    continue
                if clock() >= turn_ends:
                    await asyncio.sleep(0)  # the loop's turn: the editor's requests, the other tasks
                    turn_ends = clock() + DISPATCH_SLICE  # and at least one frame after it
                item = queue.popleft()
                if self._queue_room is not None and len(queue) <= half:
                    room, self._queue_room = self._queue_room, None
                    if not room.done():
                        room.set_result(None)
                if item is None:
                    return
                method, params, request_id = item
                if request_id is _NOTIFICATION:
                    try:
                        self._on_notification(method, params)
                    except Exception:
                        log.exception("handling %s from %s failed", method, self._name)
                else:
                    key = _id_key(request_id)
                    task = self._spawn(self._serve(method, params, request_id), f"serve-{method}")
                    self._incoming_tasks[key] = task
                    task.add_done_callback(self._forget_incoming(key))
                self._dispatched += 1
                if self._catching_up:
                    self._caught_up()
        finally:
            self._dispatcher_done = True
            self._caught_up(everyone=True)

    def _forget_incoming(self, key: Any) -> Callable[[asyncio.Task[Any]], None]:
        def forget(_task: asyncio.Task[Any]) -> None:
            self._incoming_tasks.pop(key, None)

        return forget

    async def _serve(self, method: str, params: Any, request_id: Any) -> None:
        """Run one incoming request and answer it exactly once, whatever happens."""
        try:
            result = await self._on_request(method, params)
        except asyncio.CancelledError:
            if self.closed:
                raise
            await self._reply_error(request_id, AcpError(REQUEST_CANCELLED, "request cancelled"))
            return
        except AcpError as exc:
            await self._reply_error(request_id, exc)
            return
        except Exception as exc:
            log.exception("handler for %s failed", method)
            await self._reply_error(request_id, AcpError(INTERNAL_ERROR, f"client error: {exc}"))
            return
        with contextlib.suppress(ConnectionClosed):
            await self._send({"jsonrpc": "2.0", "id": request_id, "result": result})

    async def _reply_error(self, request_id: Any, error: AcpError) -> None:
        with contextlib.suppress(ConnectionClosed):
            await self._send({"jsonrpc": "2.0", "id": request_id, "error": error.to_json()})


def _id_key(request_id: Any) -> Any:
    # Ids may be strings or numbers; both are hashable as JSON gives them.
    return request_id if isinstance(request_id, int | str) else repr(request_id)


__all__ = ["CANCEL_METHOD", "JsonRpcConnection", "MethodNotFound"]
