"""The ACP client layer against real agent processes: the demo agent and a foreign SDK agent."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from sidecar.acp import AcpClient, CapabilityMissing, ConnectionClosed, RemoteError
from sidecar.acp.process import LAST_WORD_MAX, StderrRing
from tests.procs import alive, descendants, wait_gone
from tests.schema_check import assert_valid

DEMO = [sys.executable, "-m", "sidecar.demo_agent"]
SDK_AGENT = Path(__file__).resolve().parents[1] / "agents" / "sdk_agent.py"


class Recorder:
    """A ClientHandler that records updates and answers the agent like a patient user."""

    def __init__(self, workspace: Path) -> None:
        self.updates: list[dict[str, Any]] = []
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.permission_outcome: dict[str, Any] = {"outcome": "selected", "optionId": "allow-once"}
        self.workspace = workspace

    def on_session_update(self, params: dict[str, Any]) -> None:
        self.updates.append(params)

    async def request_permission(self, params: dict[str, Any]) -> dict[str, Any]:
        self.requests.append(("permission", params))
        return {"outcome": self.permission_outcome}

    async def read_text_file(self, params: dict[str, Any]) -> dict[str, Any]:
        self.requests.append(("read", params))
        return {"content": Path(params["path"]).read_text()}

    async def write_text_file(self, params: dict[str, Any]) -> dict[str, Any]:
        self.requests.append(("write", params))
        Path(params["path"]).write_text(params["content"])
        return {}

    async def terminal_request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.requests.append((method, params))
        return {}

    # The ClientHandler's dispatch table, by method.
    def notify(self, method: str, params: dict[str, Any]) -> None:
        if method == "session/update":
            self.on_session_update(params)

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "session/request_permission":
            return await self.request_permission(params)
        if method == "fs/read_text_file":
            return await self.read_text_file(params)
        if method == "fs/write_text_file":
            return await self.write_text_file(params)
        return await self.terminal_request(method, params)

    def texts(self, session_id: str) -> str:
        return "".join(
            u["update"]["content"]["text"]
            for u in self.updates
            if u["sessionId"] == session_id
            and u["update"].get("sessionUpdate") == "agent_message_chunk"
            and isinstance(u["update"].get("content"), dict)
            and isinstance(u["update"]["content"].get("text"), str)
        )


@pytest.fixture
async def demo(workspace: Path, state_dir: Path) -> AsyncIterator[tuple[AcpClient, Recorder]]:
    recorder = Recorder(workspace)
    client = AcpClient(DEMO, recorder, env={"ACP_SIDECAR_STATE_DIR": str(state_dir), "PATH": "/usr/bin:/bin"})
    await client.start()
    try:
        yield client, recorder
    finally:
        await client.stop(grace=1)


async def test_initialize_and_prompt(demo: tuple[AcpClient, Recorder], workspace: Path) -> None:
    client, rec = demo
    agent = await client.initialize()
    assert agent.name and agent.can_load and agent.can_list and agent.can_resume and agent.can_embed_context
    session = await client.new_session(str(workspace))
    result = await client.prompt(session["sessionId"], [{"type": "text", "text": "Where is the README?"}])
    assert result["stopReason"] == "end_turn"
    assert "README" in rec.texts(session["sessionId"])
    assert [kind for kind, _ in rec.requests] == ["read"]


async def test_frames_we_send_are_valid_acp(workspace: Path, state_dir: Path) -> None:
    """Capture what our client writes (through a tee agent) and validate it against the schema."""
    log = state_dir / "frames.jsonl"
    tee = [
        sys.executable,
        str(Path(__file__).resolve().parents[1] / "agents" / "tee_agent.py"),
        str(log),
        *DEMO,
    ]
    rec = Recorder(workspace)
    client = AcpClient(tee, rec, env={"ACP_SIDECAR_STATE_DIR": str(state_dir), "PATH": "/usr/bin:/bin"})
    await client.start()
    try:
        await client.initialize()
        sid = (await client.new_session(str(workspace)))["sessionId"]
        await client.prompt(sid, [{"type": "text", "text": "#edit hi"}], {"acpSidecar": {"x": 1}})
        await client.set_mode(sid, "code")
        await client.set_config_option(sid, "model", "demo-smart")
        await client.list_sessions(str(workspace))
        await client.resume_session(sid, str(workspace))
        await client.cancel(sid)
        await client.close_session(sid)
    finally:
        await client.stop(grace=1)
    frames = [json.loads(line) for line in log.read_text().splitlines()]
    methods = {f.get("method") for f in frames}
    assert {"initialize", "session/new", "session/prompt", "session/cancel", "session/list"} <= methods
    type_for = {
        "initialize": "InitializeRequest",
        "session/new": "NewSessionRequest",
        "session/prompt": "PromptRequest",
        "session/set_mode": "SetSessionModeRequest",
        "session/set_config_option": "SetSessionConfigOptionRequest",
        "session/list": "ListSessionsRequest",
        "session/resume": "ResumeSessionRequest",
        "session/cancel": "CancelNotification",
        "session/close": "CloseSessionRequest",
    }
    responses = 0
    for frame in frames:
        assert frame["jsonrpc"] == "2.0"
        if "method" in frame:
            assert_valid(type_for[frame["method"]], frame["params"])
        else:
            responses += 1
            assert "result" in frame or "error" in frame
    assert responses >= 2  # the read and the write the agent asked for, plus the permission
    assert_valid(
        "ClientResponse", next(f for f in frames if "result" in f and "outcome" in (f["result"] or {}))
    )


async def test_stderr_burst_does_not_block(demo: tuple[AcpClient, Recorder], workspace: Path) -> None:
    client, rec = demo
    await client.initialize()
    sid = (await client.new_session(str(workspace)))["sessionId"]
    async with asyncio.timeout(20):
        result = await client.prompt(sid, [{"type": "text", "text": "#stderr=2000000 #chunks=3"}])
    assert result["stopReason"] == "end_turn"
    ring = client.process.stderr
    async with asyncio.timeout(10):
        while ring.total_bytes < 2_000_000:
            await asyncio.sleep(0.05)
    assert sum(len(line) for line in ring.tail(10_000)) <= ring.max_bytes


async def test_oversize_and_garbage_frames_are_skipped(
    demo: tuple[AcpClient, Recorder], workspace: Path
) -> None:
    client, rec = demo
    client.connection._max_frame = 1_000_000  # type: ignore[union-attr]
    await client.initialize()
    sid = (await client.new_session(str(workspace)))["sessionId"]
    result = await client.prompt(sid, [{"type": "text", "text": "#bigframe=3000000 #garbage #chunks=3"}])
    assert result["stopReason"] == "end_turn"
    stats = client.connection.stats  # type: ignore[union-attr]
    assert stats.skipped_oversize == 1
    assert stats.skipped_invalid >= 2  # invalid JSON and a non-object frame
    assert stats.unknown_responses >= 1
    assert rec.texts(sid).endswith("c0 c1 c2 ")
    # Still usable afterwards.
    assert (await client.prompt(sid, [{"type": "text", "text": "#chunks=1"}]))["stopReason"] == "end_turn"


async def test_unknown_update_kinds_and_fields_are_kept(
    demo: tuple[AcpClient, Recorder], workspace: Path
) -> None:
    client, rec = demo
    await client.initialize()
    sid = (await client.new_session(str(workspace)))["sessionId"]
    await client.prompt(sid, [{"type": "text", "text": "#unknown #chunks=1"}])
    updates = [u["update"] for u in rec.updates]
    assert {"sessionUpdate": "future_kind_xyz", "someField": {"nested": [1, 2]}} in updates
    assert any(u.get("futureField") is True for u in updates)


async def test_notifications_arrive_in_order(demo: tuple[AcpClient, Recorder], workspace: Path) -> None:
    client, rec = demo
    await client.initialize()
    sid = (await client.new_session(str(workspace)))["sessionId"]
    await client.prompt(sid, [{"type": "text", "text": "#chunks=5000"}])
    assert rec.texts(sid) == "".join(f"c{i} " for i in range(5000))


async def test_capabilities_are_checked_before_calls(workspace: Path, state_dir: Path) -> None:
    rec = Recorder(workspace)
    env = {"ACP_SIDECAR_STATE_DIR": str(state_dir), "ACP_DEMO_CAPS": "no-list,no-resume,no-load,no-close"}
    client = AcpClient(DEMO, rec, env=env | {"PATH": "/usr/bin:/bin"})
    await client.start()
    try:
        await client.initialize()
        with pytest.raises(CapabilityMissing):
            await client.list_sessions()
        with pytest.raises(CapabilityMissing):
            await client.resume_session("x", str(workspace))
        with pytest.raises(CapabilityMissing):
            await client.load_session("x", str(workspace))
        with pytest.raises(CapabilityMissing):
            await client.close_session("x")
    finally:
        await client.stop(grace=1)


async def test_list_all_pages_and_cursor_loop_guard(workspace: Path, state_dir: Path) -> None:
    seed = [sys.executable, "-m", "sidecar.demo_agent", "seed", "--state-dir", str(state_dir / "demo-agent")]
    proc = await asyncio.create_subprocess_exec(*seed, "--cwd", str(workspace), "--count", "120")
    assert await proc.wait() == 0
    for loop_env, complete in (("0", True), ("1", False)):
        rec = Recorder(workspace)
        env = {
            "ACP_SIDECAR_STATE_DIR": str(state_dir),
            "ACP_DEMO_PAGE_SIZE": "50",
            "ACP_DEMO_LIST_LOOP": loop_env,
            "PATH": "/usr/bin:/bin",
        }
        client = AcpClient(DEMO, rec, env=env)
        await client.start()
        try:
            await client.initialize()
            async with asyncio.timeout(20):
                sessions, done = await client.list_sessions(str(workspace))
            assert done is complete
            ids = [s["sessionId"] for s in sessions]
            if complete:
                assert len(ids) == 120 and len(set(ids)) == 120
            else:
                assert len(ids) < 1000  # stopped instead of looping forever
        finally:
            await client.stop(grace=1)


async def test_agent_errors_are_typed(demo: tuple[AcpClient, Recorder], workspace: Path) -> None:
    client, rec = demo
    await client.initialize()
    with pytest.raises(RemoteError) as info:
        await client.prompt("no-such-session", [{"type": "text", "text": "hi"}])
    assert info.value.code == -32002 and info.value.message
    with pytest.raises(RemoteError) as info:
        await client.new_session("relative/path")
    assert info.value.code == -32602


async def test_crash_mid_turn_fails_waiters_and_leaves_no_zombie(workspace: Path, state_dir: Path) -> None:
    rec = Recorder(workspace)
    client = AcpClient(DEMO, rec, env={"ACP_SIDECAR_STATE_DIR": str(state_dir), "PATH": "/usr/bin:/bin"})
    await client.start()
    pid = client.process.pid
    assert pid is not None
    try:
        await client.initialize()
        sid = (await client.new_session(str(workspace)))["sessionId"]
        with pytest.raises(ConnectionClosed):
            async with asyncio.timeout(10):
                await client.prompt(sid, [{"type": "text", "text": "#crash"}])
        assert await client.process.wait() == 3
        assert not alive(pid)
        with pytest.raises(ConnectionClosed):
            await client.new_session(str(workspace))
    finally:
        await client.stop(grace=1)


async def test_stop_escalates_to_kill_for_a_hung_agent(
    demo: tuple[AcpClient, Recorder], workspace: Path
) -> None:
    client, rec = demo
    await client.initialize()
    sid = (await client.new_session(str(workspace)))["sessionId"]
    prompt = asyncio.ensure_future(client.prompt(sid, [{"type": "text", "text": "#hang"}]))
    await asyncio.sleep(0.3)
    pid = client.process.pid
    assert pid is not None
    kids = descendants(pid) | {pid}
    async with asyncio.timeout(10):
        await client.stop(grace=0.5)
    assert not wait_gone(kids, 5)
    with pytest.raises(ConnectionClosed):
        await prompt


async def test_foreign_sdk_agent(workspace: Path) -> None:
    """An agent written against the ACP Python SDK's Agent interface, through our client."""
    rec = Recorder(workspace)
    client = AcpClient([sys.executable, str(SDK_AGENT)], rec, env={"PATH": "/usr/bin:/bin"})
    await client.start()
    try:
        async with asyncio.timeout(20):
            agent = await client.initialize()
            assert agent.protocol_version == 1
            sid = (await client.new_session(str(workspace)))["sessionId"]
            result = await client.prompt(sid, [{"type": "text", "text": "hello sdk"}])
        assert result["stopReason"] == "end_turn"
        assert "hello sdk" in rec.texts(sid)
    finally:
        await client.stop(grace=1)


