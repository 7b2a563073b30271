"""The coalescer, in-process: the first chunk after a quiet moment goes out at once, chunks
that follow within the window are joined, nothing is lost or reordered."""

from __future__ import annotations

import asyncio
from typing import Any

from sidecar.features.stream.coalesce import Coalescer
from sidecar.kernel.updates import Routed, read_update


def chunk(text: str, kind: str = "agent_message_chunk", **extra: Any) -> dict[str, Any]:
    return {"sessionUpdate": kind, "content": {"type": "text", "text": text}, **extra}


def routed(session_id: str, update: dict[str, Any]) -> Routed:
    return Routed(read_update(session_id, update), "t", False)


def texts(sent: list[dict[str, Any]]) -> list[str]:
    return [s["update"]["content"]["text"] for s in sent if "content" in s["update"]]


async def wait_until(pred: Any, timeout: float = 10) -> None:
    async with asyncio.timeout(timeout):
        while not pred():
            await asyncio.sleep(0.005)


async def test_the_first_chunk_after_quiet_is_sent_at_once() -> None:
    sent: list[dict[str, Any]] = []
    coalescer = Coalescer(sent.append, window=60)
    assert coalescer.push(routed("s", chunk("first"))) is True
    assert texts(sent) == ["first"], "sent inside push: no timer, no delay"
    # Within the window the next chunks are held and joined.
    coalescer.push(routed("s", chunk(" second")))
    coalescer.push(routed("s", chunk(" third")))
    assert texts(sent) == ["first"]
    coalescer.flush()
    assert texts(sent) == ["first", " second third"]
    assert sent[1] == {
        "sessionId": "s",
        "turnId": "t",
        "replay": False,
        "update": {
            "sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": " second third"},
        },
    }
    coalescer.close()


async def test_a_steady_stream_passes_and_a_burst_is_joined() -> None:
    sent: list[dict[str, Any]] = []
    coalescer = Coalescer(sent.append, window=0.2)  # quiet moment: 0.15 s
    coalescer.push(routed("s", chunk("a")))
    coalescer.push(routed("s", chunk("b")))  # right behind "a": held for the window
    coalescer.push(routed("s", chunk("c")))
    assert texts(sent) == ["a"]
    await wait_until(lambda: len(sent) == 2)  # the window ends: "bc" in one notification
    assert texts(sent) == ["a", "bc"]
    # A steady stream slower than one chunk per quiet moment passes without delay.
    for word in ("d", "e", "f"):
        await asyncio.sleep(0.2)
        coalescer.push(routed("s", chunk(word)))
        assert texts(sent)[-1] == word, "sent inside push"
    coalescer.push(routed("s", chunk("g")))  # close behind "f": held again
    assert texts(sent) == ["a", "bc", "d", "e", "f"]
    coalescer.close()
    assert texts(sent) == ["a", "bc", "d", "e", "f", "g"]
    assert coalescer._timer is None, "close leaves no timer behind"


async def test_order_and_text_are_kept_across_kinds_and_updates() -> None:
    sent: list[dict[str, Any]] = []
    coalescer = Coalescer(sent.append, window=60)
    stream = [
        ("s", chunk("a")),
        ("s", chunk("b")),
        ("s", chunk("x", "agent_thought_chunk")),
        ("s", chunk("y", "agent_thought_chunk")),
        ("s", {"sessionUpdate": "tool_call", "toolCallId": "1"}),
        ("s", chunk("c")),
        ("s", chunk("d", messageId="m2")),
        ("s", chunk("e", futureField=True)),  # unknown field: passed through untouched
        ("other", chunk("f")),
        ("s", chunk("g")),
    ]
    pushed = [coalescer.push(routed(sid, update)) for sid, update in stream]
    assert pushed == [True, True, True, True, False, True, True, False, True, True]
    coalescer.close()
    kinds = [(s["sessionId"], s["update"]["sessionUpdate"]) for s in sent]
    assert kinds == [
        ("s", "agent_message_chunk"),  # "a": at once
        ("s", "agent_message_chunk"),  # "b"
        ("s", "agent_thought_chunk"),  # "xy"
        ("s", "tool_call"),
        ("s", "agent_message_chunk"),  # "c"
        ("s", "agent_message_chunk"),  # "d" (another message)
        ("s", "agent_message_chunk"),  # "e" untouched
        ("other", "agent_message_chunk"),
        ("s", "agent_message_chunk"),
    ]
    assert "".join(texts(sent)) == "abxycdefg"
    assert sent[6]["update"] == chunk("e", futureField=True)
    assert coalescer.chunks_in == len(stream) and coalescer.notifications_out == len(sent)


async def test_a_burst_is_bounded_by_max_chars_and_loses_nothing() -> None:
    sent: list[dict[str, Any]] = []
    coalescer = Coalescer(sent.append, window=60, max_chars=1000)
    words = [f"c{i} " for i in range(10_000)]
    for word in words:
        coalescer.push(routed("s", chunk(word)))
    coalescer.close()
    assert "".join(texts(sent)) == "".join(words)
    assert all(len(t) < 1000 + 10 for t in texts(sent))
    assert len(sent) <= 1 + len("".join(words)) // 1000 + 1
