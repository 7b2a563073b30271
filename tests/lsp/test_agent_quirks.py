"""Quirks of production ACP agents (../shared/PRODUCTION-AGENTS.md §4), handled as a user would want.

Each test has the scripted agent (tests/agents/scripted_agent.py) behave like one production agent
does, over a real LSP pipe; every frame the sidecar sends the agent is read back from a tee
(tests/agents/tee_agent.py) and validated against the ACP schema.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from tests.lsp.editor import Editor, open_editor
from tests.lsp.test_agent_events import ended_progress
from tests.lsp.test_permissions_files import scripted
from tests.lsp.test_terminals import agent_session
from tests.lsp.test_terminals import error_of as terminal_error
from tests.lsp.test_terminals import request as terminal_request
from tests.lsp.test_transcripts import transcript_path, wait_file
from tests.schema_check import assert_valid

AGENTS = Path(__file__).resolve().parents[1] / "agents"
SCRIPTED = AGENTS / "scripted_agent.py"
TEE = AGENTS / "tee_agent.py"
PY = sys.executable

# What the sidecar sends the agent, by method: the schema type each must be.
REQUEST_TYPES = {
    "initialize": "InitializeRequest",
    "session/new": "NewSessionRequest",
    "session/prompt": "PromptRequest",
    "session/cancel": "CancelNotification",
    "session/close": "CloseSessionRequest",
    "session/set_title": "SetSessionTitleRequest",
}
VIBE_INFO = {"name": "@mistralai/mistral-vibe", "title": "Mistral Vibe", "version": "2.26.1"}


def sent_frames(frames: Path) -> list[dict[str, Any]]:
    """Every frame the sidecar sent the agent, each checked: a request or notification of its
    schema type (an extension method, `_` first, with object params), or a JSON-RPC answer."""
    sent = [json.loads(line) for line in frames.read_text().splitlines() if line.strip()]
    for frame in sent:
        assert frame.get("jsonrpc") == "2.0", frame
        method = frame.get("method")
        if method is not None and method.startswith("_"):
            assert isinstance(frame.get("params"), dict), frame
        elif method is not None:
            assert method in REQUEST_TYPES, f"unexpected {method}"
            assert_valid(REQUEST_TYPES[method], frame["params"])
        elif "error" in frame:
            assert_valid("Error", frame["error"])
        else:
            assert "result" in frame and "id" in frame, frame
    return sent


@asynccontextmanager
async def quirky(
    workspace: Path,
    state_dir: Path,
    tmp_path: Path,
    profile: str = "neovim",
    wait_idle: bool = True,
    tee: bool = True,
    **env: str,
) -> AsyncIterator[tuple[Editor, Path]]:
    """A sidecar with the scripted agent behind a tee (env: its SCRIPTED_* quirks); the frames'
    log is validated when it ends. `tee` False: no tee (it would outlive an agent that dies)."""
    frames = tmp_path / "frames.jsonl"
    log = tmp_path / "sidecar.log"
    agent = f"{PY} {TEE} {frames} {PY} {SCRIPTED}" if tee else f"{PY} {SCRIPTED}"
    args = ["--agent", agent, "--log-file", str(log), "--log-level", "INFO"]
    async with open_editor(
        profile, workspace, state_dir, env=env, extra_args=args, wait_idle=wait_idle
    ) as ed:
        yield ed, log
    if tee:
        sent_frames(frames)


def answers_to(frames: list[dict[str, Any]], requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The sidecar's answers, in order, to the agent's requests with these ids."""
    ids = {r["id"] for r in requests}
    return [f for f in frames if "method" not in f and f.get("id") in ids]


