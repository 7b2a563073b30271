"""Initialization, errors, capability switches, auth and process lifecycle."""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path

import pytest

from sidecar import __version__

from .acp_peer import AgentPeer, PeerError
from .conftest import Spawn

pytestmark = pytest.mark.timeout(60)


async def test_initialize(spawn: Spawn) -> None:
    peer = await spawn()
    result = await peer.initialize(version=7)  # a newer client still gets v1
    assert result["protocolVersion"] == 1
    caps = result["agentCapabilities"]
    assert caps["loadSession"] is True
    assert caps["promptCapabilities"] == {"image": False, "audio": False, "embeddedContext": True}
    assert caps["mcpCapabilities"] == {"http": False, "sse": False}
    assert caps["sessionCapabilities"] == {
        "list": {},
        "resume": {},
        "close": {},
        "delete": {},
        "fork": {},
        "title": {},
    }
    assert "auth" not in caps  # logout is offered only with ACP_DEMO_CAPS=auth
    assert result["agentInfo"] == {
        "name": "acp-sidecar-demo",
        "title": "acp-sidecar demo agent",
        "version": __version__,
    }
    assert result["authMethods"] == []
    with pytest.raises(PeerError) as err:
        await peer.request("initialize", {"clientCapabilities": {}})
    assert err.value.code == -32602 and "protocolVersion" in err.value.message


async def test_new_session(agent: AgentPeer, workspace: Path) -> None:
    pending = agent.start_request("session/new", {"cwd": str(workspace), "mcpServers": []})
    result = (await agent.response(pending))["result"]
    assert result["sessionId"].startswith("demo-")
    assert result["modes"]["currentModeId"] == "ask"
    assert [m["id"] for m in result["modes"]["availableModes"]] == ["ask", "code", "plan"]
    model, verbosity = result["configOptions"]
    assert (model["id"], model["category"], model["currentValue"]) == ("model", "model", "demo-fast")
    assert [o["value"] for o in model["options"]] == ["demo-fast", "demo-smart"]
    assert (verbosity["id"], verbosity["currentValue"]) == ("verbosity", "normal")
    # available_commands_update comes after the response.
    await agent.wait_for(lambda: agent.kinds(result["sessionId"]) == ["available_commands_update"])
    kinds = [f.msg.get("id") == pending.id or f.msg.get("method") for f in agent.frames]
    assert kinds.index(True) < kinds.index("session/update")
    other = await agent.new_session(workspace)
    assert other != result["sessionId"]


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"cwd": "relative/dir", "mcpServers": []}, "cwd"),
        ({"cwd": "/definitely/not/here", "mcpServers": []}, "cwd"),
        ({"mcpServers": []}, "cwd"),
        ({"cwd": "/", "mcpServers": "nope"}, "mcpServers"),
        ({"cwd": "/", "mcpServers": [], "additionalDirectories": ["rel"]}, "additionalDirectories"),
    ],
)
async def test_new_session_invalid_params(agent: AgentPeer, params: dict[str, object], field: str) -> None:
    with pytest.raises(PeerError) as err:
        await agent.request("session/new", params)
    assert err.value.code == -32602
    assert field in err.value.message


async def test_errors_and_unknowns(agent: AgentPeer, workspace: Path) -> None:
    with pytest.raises(PeerError) as err:
        await agent.request("session/frobnicate", {})
    assert err.value.code == -32601
    # Unknown notifications are ignored; malformed JSON gets -32700 with id null.
    agent.notify("session/whatever", {"x": 1})
    agent.send_raw(b'{"jsonrpc": "2.0", "id": 99, "method": \n')
    frame = await agent.wait_for(
        lambda: next((f for f in agent.frames if f.msg.get("error", {}).get("code") == -32700), None)
    )
    assert frame.msg["id"] is None
    with pytest.raises(PeerError) as err:
        await agent.request("session/prompt", {"sessionId": "demo-nope", "prompt": []})
    assert err.value.code == -32002 and "demo-nope" in err.value.message
    sid = await agent.new_session(workspace)
    with pytest.raises(PeerError) as err:
        await agent.request("session/prompt", {"sessionId": sid, "prompt": "hello"})
    assert err.value.code == -32602 and "prompt" in err.value.message
    with pytest.raises(PeerError) as err:
        await agent.request("session/set_mode", {"sessionId": "demo-nope", "modeId": "ask"})
    assert err.value.code == -32002
    with pytest.raises(PeerError) as err:
        await agent.request(
            "session/prompt",
            {"sessionId": sid, "prompt": [{"type": "image", "data": "", "mimeType": "image/png"}]},
        )
    assert err.value.code == -32602
    # Still alive and well.
    assert (await agent.prompt(sid, "#chunks=1"))["stopReason"] == "end_turn"


