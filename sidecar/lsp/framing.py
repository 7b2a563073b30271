"""Reading LSP messages from the editor: `Content-Length` framing that survives bad input.

Bad framing is logged and skipped: header lines of any length (memory stays
bounded), junk before a header, a header block without a length, bodies over
`MAX_BODY`. A body that is not UTF-8, not JSON, or nested too deep for the
parser is answered with an error when its `id` can be recovered (a scan of
the top level that never recurses), else logged. The loop ends only when the
editor's stream ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from typing import Any, Protocol

from pygls.exceptions import JsonRpcException

log = logging.getLogger(__name__)

HEADER_LINE_LIMIT = 1 << 20  # a header line longer than this is junk
MAX_BODY = 256 << 20
_CONTENT_LENGTH = re.compile(rb"content-length:[ \t]*(\d{1,12})[ \t]*\r?\n\Z", re.IGNORECASE)
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_SCALAR = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null")

PARSE_ERROR = -32700
INVALID_REQUEST = -32600


class MessageSink(Protocol):
    """The part of pygls' JSON-RPC protocol that the reader feeds."""

    def structure_message(self, data: dict[str, Any]) -> Any: ...
    def handle_message(self, message: Any) -> None: ...
    def send_response(self, msg_id: Any, result: Any = None, error: Any = None) -> None: ...
    def handle_error_response(self, msg_id: Any, error: Any) -> None: ...


class LspReader:
    def __init__(self, reader: asyncio.StreamReader, sink: MessageSink) -> None:
        self._reader = reader
        self._sink = sink

    async def run(self) -> None:
        """Read and dispatch messages until the stream ends."""
        while True:
            length = await self._read_headers()
            if length is None:
                return
            if length > MAX_BODY:
                log.warning("skipped an LSP message of %d bytes (the limit is %d)", length, MAX_BODY)
                if not await self._discard(length):
                    return
                continue
            try:
                body = await self._reader.readexactly(length)
            except asyncio.IncompleteReadError:
                log.warning("the editor's stream ended in the middle of an LSP message")
                return
            self.dispatch(body)

    # ------------------------------------------------------------------ framing
    async def _read_line(self) -> bytes:
        """One header line; over-long lines are dropped piece by piece. b"" at the end of the stream."""
        dropping = False
        while True:
            try:
                line = await self._reader.readuntil(b"\n")
            except asyncio.IncompleteReadError:
                return b""
            except asyncio.LimitOverrunError as exc:
                if not dropping:
                    log.warning("dropped an LSP header line longer than %d bytes", HEADER_LINE_LIMIT)
                dropping = True
                await self._reader.readexactly(exc.consumed)
                continue
            if dropping:
                dropping = False
                continue  # the end of the over-long line
            return line

    async def _read_headers(self) -> int | None:
        """The Content-Length of the next message; None at the end of the stream."""
        length: int | None = None
        while True:
            line = await self._read_line()
            if not line:
                return None
            if line in (b"\r\n", b"\n"):
                if length is not None:
                    return length
                continue  # a blank line outside a header block: nothing to read
            match = _CONTENT_LENGTH.search(line)
            if match is not None:
                if match.start() != 0:
                    log.warning("skipped %d bytes of junk before an LSP header", match.start())
                length = int(match.group(1))
            elif not line.lower().startswith(b"content-type:"):
                log.warning("ignored an LSP header line: %r", line[:80])

    async def _discard(self, length: int) -> bool:
        while length > 0:
            chunk = await self._reader.read(min(length, 1 << 20))
            if not chunk:
                return False
            length -= len(chunk)
        return True

    # ------------------------------------------------------------------ bodies
    def dispatch(self, body: bytes) -> None:
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as exc:
            self._refuse(
                body.decode("utf-8", "replace"),
                PARSE_ERROR,
                f"the message is not valid UTF-8 ({exc.reason} at byte {exc.start}); LSP messages are UTF-8",
            )
            return
        try:
            message = json.loads(text, object_hook=self._sink.structure_message)
        except RecursionError:
            self._refuse(text, INVALID_REQUEST, "the message is nested too deep to parse (over ~900 levels)")
            return
        except json.JSONDecodeError as exc:
            self._refuse(text, PARSE_ERROR, f"the message is not valid JSON ({exc.msg} at {exc.pos})")
            return
        except JsonRpcException as exc:
            # pygls could not structure it (a value its types refuse, such as Infinity): a request
            # is answered with that error, an answer fails our request; a notification is dropped.
            reason = f"pygls cannot read the message: {exc.message or type(exc).__name__}"
            self._refuse(text, exc.code if isinstance(exc.code, int) else INVALID_REQUEST, reason)
            return
        if isinstance(message, dict) or not hasattr(message, "jsonrpc"):
            self._refuse(text, INVALID_REQUEST, "the message is not a JSON-RPC 2.0 object")
            return
        try:
            self._sink.handle_message(message)
        except Exception:
            log.exception("handling an LSP message failed")

    def _refuse(self, text: str, code: int, reason: str) -> None:
        """Answer a message we cannot read, if it says who it is; else log it."""
        top = top_level_scalars(text)
        if "id" not in top:
            log.warning("ignored an LSP message without an id to answer: %s", reason)
            return
        msg_id = top["id"]
        if not isinstance(msg_id, (int, str)) or isinstance(msg_id, bool):
            log.warning("ignored an LSP message with an unusable id %r: %s", msg_id, reason)
            return
        error = JsonRpcException(message=reason, code=code).to_response_error()
        if isinstance(top.get("method"), str):
            log.warning("answered an unreadable %s request with an error: %s", top["method"], reason)
            self._sink.send_response(msg_id, error=error)
        else:
            # The editor's answer to one of our requests: fail that request instead of waiting forever.
            log.warning("the editor's answer to request %r is unreadable: %s", msg_id, reason)
            self._sink.handle_error_response(msg_id, error)


def top_level_scalars(text: str) -> dict[str, Any]:
    """The scalar members (strings, numbers, true/false/null) of a JSON object's top level.

    A linear scan that skips nested values without recursing and stops at the
    first thing it cannot read; for finding `id` and `method` in a message the
    JSON parser refused.
    """
    found: dict[str, Any] = {}
    n = len(text)
    i = _skip_ws(text, 0)
    if i >= n or text[i] != "{":
        return found
    i += 1
    while True:
        i = _skip_ws(text, i)
        if i >= n or text[i] == "}":
            return found
        if text[i] == ",":
            i += 1
            continue
        key_match = _STRING.match(text, i)
        if key_match is None:
            return found
        i = _skip_ws(text, key_match.end())
        if i >= n or text[i] != ":":
            return found
        i = _skip_ws(text, i + 1)
        if i >= n:
            return found
        if text[i] in "{[":
            end = _container_end(text, i)
            if end < 0:
                return found
            i = end
            continue
        value_match = _STRING.match(text, i) or _SCALAR.match(text, i)
        if value_match is None:
            return found
        with contextlib.suppress(ValueError):
            found[json.loads(key_match.group())] = json.loads(value_match.group())
        i = value_match.end()


def _skip_ws(text: str, i: int) -> int:
    n = len(text)
    while i < n and text[i] in " \t\r\n":
        i += 1
    return i


def _container_end(text: str, i: int) -> int:
    """The index after the object or array that starts at `i`; -1 when it never closes."""
    depth = 0
    n = len(text)
    while i < n:
        char = text[i]
        if char == '"':
            match = _STRING.match(text, i)
            if match is None:
                return -1
            i = match.end()
            continue
        if char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return -1