async def test_unknown_requests_get_32601_and_unknown_notifications_are_logged_once(
    workspace: Path, state_dir: Path, tmp_path: Path
) -> None:
    async with quirky(workspace, state_dir, tmp_path) as (ed, log):
        sid = (await ed.command("acp.session.new"))["sessionId"]
        mode_update = {
            "notify": "qwen/notify/session/mode-update",
            "params": {"sessionId": sid, "mode": "auto"},
        }
        steps = [
            {"chunk": "before "},
            # Qwen Code asks this mid-turn and waits for the answer before it goes on.
            {"request": "craft/drainMidTurnQueue", "params": {"sessionId": sid}},
            mode_update,
            {"notify": "_session/retrying", "params": {"sessionId": sid, "attempt": 1}},
            mode_update,
            mode_update,
            {"chunk": "after"},
        ]
        admitted, end = await ed.prompt_and_wait(json.dumps(steps))
        assert end["stopReason"] == "end_turn" and end["error"] is None
        text = ed.text_of(admitted["turnId"])
        assert text.startswith("before RESULT 1 ") and text.endswith("after"), text
        answer = json.loads(text.removeprefix("before RESULT 1 ").removesuffix("after"))
        assert answer == {"error": {"code": -32601, "message": "method not found: craft/drainMidTurnQueue"}}
        assert_valid("Error", answer["error"])
        # The session goes on as before.
        again = await scripted(ed, [{"request": "craft/drainMidTurnQueue", "params": {}}, mode_update])
        assert again[0]["error"]["code"] == -32601
    logged = log.read_text()
    assert logged.count("qwen/notify/session/mode-update") == 1, logged
    assert logged.count("_session/retrying") == 1, logged
    assert "ignored the agent's notification 'qwen/notify/session/mode-update'" in logged


async def test_a_chunk_outside_any_turn_is_kept_in_the_transcript(
    workspace: Path, state_dir: Path, tmp_path: Path
) -> None:
    # pi-acp sends an agent_message_chunk right after session/new; other agents say more there.
    after_new = [
        {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "\n"}},
        {
            "sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": "Welcome back, 3 skills loaded"},
        },
    ]
    async with quirky(workspace, state_dir, tmp_path, SCRIPTED_AFTER_NEW=json.dumps(after_new)) as (ed, _log):
        sid = (await ed.command("acp.session.new"))["sessionId"]
        outside = await ed.wait_for(
            "acp/sessionUpdate", lambda u: "Welcome back" in json.dumps(u["update"].get("content"))
        )
        assert outside["sessionId"] == sid and outside["turnId"] is None and outside["replay"] is False
        path = await transcript_path(ed, sid)
        text = await wait_file(path, lambda t: "Welcome back, 3 skills loaded" in t)
        admitted, _end = await ed.prompt_and_wait(json.dumps([{"chunk": "the answer"}]))
        text = await wait_file(path, lambda t: "_Turn ended" in t)
        # In the order it came: before the first prompt, under the agent's heading.
        body = text[text.index("-->\n") :]
        assert body.index("## Agent") < body.index("Welcome back") < body.index("## You"), text
        assert body.index("## You") < body.rindex("the answer"), text
        assert text.count("Welcome back") == 1
        # pi's "\n" alone starts no section of its own, and no blank lines before the words.
        assert body.count("## Agent") == 2 and "## Agent\n\nWelcome back" in body, text


async def test_a_session_info_update_without_a_title_keeps_the_title(
    workspace: Path, state_dir: Path, tmp_path: Path
) -> None:
    async with quirky(workspace, state_dir, tmp_path) as (ed, _log):
        sid = (await ed.command("acp.session.new"))["sessionId"]
        titled = {"update": {"sessionUpdate": "session_info_update", "title": "Fix auth timeout"}}
        await scripted(ed, [titled])
        info = await ed.wait_for("acp/sessionInfo", lambda i: i["title"] == "Fix auth timeout")
        assert info["titleSource"] == "agent"
        mark = ed.mark()
        untitled = [
            # pi-acp: `_meta` only, at each turn start and end.
            {
                "update": {
                    "sessionUpdate": "session_info_update",
                    "_meta": {"piAcp": {"running": True, "queueDepth": 0}},
                }
            },
            # Cline and fast-agent: `updatedAt` only.
            {"update": {"sessionUpdate": "session_info_update", "updatedAt": "2026-12-02T10:00:00Z"}},
            {
                "update": {
                    "sessionUpdate": "session_info_update",
                    "_meta": {"piAcp": {"running": False, "queueDepth": 0}},
                }
            },
        ]
        await scripted(ed, untitled)
        await ed.wait_for(
            "acp/sessionInfo", lambda i: i["sessionId"] == sid and i["updatedAt"] is not None, start=mark
        )
        status = await ed.command("acp.status")
        assert status["title"] == "Fix auth timeout", status
        infos = [p for _, m, p in ed.notes[mark:] if m == "acp/sessionInfo" and p["sessionId"] == sid]
        assert infos and all(i["title"] == "Fix auth timeout" for i in infos), infos
        listed = await ed.command("acp.session.list")
        assert [s["title"] for s in listed["sessions"] if s["sessionId"] == sid] == ["Fix auth timeout"]
        path = await transcript_path(ed, sid)
        header = await wait_file(path, lambda t: t.startswith("# Fix auth timeout\n"))
        assert "Untitled" not in header