async def test_modes_and_config(agent: AgentPeer, workspace: Path) -> None:
    sid = await agent.new_session(workspace)
    assert await agent.request("session/set_mode", {"sessionId": sid, "modeId": "code"}) == {}
    await agent.wait_for(lambda: "current_mode_update" in agent.kinds(sid))
    assert agent.session_updates(sid)[-1]["currentModeId"] == "code"
    with pytest.raises(PeerError) as err:
        await agent.request("session/set_mode", {"sessionId": sid, "modeId": "yolo"})
    assert err.value.code == -32602 and "modeId" in err.value.message
    result = await agent.request(
        "session/set_config_option", {"sessionId": sid, "configId": "model", "value": "demo-smart"}
    )
    assert result["configOptions"][0]["currentValue"] == "demo-smart"
    update = agent.session_updates(sid)[-1]
    assert update["sessionUpdate"] == "config_option_update"
    assert update["configOptions"] == result["configOptions"]
    for config_id, value in (("model", "gpt-42"), ("nope", "x"), ("verbosity", True)):
        with pytest.raises(PeerError) as err:
            await agent.request(
                "session/set_config_option", {"sessionId": sid, "configId": config_id, "value": value}
            )
        assert err.value.code == -32602
    with pytest.raises(PeerError) as err:
        await agent.request("session/set_model", {"sessionId": sid, "modelId": "demo-fast"})
    assert err.value.code == -32601


async def test_capability_switches(spawn: Spawn, workspace: Path) -> None:
    peer = await spawn(
        env={"ACP_DEMO_CAPS": "no-load,no-list,no-resume,no-close,no-delete,no-fork,no-set-title,no-embedded"}
    )
    caps = (await peer.initialize())["agentCapabilities"]
    assert caps["loadSession"] is False
    assert caps["sessionCapabilities"] == {}
    assert caps["promptCapabilities"]["embeddedContext"] is False
    sid = await peer.new_session(workspace)
    for method, params in (
        ("session/load", {"sessionId": sid, "cwd": str(workspace), "mcpServers": []}),
        ("session/resume", {"sessionId": sid, "cwd": str(workspace)}),
        ("session/list", {}),
        ("session/close", {"sessionId": sid}),
        ("session/fork", {"sessionId": sid, "cwd": str(workspace), "mcpServers": []}),
        ("session/set_title", {"sessionId": sid, "title": "New title"}),
        ("session/delete", {"sessionId": sid}),
        ("logout", {}),
    ):
        with pytest.raises(PeerError) as err:
            await peer.request(method, params)
        assert err.value.code == -32601, method
    resource = {"type": "resource", "resource": {"uri": f"file://{workspace}/README.md", "text": "x"}}
    with pytest.raises(PeerError) as err:
        await peer.request("session/prompt", {"sessionId": sid, "prompt": [resource]})
    assert err.value.code == -32602
    link = {"type": "resource_link", "name": "README.md", "uri": f"file://{workspace}/README.md"}
    result = await peer.request("session/prompt", {"sessionId": sid, "prompt": [link]})
    assert result["stopReason"] == "end_turn"


