"""A hostile editor: bad framing, bad bytes, documents never opened, text that is not Unicode.

Each message gets one answer when it has an id that can be recovered, is logged
otherwise, and the sidecar keeps serving; where the stream cannot continue, it
exits cleanly (no traceback, agent stopped).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.faults.figures import FIGURES
from tests.lsp.raw import RawSidecar, frame
from tests.procs import wait_gone

pytestmark = pytest.mark.fault


@pytest.fixture
async def sidecar(workspace: Path, state_dir: Path) -> AsyncIterator[RawSidecar]:
    raw = await RawSidecar.start(workspace, state_dir)
    try:
        await raw.initialize(workspace)
        await raw.wait_idle()
        yield raw
    finally:
        await raw.close()


async def still_serving(sidecar: RawSidecar) -> None:
    answer = await sidecar.command("acp.status", {}, timeout=30)
    assert answer["result"]["state"] == "idle", answer
    assert sidecar.proc.returncode is None
    assert b"Traceback" not in sidecar.stderr, sidecar.stderr.decode(errors="replace")


def error_popups(sidecar: RawSidecar) -> list[str]:
    return [p["message"] for p in sidecar.of("window/showMessage") if "Error in server" in p["message"]]


async def test_did_change_for_a_document_never_opened(sidecar: RawSidecar, workspace: Path) -> None:
    uri = (workspace / "never-opened.txt").as_uri()
    change = {
        "jsonrpc": "2.0",
        "method": "textDocument/didChange",
        "params": {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": "x"}]},
    }
    for _ in range(3):
        sidecar.send(change)
    FIGURES["editor faults: didChange for a document never opened"] += 3
    await still_serving(sidecar)
    await asyncio.sleep(0.3)
    assert not error_popups(sidecar), "no raw 'Error in server: KeyError' popup"
    logged = [p["message"] for p in sidecar.of("window/logMessage") if "never-opened.txt" in p["message"]]
    assert len(logged) == 1, logged


async def test_a_header_line_over_64_mib_is_survived(sidecar: RawSidecar) -> None:
    sidecar.send_bytes(b"X-Junk: " + b"a" * (65 * 2**20) + b"\r\n")
    FIGURES["editor faults: header line over 64 MiB"] += 1
    await still_serving(sidecar)
    assert not error_popups(sidecar)


async def test_junk_before_a_header_is_skipped(sidecar: RawSidecar) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": 77, "method": "workspace/executeCommand",
                       "params": {"command": "acp.status", "arguments": [{}]}}).encode()  # fmt: skip
    sidecar.send_bytes(b"garbage without a newline" + frame(body))
    answer = await sidecar.answer(77)
    assert answer["result"]["state"] == "idle"
    await still_serving(sidecar)


async def test_a_body_that_is_not_utf8_gets_one_answer(sidecar: RawSidecar) -> None:
    body = (
        b'{"jsonrpc":"2.0","id":41,"method":"workspace/executeCommand",'
        b'"params":{"command":"acp.prompt","arguments":["caf\xe9 \xff"]}}'
    )
    sidecar.send_bytes(frame(body))
    FIGURES["editor faults: body not UTF-8"] += 1
    answer = await sidecar.answer(41)
    assert "UTF-8" in answer["error"]["message"], answer
    await still_serving(sidecar)
    assert len(sidecar.answers_to(41)) == 1
    assert not error_popups(sidecar)


async def test_a_request_pygls_cannot_structure_gets_one_answer(sidecar: RawSidecar) -> None:
    # Found by the fuzzer: an object with a "jsonrpc" member deep in a command's arguments is
    # taken by pygls for a message of its own, which it fails to read; the request itself then
    # used to wait for ever.
    body = (
        b'{"jsonrpc":"2.0","id":43,"method":"workspace/executeCommand",'
        b'"params":{"command":"acp.session.new","arguments":[{"a":1},[{"jsonrpc":"x","b":true}]]}}'
    )
    sidecar.send_bytes(frame(body))
    FIGURES["editor faults: a request pygls cannot structure"] += 1
    answer = await sidecar.answer(43)
    assert "pygls cannot read the message" in answer["error"]["message"], answer
    await still_serving(sidecar)
    assert len(sidecar.answers_to(43)) == 1
    assert not error_popups(sidecar)


@pytest.mark.parametrize("id_first", [True, False])
async def test_a_body_nested_100000_deep_gets_one_answer(sidecar: RawSidecar, id_first: bool) -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    head = b'{"jsonrpc":"2.0","method":"workspace/executeCommand",'
    params = b'"params":{"command":"acp.status","arguments":' + deep + b"}"
    body = head + (b'"id":42,' + params if id_first else params + b',"id":42') + b"}"
    sidecar.send_bytes(frame(body))
    FIGURES["editor faults: body nested 100 000 deep"] += 1
    answer = await sidecar.answer(42)
    assert "deep" in answer["error"]["message"], answer
    await still_serving(sidecar)
    assert len(sidecar.answers_to(42)) == 1


async def test_a_body_without_a_recoverable_id_is_logged(sidecar: RawSidecar) -> None:
    sidecar.send_bytes(frame(b"\xff\xfe not json at all"))
    sidecar.send_bytes(frame(b"[" * 100_000))
    await still_serving(sidecar)
    await asyncio.sleep(0.3)
    assert not error_popups(sidecar)
    logged = [p["message"] for p in sidecar.of("window/logMessage")]
    assert len([m for m in logged if "LSP message" in m]) == 2, logged


@pytest.mark.parametrize("command", ["acp.session.load", "acp.prompt", "acp.session.rename"])
async def test_a_lone_surrogate_gets_a_clear_message(sidecar: RawSidecar, command: str) -> None:
    key = {"acp.session.load": "sessionId", "acp.prompt": "text", "acp.session.rename": "title"}[command]
    # json.dumps writes the lone surrogate as the escape \udcff: valid JSON, not valid Unicode.
    answer = await sidecar.command(command, {key: "bad\udcffid"})
    message = answer["error"]["message"]
    assert key in message and "surrogate" in message, message
    assert answer["error"]["code"] == -32602
    FIGURES["editor faults: lone surrogate in a string argument"] += 1
    await still_serving(sidecar)


async def test_eof_in_the_middle_of_a_message_exits_cleanly(sidecar: RawSidecar) -> None:
    agents = await sidecar.agent_pids()
    sidecar.send_bytes(b'Content-Length: 500\r\n\r\n{"jsonrpc":')
    assert sidecar.proc.stdin is not None
    sidecar.proc.stdin.close()
    async with asyncio.timeout(15):
        code = await sidecar.proc.wait()
    assert code == 1
    assert not await asyncio.to_thread(wait_gone, agents, 10)
    await asyncio.sleep(0.2)
    assert b"Traceback" not in sidecar.stderr, sidecar.stderr.decode(errors="replace")
