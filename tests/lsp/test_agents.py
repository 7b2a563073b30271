"""Several agents behind one sidecar (issue 24): named agents, sessions owned by one agent each,
one history of them all, an agent started on first use, stopped when idle, restarted after a
crash while the other one goes on untouched; no agent process outlives its stop or the sidecar.

The second agent is the demo agent under another name (`ACP_DEMO_NAME`), with its own session
store: a separate ACP agent as far as the sidecar can tell. Each agent's processes carry a marker
in their environment, so the test sees which ones run.
"""

from __future__ import annotations

import asyncio
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from tests.lsp.editor import Editor, open_editor
from tests.procs import marked_processes, wait_gone

MARK = "ACP_TEST_AGENT_MARK"
DEMO = [sys.executable, "-m", "sidecar.demo_agent"]


def two_agents(state_dir: Path, tag: str, **extra: Any) -> dict[str, Any]:
    """`demo` (the default) and `second`: the demo agent named second-agent, its own store."""
    return {
        "agent": {"env": {MARK: f"demo-{tag}"}},  # the env of the one agent: here the demo agent's
        "agents": {
            "second": {
                "command": DEMO,
                "env": {
                    MARK: f"second-{tag}",
                    "ACP_DEMO_NAME": "second-agent",
                    "ACP_DEMO_AGENT_STATE_DIR": str(state_dir / "second-agent-store"),
                },
            }
        },
        "defaultAgent": "demo",
        **extra,
    }


def running(name: str, tag: str) -> set[int]:
    return marked_processes(MARK, f"{name}-{tag}")


async def agents_by_name(ed: Editor) -> dict[str, dict[str, Any]]:
    listed = await ed.command("acp.agents")
    return {a["name"]: a for a in listed["agents"]}


async def wait_agent_state(ed: Editor, name: str, state: str, timeout: float = 30) -> dict[str, Any]:
    async with asyncio.timeout(timeout):
        while True:
            agent = (await agents_by_name(ed))[name]
            if agent["state"] == state:
                return agent
            await asyncio.sleep(0.05)


