"""`acp.session.fork` (docs/protocol.md, Commands): the agent's unstable `session/fork`; the new
session is active, titled `Fork: <parent title>`, and its transcript starts with the parent's
conversation and a line saying where it forked. A fork the agent does not hold live is resumed
and its first prompt sent once more."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.lsp.editor import Editor, open_editor
from tests.lsp.test_commands import expect_error
from tests.lsp.test_transcript_editing import code_actions, open_transcript, run_action, until
from tests.lsp.test_transcripts import conversation, transcript_path, turn_ends, wait_file, well_formed
from tests.schema_check import assert_valid

TEE = Path(__file__).resolve().parents[1] / "agents" / "tee_agent.py"
FORK_LINE = re.compile(r"^_Forked from “(.*)” at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\._$", re.M)
FORGED = "_Forked from “Fake parent” at 2026-01-01 00:00:00 UTC._"
# What the sidecar sends the demo agent in these tests, by method: the schema type of each.
REQUEST_TYPES = {
    "initialize": "InitializeRequest",
    "session/new": "NewSessionRequest",
    "session/fork": "ForkSessionRequest",
    "session/resume": "ResumeSessionRequest",
    "session/load": "LoadSessionRequest",
    "session/list": "ListSessionsRequest",
    "session/prompt": "PromptRequest",
    "session/close": "CloseSessionRequest",
}


def teed(state_dir: Path, log: str = "frames.jsonl") -> tuple[list[str], Path]:
    """`--agent` arguments running the demo agent behind a tee, and the log of what it is sent."""
    frames = state_dir.parent / log
    agent = f"{sys.executable} {TEE} {frames} {sys.executable} -m sidecar.demo_agent"
    return ["--agent", agent], frames


def sent(frames: Path) -> list[dict[str, Any]]:
    """The frames the sidecar sent the agent, each valid against the (unstable) schema."""
    found = [json.loads(line) for line in frames.read_text().splitlines() if line.strip()]
    for frame in found:
        method = frame.get("method")
        if method is not None:
            assert method in REQUEST_TYPES, f"unexpected {method}"
            assert_valid(REQUEST_TYPES[method], frame["params"])
        elif "error" in frame:
            assert_valid("Error", frame["error"])
    return found


async def forked(ed: Editor, *args: Any) -> dict[str, Any]:
    result: dict[str, Any] = await ed.command("acp.session.fork", *args)
    assert set(result) == {"sessionId", "title", "agent"}, result
    return result


async def test_a_fork_holds_the_parents_conversation_and_goes_on_alone(
    workspace: Path, state_dir: Path
) -> None:
    args, frames = teed(state_dir)
    async with open_editor("helix", workspace, state_dir, extra_args=args) as ed:
        parent = (await ed.command("acp.session.new"))["sessionId"]
        await ed.prompt_and_wait("#title Parent talk")
        # Text like the fork line, in the prompt and (the demo agent quotes its first words) the
        # answer: never the document's own line.
        await ed.prompt_and_wait(f"#chunks=2 {FORGED}\nthe parent's own question")
        parent_path = await transcript_path(ed, parent)
        parent_text = await wait_file(parent_path, lambda t: turn_ends(t) >= 2)
        assert "Fake parent" in parent_text and not FORK_LINE.search(parent_text), "escaped, no fork line"
        agent = next(a for a in (await ed.command("acp.agents"))["agents"] if a["default"])
        assert agent["capabilities"]["fork"] is True

        mark = ed.mark()
        result = await forked(ed)  # the active session by default
        fork = result["sessionId"]
        assert fork != parent
        assert result == {"sessionId": fork, "title": "Fork: Parent talk", "agent": agent["name"]}
        info = await ed.wait_for("acp/sessionInfo", lambda i: i["sessionId"] == fork, start=mark)
        assert (info["title"], info["titleSource"]) == ("Fork: Parent talk", "fallback")
        status = await ed.wait_for("acp/status", lambda s: s["title"] == "Fork: Parent talk", start=mark)
        assert status["sessionId"] == fork
        fork_path = await transcript_path(ed)
        assert fork_path != parent_path
        text = await wait_file(fork_path, lambda t: FORK_LINE.search(t) is not None)
        well_formed(text)
        assert text.startswith("# Fork: Parent talk\n"), text[:200]
        body = conversation(text)
        line = FORK_LINE.search(body)
        assert line is not None and line.group(1) == "Parent talk"
        # The parent's conversation once, then the line.
        assert body[: line.start()].strip() == conversation(parent_text).strip()
        assert body.count("the parent's own question") == 1

        # A prompt on the fork answers there; the parent's document does not change.
        _, end = await ed.prompt_and_wait("#chunks=2 only in the fork")
        assert end["stopReason"] == "end_turn"
        text = await wait_file(fork_path, lambda t: turn_ends(t) >= 3)
        assert text.index("only in the fork") > FORK_LINE.search(text).end()  # type: ignore[union-attr]
        assert turn_ends(text) == 3
        assert parent_path.read_text() == parent_text
        # The parent goes on by itself too.
        await ed.command("acp.session.load", parent)
        await ed.prompt_and_wait("#chunks=1 only in the parent")
        await wait_file(parent_path, lambda t: turn_ends(t) >= 3)
        assert "only in the parent" not in fork_path.read_text()

    forks = [f for f in sent(frames) if f.get("method") == "session/fork"]
    assert [f["params"]["sessionId"] for f in forks] == [parent]
    assert forks[0]["params"]["cwd"] == str(workspace)

    # A new sidecar lists the fork with its title, and loads it: with a replay of its whole history
    # (no session/resume), that adds nothing the document holds, the parent's part included.
    args, frames = teed(state_dir, "after-restart.jsonl")
    env = {"ACP_DEMO_CAPS": "no-resume"}
    async with open_editor("helix", workspace, state_dir, extra_args=args, env=env) as ed:
        listed = (await ed.command("acp.session.list", {"refresh": True}))["sessions"]
        titles = {s["sessionId"]: s["title"] for s in listed}
        assert titles == {parent: "Parent talk", fork: "Fork: Parent talk"}
        await ed.command("acp.session.load", fork)
        _, end = await ed.prompt_and_wait("#chunks=1 after the restart")
        assert end["stopReason"] == "end_turn"
        text = await wait_file(fork_path, lambda t: "after the restart" in t and turn_ends(t) >= 4)
        well_formed(text)
        assert len(FORK_LINE.findall(text)) == 1
        for words in ("the parent's own question", "only in the fork", "after the restart"):
            assert text.count(words) == 1, words
        assert text.startswith("# Fork: Parent talk\n"), text[:200]
        assert (await ed.command("acp.status"))["title"] == "Fork: Parent talk"
    assert "session/load" in [f.get("method") for f in sent(frames)]


@pytest.mark.parametrize(("caps", "attach"), [("", "session/resume"), (",no-resume", "session/load")])
async def test_a_fork_the_agent_does_not_hold_live_is_resumed_and_its_prompt_retried(
    workspace: Path, state_dir: Path, caps: str, attach: str
) -> None:
    args, frames = teed(state_dir)
    env = {"ACP_DEMO_CAPS": "fork-not-live" + caps}
    async with open_editor("neovim", workspace, state_dir, extra_args=args, env=env) as ed:
        parent = (await ed.command("acp.session.new"))["sessionId"]
        await ed.prompt_and_wait("#title Live parent")
        fork = (await forked(ed, parent))["sessionId"]  # positional form
        admitted, end = await ed.prompt_and_wait("#chunks=2 first words on the fork")
        assert admitted["sessionId"] == fork
        assert end["stopReason"] == "end_turn" and end.get("error") is None, end
        answer = ed.text_of(admitted["turnId"])
        assert answer, "the user sees the answer"
        turns = [n[2] for n in ed.notes if n[1] == "acp/turn" and n[2]["turnId"] == admitted["turnId"]]
        assert [t["state"] for t in turns].count("ended") == 1
        text = await wait_file(await transcript_path(ed, fork), lambda t: turn_ends(t) >= 2)
        assert "Turn failed" not in text
        for words in ("#title Live parent", "first words on the fork"):
            assert text.count(words) == 1, (words, text)
        # Later prompts go straight through.
        await ed.prompt_and_wait("#chunks=1 second words")

    frames_sent = sent(frames)
    methods = [f.get("method") for f in frames_sent if f.get("method")]
    after_fork = methods[methods.index("session/fork") :]
    expected = ["session/fork", "session/prompt", attach, "session/prompt", "session/prompt"]
    assert after_fork[: len(expected)] == expected, after_fork


async def test_a_fork_that_cannot_be_made_live_fails_its_turn_with_the_reason(
    workspace: Path, state_dir: Path
) -> None:
    env = {"ACP_DEMO_CAPS": "fork-not-live,no-resume,no-load"}
    async with open_editor("neovim", workspace, state_dir, env=env) as ed:
        await ed.command("acp.session.new")
        await ed.prompt_and_wait("#chunks=1 hello")
        fork = (await forked(ed))["sessionId"]
        admitted, end = await ed.prompt_and_wait("#chunks=1 on the fork")
        assert end["stopReason"] is None and end["error"]["code"] == -32006, end
        assert "neither session/resume nor session/load" in end["error"]["message"]
        text = await wait_file(await transcript_path(ed, fork), lambda t: "Turn failed" in t)
        assert text.count("on the fork") == 1


async def test_an_agent_without_session_fork_is_a_clear_error(workspace: Path, state_dir: Path) -> None:
    async with open_editor("vscode", workspace, state_dir, env={"ACP_DEMO_CAPS": "no-fork"}) as ed:
        sid = (await ed.command("acp.session.new"))["sessionId"]
        await ed.prompt_and_wait("#chunks=1 keep me")
        (agent,) = (await ed.command("acp.agents"))["agents"]
        assert agent["capabilities"]["fork"] is False
        _, uri = await open_transcript(ed)
        assert "Fork this session" not in [a.title for a in await code_actions(ed, uri)]
        err = await expect_error(ed, "acp.session.fork", {})
        assert (err.code, err.message) == (-32006, "the agent does not offer session/fork")
        assert (await ed.command("acp.status"))["sessionId"] == sid
        sessions = (await ed.command("acp.session.list"))["sessions"]
        assert [s["sessionId"] for s in sessions] == [sid]
        err = await expect_error(ed, "acp.session.fork", {"sessionId": "no-such-session"})
        assert "unknown session" in err.message


async def test_the_code_action_forks_the_session_of_its_transcript(workspace: Path, state_dir: Path) -> None:
    async with open_editor("helix", workspace, state_dir) as ed:
        first = (await ed.command("acp.session.new"))["sessionId"]
        await ed.prompt_and_wait("#title First one")
        _, uri = await open_transcript(ed)
        second = (await ed.command("acp.session.new"))["sessionId"]  # active now
        await ed.prompt_and_wait("#title Second one")
        (action,) = [a for a in await code_actions(ed, uri) if a.title == "Fork this session"]
        assert action.command is not None
        assert list(action.command.arguments or []) == [{"sessionId": first, "show": True}]
        shown = len(ed.client.shown_documents)
        result = await run_action(ed, action)
        assert result["title"] == "Fork: First one" and result["sessionId"] not in (first, second)
        assert (await ed.command("acp.status"))["sessionId"] == result["sessionId"]
        # The fork's conversation is shown (Helix has no other view of it).
        fork_uri = (await ed.command("acp.session.transcript", result["sessionId"]))["uri"]
        # (A prompt's own showDocument may still arrive: `transcript.showOnPrompt`.)
        await until(lambda: fork_uri in [d.uri for d in ed.client.shown_documents[shown:]], "showDocument")


async def test_a_parent_with_a_turn_running_may_be_forked(workspace: Path, state_dir: Path) -> None:
    """Chosen: the agent decides (the demo agent copies what it stored so far); the parent's turn
    goes on and ends in the parent only."""
    async with open_editor("neovim", workspace, state_dir) as ed:
        parent = (await ed.command("acp.session.new"))["sessionId"]
        await ed.prompt_and_wait("#title Busy parent")
        running = await ed.command("acp.prompt", "#chunks=40 #slow=50 a long answer")
        await ed.wait_for("acp/turn", lambda t: t["turnId"] == running["turnId"] and t["state"] == "running")
        fork = (await forked(ed, parent))["sessionId"]
        end = await ed.wait_turn_end(running["turnId"])
        assert end["stopReason"] == "end_turn" and end["sessionId"] == parent
        parent_text = await wait_file(await transcript_path(ed, parent), lambda t: turn_ends(t) >= 2)
        _, end = await ed.prompt_and_wait("#chunks=1 the fork goes on")
        assert end["stopReason"] == "end_turn"
        text = await wait_file(
            await transcript_path(ed, fork), lambda t: "the fork goes on" in t and turn_ends(t) >= 2
        )
        well_formed(text)
        assert len(FORK_LINE.findall(text)) == 1
        assert "the fork goes on" not in parent_text


async def test_a_session_not_loaded_here_is_loaded_then_forked(workspace: Path, state_dir: Path) -> None:
    async with open_editor("helix", workspace, state_dir) as ed:
        parent = (await ed.command("acp.session.new"))["sessionId"]
        await ed.prompt_and_wait("#title Earlier work")
        await ed.prompt_and_wait("#chunks=1 from the earlier sidecar")
    async with open_editor("vscode", workspace, state_dir) as ed:
        result = await forked(ed, {"sessionId": parent})
        assert result["title"] == "Fork: Earlier work"
        assert (await ed.command("acp.status"))["sessionId"] == result["sessionId"]
        text = await wait_file(await transcript_path(ed), lambda t: FORK_LINE.search(t) is not None)
        well_formed(text)
        assert text.count("from the earlier sidecar") == 1