async def test_set_title(demo: tuple[AcpClient, Recorder], workspace: Path) -> None:
    client, _rec = demo
    agent = await client.initialize()
    assert agent.can_set_title
    assert (agent.name, agent.title, agent.display_name) == (
        "acp-sidecar-demo",
        "acp-sidecar demo agent",
        "acp-sidecar demo agent",
    )
    sid = (await client.new_session(str(workspace)))["sessionId"]
    assert await client.set_title(sid, "  Fix \t auth\n") == "Fix auth"
    with pytest.raises(RemoteError) as unknown:
        await client.set_title("demo-000000000000", "x")
    assert unknown.value.code == -32002
    with pytest.raises(RemoteError) as invalid:
        await client.set_title(sid, "x" * 201)
    assert invalid.value.code == -32602


async def test_set_title_not_offered_and_malformed_answers(workspace: Path, state_dir: Path) -> None:
    env = {"ACP_SIDECAR_STATE_DIR": str(state_dir), "ACP_DEMO_CAPS": "no-set-title", "PATH": "/usr/bin:/bin"}
    client = AcpClient(DEMO, Recorder(workspace), env=env)
    await client.start()
    try:
        agent = await client.initialize()
        assert not agent.can_set_title
        with pytest.raises(CapabilityMissing):
            await client.set_title("any", "x")
        # An agent that answers without a title (or not an object) gets a clear error.
        agent.capabilities["sessionCapabilities"]["title"] = {}
        for answer in ({"title": 5}, {}, ["title"]):

            async def reply(
                method: str, params: Any, timeout: float | None = -1.0, answer: Any = answer
            ) -> Any:
                return answer

            client._call = reply  # type: ignore[method-assign]
            with pytest.raises(RemoteError) as bad:
                await client.set_title("any", "x")
            assert "session/set_title" in bad.value.message, bad.value
    finally:
        await client.stop(grace=1)