async def test_two_agents_each_with_its_sessions_in_one_history(workspace: Path, state_dir: Path) -> None:
    tag = uuid.uuid4().hex[:8]
    options = two_agents(state_dir, tag)
    async with open_editor("neovim", workspace, state_dir, init_options=options) as ed:
        # Configured, not started: nothing runs until a session needs one.
        listed = await ed.command("acp.agents")
        assert listed["default"] == "demo"
        assert [(a["name"], a["state"], a["default"]) for a in listed["agents"]] == [
            ("demo", "stopped", True),
            ("second", "stopped", False),
        ]
        assert running("demo", tag) == set() and running("second", tag) == set()

        first = (await ed.command("acp.session.new"))["sessionId"]
        status = await ed.wait_for("acp/status", lambda s: s["sessionId"] == first)
        assert status["agent"]["configured"] == "demo"
        assert running("demo", tag) and running("second", tag) == set()
        second = (await ed.command("acp.session.new", {"agent": "second"}))["sessionId"]
        status = await ed.wait_for("acp/status", lambda s: s["sessionId"] == second)
        assert (status["agent"]["configured"], status["agent"]["name"]) == ("second", "second-agent")
        assert running("second", tag)

        agents = await agents_by_name(ed)
        assert (agents["demo"]["state"], agents["second"]["state"]) == ("idle", "idle")
        assert agents["second"]["title"] == "second-agent (demo agent)"
        assert agents["second"]["capabilities"] == {
            "load": True,
            "resume": True,
            "list": True,
            "setTitle": True,
            "fork": True,
            "close": True,
            "delete": True,
            "logout": False,
        }

        # A prompt on each goes to that session's agent.
        for sid, words in ((first, "hello from one"), (second, "hello from two")):
            admitted, end = await ed.prompt_and_wait(words, sessionId=sid)
            assert admitted["sessionId"] == sid and end["stopReason"] == "end_turn"
            assert ed.text_of(admitted["turnId"])
        # Renamed, each by its own agent (session/set_title), the sessionInfo naming the agent.
        for sid, title in ((first, "One by demo"), (second, "Two by second")):
            await ed.command("acp.session.rename", {"title": title, "sessionId": sid})
            info = await ed.wait_for(
                "acp/sessionInfo", lambda i, s=sid, t=title: i["sessionId"] == s and i["title"] == t
            )
            assert info["agent"] == ("demo" if sid == first else "second")
        # Cancelled, each on its own agent.
        for sid in (first, second):
            admitted = await ed.command("acp.prompt", {"text": "#chunks=200 #slow=100", "sessionId": sid})
            await ed.wait_for(
                "acp/sessionUpdate", lambda u, t=admitted["turnId"]: u["turnId"] == t and not u["replay"]
            )
            assert await ed.command("acp.cancel", {"sessionId": sid}) == {"cancelled": True}
            end = await ed.wait_turn_end(admitted["turnId"])
            assert end["stopReason"] == "cancelled"

        # One history: both, newest first, each with its agent; refresh asks each agent that lists.
        for refresh in (False, True):
            sessions = (await ed.command("acp.session.list", {"refresh": refresh}))["sessions"]
            assert [(s["sessionId"], s["agent"], s["title"]) for s in sessions] == [
                (second, "second", "Two by second"),
                (first, "demo", "One by demo"),
            ], refresh
        sidecar_pid = ed.client._server.pid  # type: ignore[union-attr]
        agent_pids = running("demo", tag) | running("second", tag)
    # No agent process outlives the sidecar.
    assert wait_gone({sidecar_pid, *agent_pids}) == set()

    # A later sidecar: the history is there before any agent runs; loading a session starts its agent.
    async with open_editor("vscode", workspace, state_dir, init_options=options) as ed:
        sessions = (await ed.command("acp.session.list"))["sessions"]
        assert [(s["sessionId"], s["agent"]) for s in sessions] == [(second, "second"), (first, "demo")]
        assert running("demo", tag) == set() and running("second", tag) == set()
        assert await ed.command("acp.session.load", {"sessionId": second}) == {"sessionId": second}
        agents = await agents_by_name(ed)
        assert (agents["demo"]["state"], agents["second"]["state"]) == ("stopped", "idle")
        assert running("demo", tag) == set() and running("second", tag)
        _, end = await ed.prompt_and_wait("still you?", sessionId=second)
        assert end["stopReason"] == "end_turn"
        # The other agent's transcript document continues with that agent.
        transcript = await ed.command("acp.session.transcript", {"sessionId": first})
        admitted = await ed.command("acp.prompt", {"text": "and you?", "uri": transcript["uri"]})
        assert admitted["sessionId"] == first
        end = await ed.wait_turn_end(admitted["turnId"])
        assert end["stopReason"] == "end_turn"
        assert running("demo", tag)
        # Both run now: refresh reconciles each, and the one prompted last is the newest.
        sessions = (await ed.command("acp.session.list", {"refresh": True}))["sessions"]
        assert [(s["sessionId"], s["agent"]) for s in sessions] == [(first, "demo"), (second, "second")]


async def test_one_agent_crashing_mid_turn_leaves_the_other_streaming(
    workspace: Path, state_dir: Path
) -> None:
    tag = uuid.uuid4().hex[:8]
    async with open_editor("neovim", workspace, state_dir, init_options=two_agents(state_dir, tag)) as ed:
        calm = (await ed.command("acp.session.new"))["sessionId"]
        doomed = (await ed.command("acp.session.new", {"agent": "second"}))["sessionId"]
        demo_pids = running("demo", tag)
        streaming = await ed.command("acp.prompt", {"text": "#chunks=30 #slow=40", "sessionId": calm})
        await ed.wait_for("acp/sessionUpdate", lambda u: u["turnId"] == streaming["turnId"])
        crashing = await ed.command("acp.prompt", {"text": "#crash", "sessionId": doomed})
        crashed = await ed.wait_turn_end(crashing["turnId"])
        assert crashed["stopReason"] != "end_turn" and crashed["error"], crashed
        agents = await agents_by_name(ed)
        assert agents["second"]["state"] == "error" and "code 3" in agents["second"]["message"]
        # The other agent's turn loses nothing: every chunk, in order, and its normal end.
        calm_end = await ed.wait_turn_end(streaming["turnId"])
        assert calm_end["stopReason"] == "end_turn"
        assert ed.text_of(streaming["turnId"]) == "".join(f"c{i} " for i in range(30))
        assert running("demo", tag) == demo_pids
        assert (await agents_by_name(ed))["demo"]["state"] == "idle"
        # The crashed one restarts on its next use and takes its session back.
        _, end = await ed.prompt_and_wait("are you back?", sessionId=doomed)
        assert end["stopReason"] == "end_turn"
        assert (await agents_by_name(ed))["second"]["state"] == "idle"