async def test_auth_methods_null_or_empty_still_starts_the_agent(
    workspace: Path, state_dir: Path, tmp_path: Path
) -> None:
    for auth in ("null", "[]"):  # agentpool answers null (not even a list); Vibe, Agentao, Auggie []
        async with quirky(workspace, state_dir, tmp_path, SCRIPTED_AUTH=auth) as (ed, _log):
            await ed.command("acp.session.new")  # agents start on first use
            status = await ed.command("acp.status")
            assert status["agent"]["name"] == "scripted-agent" and status["state"] == "idle", status
            _admitted, end = await ed.prompt_and_wait(json.dumps([{"chunk": "fine"}]))
            assert end["stopReason"] == "end_turn"
            try:
                await ed.command("acp.authenticate", "login")
            except Exception as exc:  # pytest-lsp raises the LSP error as it came
                assert "unknown auth method 'login'; the agent offers: none" in str(exc), exc
            else:
                raise AssertionError("authenticate with no method offered succeeded")


async def test_an_empty_end_turn_says_no_answer(workspace: Path, state_dir: Path, tmp_path: Path) -> None:
    # Kimi with a broken provider: the model error is swallowed, the turn ends `end_turn` with nothing.
    async with quirky(workspace, state_dir, tmp_path) as (ed, _log):
        sid = (await ed.command("acp.session.new"))["sessionId"]
        silent, end = await ed.prompt_and_wait("[]")
        assert end["stopReason"] == "end_turn" and end["error"] is None
        assert end["answered"] is False, end
        answered, end = await ed.prompt_and_wait(json.dumps([{"chunk": "here it is"}]))
        assert end["answered"] is True, end
        # Only what the agent sends for the turn counts: a title alone is no answer.
        titled, end = await ed.prompt_and_wait(
            json.dumps([{"update": {"sessionUpdate": "session_info_update", "title": "Silent"}}])
        )
        assert end["answered"] is False, end
        for turn in (silent, answered, titled):
            queued, running = ed.turn_events(turn["turnId"])[:2]
            assert "answered" not in queued and "answered" not in running
        path = await transcript_path(ed, sid)
        text = await wait_file(path, lambda t: "here it is" in t and t.count("_No answer") == 2)
        ends = re.findall(r"^_(.*) · \d{4}-\d\d-\d\d \d\d:\d\d:\d\d_$", text, re.M)
        assert ends == [
            "No answer: the agent ended the turn without a reply (end_turn)",
            "Turn ended (end_turn)",
            "No answer: the agent ended the turn without a reply (end_turn)",
        ], text
        progress = await ended_progress(ed, "acp-turn", 3)
        assert sorted(p[-1].message for p in progress) == [
            "end_turn",
            "no answer (end_turn)",
            "no answer (end_turn)",
        ]