NODE_CRASH = """/app/node_modules/agent/dist/index.js:812
      throw new Error(`session creation failed: ${reason}`);
            ^

Error: session creation failed: getaddrinfo ENOTFOUND api.example.com
    at createSession (/app/node_modules/agent/dist/index.js:812:13)
    at process.processTicksAndRejections (node:internal/process/task_queues:105:5) {
  code: 'ENOTFOUND'
}

Node.js v24.11.1
"""

RUST_PANIC = """thread 'main' panicked at src/main.rs:12:5:
no config at /home/u/.agent.toml
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace
"""

PYTHON_CRASH = """Traceback (most recent call last):
  File "/app/agent.py", line 3, in <module>
    main()
ValueError: the model name is empty
"""


@pytest.mark.parametrize(
    ("stderr", "said"),
    [
        (
            NODE_CRASH,
            "Error: session creation failed: getaddrinfo ENOTFOUND api.example.com | … | Node.js v24.11.1",
        ),
        (
            RUST_PANIC,
            "thread 'main' panicked at src/main.rs:12:5: | no config at /home/u/.agent.toml"
            " | note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace",
        ),
        (PYTHON_CRASH, "ValueError: the model name is empty"),
        ("starting\n\nlistening on stdio\n\n\n", "starting | listening on stdio"),
        ("", ""),
    ],
)
def test_last_words_name_the_error_not_the_noise_after_it(stderr: str, said: str) -> None:
    ring = StderrRing()
    for line in stderr.splitlines():
        ring.add(line)
    assert ring.last_words() == said


def test_last_words_are_bounded_per_line() -> None:
    ring = StderrRing()
    ring.add("TypeError: " + "x" * 5_000)
    words = ring.last_words()
    assert words.startswith("TypeError: xxx") and words.endswith("…") and len(words) == LAST_WORD_MAX
