"""Reading LSP framing in-process: junk, over-long lines, bad bodies; ids recovered without recursion."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from sidecar.lsp.framing import LspReader, top_level_scalars


class Sink:
    """Stands for pygls' protocol: records what the reader hands over and answers."""

    def __init__(self) -> None:
        self.handled: list[Any] = []
        self.answers: list[tuple[Any, Any]] = []
        self.responses: list[tuple[Any, Any]] = []

    def structure_message(self, data: dict[str, Any]) -> Any:
        return _Message(data) if "jsonrpc" in data else data

    def handle_message(self, message: Any) -> None:
        self.handled.append(message.data)

    def send_response(self, msg_id: Any, result: Any = None, error: Any = None) -> None:
        self.answers.append((msg_id, error))

    def handle_error_response(self, msg_id: Any, error: Any) -> None:
        self.responses.append((msg_id, error))


class _Message:
    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data
        self.jsonrpc = data["jsonrpc"]


def framed(obj: Any) -> bytes:
    body = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


async def read_all(data: bytes, limit: int = 1 << 20) -> Sink:
    reader = asyncio.StreamReader(limit=limit)
    reader.feed_data(data)
    reader.feed_eof()
    sink = Sink()
    async with asyncio.timeout(30):
        await LspReader(reader, sink).run()
    return sink


PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


async def test_well_formed_messages_pass_in_order() -> None:
    messages = [{"jsonrpc": "2.0", "id": i, "method": "m", "params": {"é": "✓"}} for i in range(3)]
    sink = await read_all(b"".join(framed(m) for m in messages))
    assert sink.handled == messages and not sink.answers


async def test_header_variants_and_junk_are_survived() -> None:
    body = json.dumps(PING).encode()
    data = (
        b"content-length:%d\n\n" % len(body) + body  # lower case, bare newlines
        + b"Content-Length: %d\r\nContent-Type: application/vscode-jsonrpc\r\n\r\n" % len(body) + body
        + b"junk before" + framed(PING)  # junk glued to the next header
        + b"\r\n\r\nX-Other: 1\r\n" + framed(PING)  # stray blank lines, unknown header
        + b"X: " + b"y" * (3 << 20) + b"\r\n" + framed(PING)  # a header line over the limit
    )  # fmt: skip
    sink = await read_all(data)
    assert sink.handled == [PING] * 5


async def test_an_over_long_line_without_end_at_eof() -> None:
    sink = await read_all(framed(PING) + b"z" * (3 << 20))
    assert sink.handled == [PING]


async def test_bodies_that_cannot_be_read_are_answered_when_they_have_an_id() -> None:
    deep = b"[" * 50_000 + b"]" * 50_000
    data = (
        framed(b'{"jsonrpc":"2.0","id":1,"method":"m","params":"caf\xe9"}')
        + framed(b'{"jsonrpc":"2.0","method":"m","params":' + deep + b',"id":"two"}')
        + framed(b'{"jsonrpc":"2.0","id":3,"method":"m","params":{"a":[1,}')
        + framed(b'{"id":4,"method":"m"}')  # not JSON-RPC 2.0
        + framed(b'{"jsonrpc":"2.0","id":5,"result":"\xff"}')  # an answer to us, unreadable
        + framed(b"\xff\xfe no id at all")
        + framed(b"[1, 2]")
        + framed(PING)
    )
    sink = await read_all(data)
    answered = {msg_id: error for msg_id, error in sink.answers}
    assert set(answered) == {1, "two", 3, 4}
    assert "UTF-8" in answered[1].message and answered[1].code == -32700
    assert "deep" in answered["two"].message
    assert "JSON" in answered[3].message and answered[3].code == -32700
    assert "JSON-RPC 2.0" in answered[4].message and answered[4].code == -32600
    assert [msg_id for msg_id, _ in sink.responses] == [5]
    assert sink.handled == [PING], "the stream goes on after each"


async def test_eof_inside_a_body_ends_the_loop() -> None:
    sink = await read_all(framed(PING) + b'Content-Length: 100\r\n\r\n{"jsonrpc"')
    assert sink.handled == [PING]


async def test_an_oversized_body_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    import sidecar.lsp.framing as framing

    monkeypatch.setattr(framing, "MAX_BODY", 1000)
    big = framed({"jsonrpc": "2.0", "id": 9, "method": "m", "params": "x" * 5000})
    sink = await read_all(big + framed(PING))
    assert sink.handled == [PING]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"jsonrpc":"2.0","id":7,"method":"a/b"}', {"jsonrpc": "2.0", "id": 7, "method": "a/b"}),
        ('{"params":[[[{"id":1}]]],"id":"x\\"y"}', {"id": 'x"y'}),
        ('{"params":{"s":"}]{["}, "id": -3.5e2}', {"id": -350.0}),
        ('  {"id": null, "ok": true}', {"id": None, "ok": True}),
        ('{"params": [1, 2', {}),
        ('{"id": 1, "method": nope}', {"id": 1}),
        ("[1]", {}),
        ("", {}),
    ],
)
def test_top_level_scalars(text: str, expected: dict[str, Any]) -> None:
    assert top_level_scalars(text) == expected


def test_top_level_scalars_of_a_very_deep_message() -> None:
    text = '{"params":' + "[" * 200_000 + "]" * 200_000 + ',"id":11,"method":"m"}'
    assert top_level_scalars(text) == {"id": 11, "method": "m"}
