"""Agent crash and restart, save/restart/load, shutdown paths, and no orphans ever."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException

from tests.lsp.editor import SIDECAR, open_editor
from tests.procs import alive, descendants, wait_gone


async def test_agent_crash_mid_turn_then_restart(workspace: Path, state_dir: Path) -> None:
    async with open_editor("vscode", workspace, state_dir) as ed:
        sid = (await ed.command("acp.session.new"))["sessionId"]
        await ed.prompt_and_wait("#chunks=2 first")
        agents_before = descendants(ed.client._server.pid)
        admitted = await ed.command("acp.prompt", "#crash")
        end = await ed.wait_turn_end(admitted["turnId"])
        assert end["stopReason"] is None and "exited" in end["error"]["message"]
        await ed.wait_for("acp/status", lambda s: s["state"] == "disconnected")
        assert not wait_gone(agents_before, 5), "the crashed agent is reaped, no zombie"
        # The next command restarts the agent and re-attaches the session (resume).
        _, after = await ed.prompt_and_wait("#chunks=2 again")
        assert after["stopReason"] == "end_turn"
        status = await ed.command("acp.status")
        assert status["sessionId"] == sid and status["state"] == "idle"
        await asyncio.sleep(0.3)
        assert len([t for t in ed.turn_events(admitted["turnId"]) if t["state"] == "ended"]) == 1


async def test_queued_turns_end_with_an_error_when_the_agent_dies(workspace: Path, state_dir: Path) -> None:
    async with open_editor("helix", workspace, state_dir) as ed:
        await ed.command("acp.session.new")
        crash = await ed.command("acp.prompt", "#slow=100 #chunks=3 #crash")
        queued = await ed.command("acp.prompt", "#chunks=1 behind")
        for turn in (crash, queued):
            await ed.wait_turn_end(turn["turnId"])
        ended = [t for t in ed.of("acp/turn") if t["state"] == "ended"]
        assert {t["turnId"] for t in ended} == {crash["turnId"], queued["turnId"]}
        assert len(ended) == 2


async def test_title_survives_restart_and_load_resumes(workspace: Path, state_dir: Path) -> None:
    async with open_editor("vscode", workspace, state_dir) as ed:
        sid = (await ed.command("acp.session.new"))["sessionId"]
        await ed.prompt_and_wait("Explain the build system please")
        info = await ed.wait_for("acp/sessionInfo", lambda i: i["titleSource"] == "agent")
        title = info["title"]
        assert title and (await ed.command("acp.status"))["title"] == title
    # A sidecar whose agent dies at start still lists the cached title.
    async with open_editor(
        "vscode", workspace, state_dir, env={"ACP_DEMO_CRASH_AT": "initialize"}, wait_idle=False
    ) as ed:
        listed = await ed.command("acp.session.list")  # before the agent is started
        assert [(s["sessionId"], s["title"]) for s in listed["sessions"]] == [(sid, title)]
        with pytest.raises(JsonRpcException) as info_err:
            await ed.command("acp.session.load", sid)  # starts it: it dies
        assert "not running" in info_err.value.message
        await ed.wait_for("acp/status", lambda s: s["state"] == "error")
        listed = await ed.command("acp.session.list")  # and after it died
        assert [(s["sessionId"], s["title"]) for s in listed["sessions"]] == [(sid, title)]
    async with open_editor("vscode", workspace, state_dir) as ed:
        assert (await ed.command("acp.session.load", sid))["sessionId"] == sid
        status = await ed.command("acp.status")
        assert status["sessionId"] == sid and status["title"] == title
        assert not [u for u in ed.of("acp/sessionUpdate") if u["replay"]], "resume does not replay"
        _, end = await ed.prompt_and_wait("#chunks=2 continue")
        assert end["stopReason"] == "end_turn"


async def test_load_without_resume_replays_and_does_not_reexecute(
    workspace: Path, state_dir: Path, tmp_path: Path
) -> None:
    env = {"ACP_DEMO_CAPS": "no-resume"}
    async with open_editor("neovim", workspace, state_dir, env=env) as ed:
        sid = (await ed.command("acp.session.new"))["sessionId"]
        first, _ = await ed.prompt_and_wait("Where is the README?")
        _, end = await ed.prompt_and_wait("#edit change it")
        assert end["stopReason"] == "end_turn"
        original_text = ed.text_of(first["turnId"])
    readme_after_edit = (workspace / "README.md").read_text()
    async with open_editor("neovim", workspace, state_dir, env=env) as ed:
        mark = ed.mark()
        assert (await ed.command("acp.session.load", sid))["sessionId"] == sid
        # The agent may announce its commands live right after answering the load.
        replayed = [
            p
            for _, m, p in ed.notes[mark:]
            if m == "acp/sessionUpdate" and p["update"]["sessionUpdate"] != "available_commands_update"
        ]
        assert replayed and all(u["replay"] is True and u["turnId"] is None for u in replayed)
        text = "".join(
            u["update"]["content"]["text"]
            for u in replayed
            if u["update"]["sessionUpdate"] == "agent_message_chunk"
        )
        assert original_text in text
        assert not ed.message_requests and not ed.applied_edits, "replay never asks or writes again"
        assert (workspace / "README.md").read_text() == readme_after_edit
        assert not [t for t in ed.of("acp/turn")], "a replay is not a turn"
    # notify.replayUpdates false (the plugins): the history reaches the conversation document
    # only, not the editor one update at a time. A fresh sidecar state, the same agent's sessions.
    fresh = tmp_path / "fresh-state"
    fresh.mkdir()
    quiet = {"notify": {"replayUpdates": False}}
    agent_env = {**env, "ACP_DEMO_AGENT_STATE_DIR": str(state_dir / "demo-agent")}
    async with open_editor("neovim", workspace, fresh, env=agent_env, init_options=quiet) as ed:
        assert (await ed.command("acp.session.load", {"sessionId": sid, "agent": "demo"}))["sessionId"] == sid
        uri = (await ed.command("acp.session.transcript", sid))["uri"]
        document = Path(uri.removeprefix("file://"))
        for _ in range(100):
            if original_text in document.read_text():
                break
            await asyncio.sleep(0.05)
        assert original_text in document.read_text()
        assert not [u for u in ed.of("acp/sessionUpdate") if u["replay"]]
        _, end = await ed.prompt_and_wait("#chunks=2 live again")
        assert end["stopReason"] == "end_turn"
        assert [u for u in ed.of("acp/sessionUpdate") if not u["replay"]], "live updates still arrive"


async def test_helix_gets_no_replayed_update(workspace: Path, state_dir: Path) -> None:
    """Helix shows no custom notification: a replayed history goes to the document only."""
    env = {"ACP_DEMO_CAPS": "no-resume"}
    async with open_editor("helix", workspace, state_dir, env=env) as ed:
        sid = (await ed.command("acp.session.new"))["sessionId"]
        asked, _ = await ed.prompt_and_wait("#chunks=3 remembered")
        said = ed.text_of(asked["turnId"])
    async with open_editor("helix", workspace, state_dir, env=env) as ed:
        await ed.command("acp.session.load", sid)
        uri = (await ed.command("acp.session.transcript", sid))["uri"]
        assert said in Path(uri.removeprefix("file://")).read_text()
        assert not [u for u in ed.of("acp/sessionUpdate") if u["replay"]]


async def test_new_session_in_another_workspace_shares_nothing(
    workspace: Path, state_dir: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    async with open_editor("vscode", workspace, state_dir) as ed:
        first = (await ed.command("acp.session.new"))["sessionId"]
        await ed.prompt_and_wait("#title First workspace title")
        with pytest.raises(JsonRpcException):
            await ed.command("acp.session.new", {"cwd": "not/absolute"})
        assert (await ed.command("acp.status"))["sessionId"] == first, "a failed new keeps the active session"
        second = (await ed.command("acp.session.new", {"cwd": str(other)}))["sessionId"]
        status = await ed.command("acp.status")
        assert status["sessionId"] == second and status["title"] is None
        listed = await ed.command("acp.session.list", {"cwd": str(other)})
        assert [s["sessionId"] for s in listed["sessions"]] == [second]
        everything = await ed.command("acp.session.list")
        assert [s["sessionId"] for s in everything["sessions"]] == [first], (
            "only the workspace folder's sessions"
        )


async def _start_raw_sidecar(workspace: Path, state_dir: Path) -> asyncio.subprocess.Process:
    env = dict(os.environ, ACP_SIDECAR_STATE_DIR=str(state_dir))
    env.pop("ACP_SIDECAR_AGENT", None)
    proc = await asyncio.create_subprocess_exec(
        SIDECAR,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env=env,
        cwd=str(workspace),
    )
    body = (
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"processId":null,"rootUri":"'
        + workspace.as_uri().encode()
        + b'","capabilities":{}}}'
    )
    note = b'{"jsonrpc":"2.0","method":"initialized","params":{}}'
    # Agents start on first use: a new session starts this one.
    new = (
        b'{"jsonrpc":"2.0","id":"start-agent","method":"workspace/executeCommand",'
        b'"params":{"command":"acp.session.new","arguments":[{}]}}'
    )
    assert proc.stdin is not None
    for msg in (body, note, new):
        proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(msg) + msg)
    await proc.stdin.drain()
    return proc


async def _agent_pids(proc: asyncio.subprocess.Process) -> set[int]:
    async with asyncio.timeout(15):
        while True:
            kids = descendants(proc.pid)
            if kids:
                await asyncio.sleep(0.3)
                return descendants(proc.pid)
            await asyncio.sleep(0.05)


@pytest.mark.parametrize("how", ["stdin_eof", "sigterm", "sigkill"])
async def test_no_orphan_agent_when_the_editor_or_sidecar_dies(
    how: str, workspace: Path, state_dir: Path
) -> None:
    proc = await _start_raw_sidecar(workspace, state_dir)
    try:
        agents = await _agent_pids(proc)
        assert agents
        if how == "stdin_eof":
            assert proc.stdin is not None
            proc.stdin.close()
        elif how == "sigterm":
            proc.send_signal(signal.SIGTERM)
        else:
            proc.send_signal(signal.SIGKILL)
        async with asyncio.timeout(15):
            await proc.wait()
        left = await asyncio.to_thread(wait_gone, agents, 10)
        assert not left, f"agent processes left after {how}: {left}"
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def test_shutdown_then_exit_is_clean(workspace: Path, state_dir: Path) -> None:
    async with open_editor("neovim", workspace, state_dir) as ed:
        server = ed.client._server
        await ed.command("acp.session.new")
        admitted = await ed.command("acp.prompt", "#chunks=100 #slow=50 running at shutdown")
        await ed.wait_for("acp/turn", lambda t: t["turnId"] == admitted["turnId"] and t["state"] == "running")
        kids = descendants(server.pid)
        async with asyncio.timeout(15):
            await ed.client.shutdown_session()
        assert server.returncode == 0
        assert not wait_gone(kids, 5)
        assert len([t for t in ed.turn_events(admitted["turnId"]) if t["state"] == "ended"]) == 1
    assert sys.executable
    assert not [p for p in kids if alive(p)]


async def test_shutdown_closes_sessions_the_agent_offers_to_close(workspace: Path, state_dir: Path) -> None:
    log = state_dir / "frames.jsonl"
    tee = Path(__file__).resolve().parents[1] / "agents" / "tee_agent.py"
    agent = f"{sys.executable} {tee} {log} {sys.executable} -m sidecar.demo_agent"
    async with open_editor("vscode", workspace, state_dir, extra_args=["--agent", agent]) as ed:
        first = (await ed.command("acp.session.new"))["sessionId"]
        second = (await ed.command("acp.session.new"))["sessionId"]
        await ed.prompt_and_wait("#chunks=1 hi")
        async with asyncio.timeout(15):
            await ed.client.shutdown_session()
    import json

    frames = [json.loads(line) for line in log.read_text().splitlines()]
    closed = {f["params"]["sessionId"] for f in frames if f.get("method") == "session/close"}
    assert closed == {first, second}
    methods = [f.get("method") for f in frames if "method" in f]
    assert methods.index("session/close") > methods.index("session/prompt")
    async with open_editor("vscode", workspace, state_dir, env={"ACP_DEMO_CAPS": "no-close"}) as ed:
        await ed.command("acp.session.new")
        async with asyncio.timeout(15):
            await ed.client.shutdown_session()
        assert ed.client._server.returncode == 0, "no close offered: none sent, shutdown still clean"