async def test_a_slow_start_shows_progress_and_commands_wait_for_it(
    workspace: Path, state_dir: Path, tmp_path: Path
) -> None:
    # OpenCode takes 5-20 s to answer initialize (Kilo 13-18 s): the editor shows it starting.
    async with quirky(workspace, state_dir, tmp_path, SCRIPTED_INIT_DELAY="3") as (ed, _log):
        await ed.command("acp.session.new")  # agents start on first use: this one waits for it
        progress = await ended_progress(ed, "acp-agent-start", 1)
        assert len(progress) == 1
        begin, *_reports, end = progress[0]
        assert (begin.kind, begin.title) == ("begin", "Starting agent")
        assert begin.message.endswith("…"), begin
        assert end.kind == "end" and end.message == "scripted-agent ready", end
        starting = [s for s in ed.of("acp/status") if s["state"] == "starting"]
        assert starting and "starting" in starting[0]["text"]
        _admitted, end_turn = await ed.prompt_and_wait(json.dumps([{"chunk": "hello"}]))
        assert end_turn["stopReason"] == "end_turn"


async def test_a_command_sent_while_the_agent_starts_waits_for_it(
    workspace: Path, state_dir: Path, tmp_path: Path
) -> None:
    async with quirky(workspace, state_dir, tmp_path, SCRIPTED_INIT_DELAY="3", wait_idle=False) as (ed, _log):
        new = asyncio.ensure_future(ed.command("acp.session.new"))  # starts the agent
        await ed.wait_for("acp/status", lambda s: s["state"] == "starting")
        status = await ed.command("acp.status")  # answered while the agent starts
        assert status["state"] == "starting", status
        sid = (await new)["sessionId"]
        assert sid == "scripted-1"
        progress = await ended_progress(ed, "acp-agent-start", 1)
        assert progress[0][-1].message == "scripted-agent ready"


async def test_an_agent_that_fails_to_start_ends_the_progress_with_why(
    workspace: Path, state_dir: Path, tmp_path: Path
) -> None:
    # It dies before it answers initialize (its authMethods are not JSON): the progress ends, and
    # the message that says why comes after that end (Helix shows both in one line).
    async with quirky(
        workspace, state_dir, tmp_path, wait_idle=False, tee=False, SCRIPTED_INIT_DELAY="2", SCRIPTED_AUTH="{"
    ) as (ed, _log):
        new = asyncio.ensure_future(ed.command("acp.session.new"))  # agents start on first use
        progress = await ended_progress(ed, "acp-agent-start", 1)
        assert progress[0][-1].message == "failed", progress
        try:
            await new
        except Exception as exc:  # the command that started it fails, saying why
            assert "exited (code 1)" in str(exc) and "JSONDecodeError" in str(exc), exc
        else:
            raise AssertionError("acp.session.new succeeded with an agent that died at start")


def renamed(ed: Editor, sid: str, start: int) -> Any:
    return ed.wait_for(
        "acp/sessionInfo",
        lambda i: i["sessionId"] == sid and i["renameState"] not in ("pending", None),
        start=start,
    )


async def test_mistral_vibe_is_renamed_through_its_own_method_after_the_standard_one(
    workspace: Path, state_dir: Path, tmp_path: Path
) -> None:
    vibe = {"SCRIPTED_INFO": json.dumps(VIBE_INFO), "SCRIPTED_VENDOR_TITLE": "1"}
    async with quirky(workspace, state_dir, tmp_path, **vibe) as (ed, _log):
        sid = (await ed.command("acp.session.new"))["sessionId"]
        for title in ("Fix auth timeout", "Second name"):
            mark = ed.mark()
            result = await ed.command("acp.session.rename", title)
            assert result == {"sessionId": sid, "requestedTitle": title}
            info = await renamed(ed, sid, mark)
            assert (info["title"], info["titleSource"], info["renameState"]) == (title, "user", "confirmed")
            # No rename prompt: no turn at all.
            assert not [n for n in ed.notes[mark:] if n[1] == "acp/turn"]
        status = await ed.wait_for("acp/status", lambda s: s["title"] == "Second name")
        assert status["agent"]["title"] == "Mistral Vibe"
        # Vibe's own session_info_update (after its answer) leaves the user's title as it is.
        _admitted, _end = await ed.prompt_and_wait(json.dumps([{"chunk": "ok"}]))
        listed = await ed.command("acp.session.list")
        entry = next(s for s in listed["sessions"] if s["sessionId"] == sid)
        assert (entry["title"], entry["titleSource"]) == ("Second name", "user")
    sent = sent_frames(tmp_path / "frames.jsonl")
    renames = [(f["method"], f["params"]) for f in sent if f.get("method", "").endswith("session/set_title")]
    # The standard method first, every time; the vendor's only after it is -32601.
    assert renames == [
        ("session/set_title", {"sessionId": sid, "title": "Fix auth timeout"}),
        ("_session/set_title", {"sessionId": sid, "title": "Fix auth timeout"}),
        ("session/set_title", {"sessionId": sid, "title": "Second name"}),
        ("_session/set_title", {"sessionId": sid, "title": "Second name"}),
    ]
    assert not [f for f in sent if f.get("method") == "session/prompt" and "_meta" in f["params"]]