async def test_legacy_model(spawn: Spawn, workspace: Path) -> None:
    peer = await spawn(env={"ACP_DEMO_CAPS": "legacy-model"})
    await peer.initialize()
    result = await peer.request("session/new", {"cwd": str(workspace), "mcpServers": []})
    assert [o["id"] for o in result["configOptions"]] == ["verbosity"]
    assert result["models"] == {
        "currentModelId": "demo-fast",
        "availableModels": [
            {"modelId": "demo-fast", "name": "Demo Fast"},
            {"modelId": "demo-smart", "name": "Demo Smart"},
        ],
    }
    sid = result["sessionId"]
    assert await peer.request("session/set_model", {"sessionId": sid, "modelId": "demo-smart"}) == {}
    with pytest.raises(PeerError) as err:
        await peer.request("session/set_model", {"sessionId": sid, "modelId": "nope"})
    assert err.value.code == -32602
    with pytest.raises(PeerError):
        await peer.request(
            "session/set_config_option", {"sessionId": sid, "configId": "model", "value": "demo-fast"}
        )
    resumed = await peer.request("session/resume", {"sessionId": sid, "cwd": str(workspace)})
    assert resumed["models"]["currentModelId"] == "demo-smart"


async def test_auth(spawn: Spawn, workspace: Path) -> None:
    peer = await spawn(env={"ACP_DEMO_CAPS": "auth"})
    methods = (await peer.initialize())["authMethods"]
    assert [(m["id"], m["name"]) for m in methods] == [("demo-login", "Demo login")]
    for method, params in (
        ("session/new", {"cwd": str(workspace), "mcpServers": []}),
        ("session/list", {}),
        ("session/load", {"sessionId": "demo-x", "cwd": str(workspace), "mcpServers": []}),
        ("session/resume", {"sessionId": "demo-x", "cwd": str(workspace)}),
    ):
        with pytest.raises(PeerError) as err:
            await peer.request(method, params)
        assert (err.value.code, err.value.message) == (-32000, "Authentication required")
    with pytest.raises(PeerError) as err:
        await peer.request("authenticate", {"methodId": "password"})
    assert err.value.code == -32602
    assert await peer.request("authenticate", {"methodId": "demo-login"}) == {}
    await peer.new_session(workspace)


async def test_crash_at_startup(spawn: Spawn) -> None:
    peer = await spawn(env={"ACP_DEMO_CRASH_AT": "startup"})
    assert await peer.wait_exit(10) == 3
    assert peer.frames == []


async def test_crash_at_initialize(spawn: Spawn) -> None:
    peer = await spawn(env={"ACP_DEMO_CRASH_AT": "initialize"})
    pending = peer.start_request("initialize", {"protocolVersion": 1})
    assert await peer.wait_exit(10) == 3
    await peer.wait_for(lambda: peer.eof, 5)
    assert isinstance(pending.future.exception(), ConnectionError)  # never answered
    assert peer.frames == []


async def test_exit_on_eof_while_prompting(spawn: Spawn, workspace: Path) -> None:
    peer = await spawn(env={"ACP_DEMO_CHUNK_DELAY_MS": "50"})
    await peer.initialize()
    sid = await peer.new_session(workspace)
    peer.start_request("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]})
    await peer.wait_for(lambda: "agent_message_chunk" in peer.kinds(sid))
    assert peer.proc.stdin is not None
    started = time.monotonic()
    peer.proc.stdin.close()
    assert await peer.wait_exit(5) == 0
    assert time.monotonic() - started < 2


async def test_exit_on_sigterm(spawn: Spawn) -> None:
    peer = await spawn()
    await peer.initialize()
    peer.proc.send_signal(signal.SIGTERM)
    assert await peer.wait_exit(5) == 0


async def test_stdout_has_only_frames(spawn: Spawn, workspace: Path) -> None:
    peer = await spawn(env={"ACP_DEMO_CAPS": "bogus-token"})
    await peer.initialize()
    sid = await peer.new_session(workspace)
    await peer.prompt(sid, "#stderr=5000 hello")
    await asyncio.sleep(0.05)
    assert peer.bad_lines == []
    assert b"bogus-token" in peer.stderr  # the warning went to stderr