async def test_an_idle_agent_is_stopped_and_restarted_by_the_next_prompt(
    workspace: Path, state_dir: Path
) -> None:
    tag = uuid.uuid4().hex[:8]
    # Idle for 3 s: under load, the checks between a turn's end and the stop must fit in it.
    options = two_agents(state_dir, tag, agentIdleStopSeconds=3)
    async with open_editor("helix", workspace, state_dir, init_options=options) as ed:
        sid = (await ed.command("acp.session.new", {"agent": "second"}))["sessionId"]
        pids = running("second", tag)
        assert pids
        _, end = await ed.prompt_and_wait("first words", sessionId=sid)
        assert end["stopReason"] == "end_turn"
        await wait_agent_state(ed, "second", "stopped")
        assert wait_gone(pids) == set()  # stopped means gone, nothing of it left
        assert running("second", tag) == set()
        # The next prompt starts it again and re-attaches the session (resume).
        admitted, end = await ed.prompt_and_wait("second words", sessionId=sid)
        assert admitted["sessionId"] == sid and end["stopReason"] == "end_turn"
        assert running("second", tag)
        status = ed.of("acp/status")[-1]
        assert status["agent"]["configured"] == "second"


async def test_bad_agent_entries_are_named_once_and_the_rest_work(workspace: Path, state_dir: Path) -> None:
    options = {
        "agents": {
            "good": {"command": DEMO, "env": {"ACP_DEMO_NAME": "good-agent"}},
            "nocommand": {"env": {"A": "b"}},
            "badenv": {"command": DEMO, "env": {"A": 1}},
            "notanobject": 7,
            "demo": {"command": ["elsewhere"]},
        },
        "defaultAgent": "good",
    }
    async with open_editor("vscode", workspace, state_dir, init_options=options) as ed:
        message = await ed.wait_message(lambda m: "bad key" in m)
        for named in ("agents.nocommand", "agents.badenv.env", "agents.notanobject", "agents.demo"):
            assert named in message, message
        assert len([m for m in ed.client.messages if "bad key" in m.message]) == 1
        listed = await ed.command("acp.agents")
        assert [a["name"] for a in listed["agents"]] == ["good", "badenv", "demo"]
        assert listed["default"] == "good"
        sid = (await ed.command("acp.session.new"))["sessionId"]
        status = await ed.wait_for("acp/status", lambda s: s["sessionId"] == sid)
        assert (status["agent"]["configured"], status["agent"]["name"]) == ("good", "good-agent")
        with pytest.raises(JsonRpcException) as info:
            await ed.command("acp.session.new", {"agent": "nocommand"})
        assert "unknown agent 'nocommand'; configured: good, badenv, demo" in info.value.message


async def test_the_one_agent_of_the_command_line_keeps_working_named_after_it(
    workspace: Path, state_dir: Path
) -> None:
    second = Path(__file__).resolve().parents[1] / "agents" / "sdk_agent.py"
    async with open_editor(
        "neovim", workspace, state_dir, extra_args=["--agent", f"{sys.executable} {second}"]
    ) as ed:
        listed = await ed.command("acp.agents")
        name = Path(sys.executable).name
        assert [a["name"] for a in listed["agents"]] == [name, "demo"] and listed["default"] == name
        sid = (await ed.command("acp.session.new"))["sessionId"]
        assert sid.startswith("sdk-")
        demo = (await ed.command("acp.session.new", {"agent": "demo"}))["sessionId"]
        assert demo.startswith("demo-")
        _, end = await ed.prompt_and_wait("hello there", sessionId=sid)
        assert end["stopReason"] == "end_turn"