async def test_a_vibe_without_the_vendor_method_and_other_agents_are_renamed_by_prompt(
    workspace: Path, state_dir: Path, tmp_path: Path
) -> None:
    cases = [
        # An older Vibe: both methods are -32601, so the rename prompt it is (nothing lost).
        ({"SCRIPTED_INFO": json.dumps(VIBE_INFO)}, ["session/set_title", "_session/set_title"]),
        # Any other agent: neither method is tried (it offers no `sessionCapabilities.title`).
        ({"SCRIPTED_VENDOR_TITLE": "1"}, []),
    ]
    for index, (env, tried) in enumerate(cases):
        run = tmp_path / f"run-{index}"
        run.mkdir()
        async with quirky(workspace, state_dir / str(index), run, **env) as (ed, _log):
            sid = (await ed.command("acp.session.new"))["sessionId"]
            mark = ed.mark()
            await ed.command("acp.session.rename", "Fix auth timeout")
            turn = await ed.wait_for("acp/turn", lambda t: t["state"] == "ended", start=mark)
            info = await renamed(ed, sid, mark)
            # The scripted agent does not answer a rename prompt: keep_local keeps the title.
            assert (info["title"], info["renameState"]) == ("Fix auth timeout", "unconfirmed"), info
            assert turn["sessionId"] == sid
        sent = sent_frames(run / "frames.jsonl")
        methods = [f["method"] for f in sent if f.get("method", "").endswith("session/set_title")]
        assert methods == tried
        assert [f for f in sent if f.get("method") == "session/prompt" and "_meta" in f["params"]]


async def test_agentpool_probes_and_writes_through_the_clients_terminal(
    workspace: Path, state_dir: Path, tmp_path: Path
) -> None:
    # agentpool runs its probes and its file writes through terminal/*, whatever the client said:
    # the sidecar offers terminals (validate_frames checks `terminal: true`), so they simply work,
    # confined to the session's directories; a terminal method that does not exist is -32601.
    async with agent_session(workspace, state_dir, tmp_path) as agent:
        probes = {
            "uname -s": "Linux\n",
            "test -e .claude/skills && echo yes || echo no": "no\n",
            "printf 'written by the agent\\n' > notes.txt && echo done": "done\n",
        }
        for script, expected in probes.items():
            tid = await agent.create("sh", "-c", script)
            status = await agent.call("terminal/wait_for_exit", tid)
            assert status == {"exitCode": 0, "signal": None}, (script, status)
            assert (await agent.call("terminal/output", tid))["output"] == expected
            await agent.call("terminal/release", tid)
        assert (workspace / "notes.txt").read_text() == "written by the agent\n"
        answers = await agent.run(
            terminal_request("terminal/resize", agent.sid, terminalId="term-1", cols=80),
            terminal_request("terminal/create", agent.sid, command="sh", args=["-c", "true"], cwd="/"),
        )
        assert answers[0]["error"] == {"code": -32601, "message": "method not found: terminal/resize"}
        assert "outside the session" in terminal_error(answers[1])
