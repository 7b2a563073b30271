"""End to end with production agents: the real sidecar over a real LSP pipe, with gemini-cli,
codex-acp, claude-agent-acp, Qwen Code and the old claude-code-acp from npm
(tools/provision/agents.py) answering from the mock model.

Every test also shuts the sidecar down as an editor does and checks that no process it started is
left (harness.Setup.editor). Each test starts its agent once: starting them is the slow part.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import secrets
from collections.abc import Callable
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from tests.lsp.editor import Editor, applied_text
from tests.production.harness import (
    ALLOW_TITLE,
    ASKING_MODE,
    ASKS_FOR_READS,
    ASKS_PERMISSION,
    CANCELLED_REPLY_IN_NEXT_TURN,
    EDITS_WITH_DIFF,
    LATE_REPLY_AFTER_CANCEL,
    LISTED_TITLE,
    LISTS_SESSIONS,
    LISTS_WITHOUT_TITLES,
    LOAD_REFUSAL,
    LOADS_AFTER_RESTART,
    NEVER_ASKS,
    REJECT_ABORTS_TURN,
    REJECT_OPTION,
    REJECTED_TEXT,
    RENAMES_BY_METHOD,
    REVIEW_NOT_SETTLED,
    STALE_REPLY_AFTER_CANCEL,
    TEXT_AFTER_TOOL_PREFIX,
    TITLES_AFTER_THE_TURN,
    TITLES_BY_UPDATE,
    TOOL_CALLS_NEVER_END,
    TOOL_CALLS_WITHOUT_KIND,
    WHOLE_MESSAGES,
    Setup,
)
from tests.production.mock_script import (
    EDIT_FAILED_REPLY,
    EDIT_REPLY,
    SLOW_CHUNK,
    TEXT_REPLY,
    read_reply,
)

pytestmark = pytest.mark.production


def ended_once_each(ed: Editor) -> None:
    """Exactly one `ended` per admitted turn."""
    turns: dict[str, int] = {}
    for event in ed.of("acp/turn"):
        turns.setdefault(event["turnId"], 0)
        turns[event["turnId"]] += event["state"] == "ended"
    assert turns and all(count == 1 for count in turns.values()), turns


def tool_calls(ed: Editor, turn_id: str) -> list[dict[str, Any]]:
    """Each tool call of a turn, merged with its updates (the last value of each field wins)."""
    merged: dict[str, dict[str, Any]] = {}
    for note in ed.of("acp/sessionUpdate"):
        update = note["update"]
        if note["turnId"] == turn_id and update.get("sessionUpdate") in ("tool_call", "tool_call_update"):
            merged.setdefault(update["toolCallId"], {}).update(
                {k: v for k, v in update.items() if v is not None}
            )
    return list(merged.values())


async def test_text_streams_and_a_slow_turn_cancels(setup: Setup) -> None:
    async with setup.editor() as ed:
        status: dict[str, Any] = await ed.command("acp.status")
        assert status["state"] == "idle", status
        created = await ed.command("acp.session.new")
        first, end = await ed.prompt_and_wait("Say hello [mock:text]")
        assert first["sessionId"] == created["sessionId"]
        assert end["stopReason"] == "end_turn", end
        assert ed.text_of(first["turnId"]) == TEXT_REPLY

        slow = await ed.command("acp.prompt", {"text": "Take your time [mock:slow]"})
        if setup.name in WHOLE_MESSAGES:
            # Nothing reaches the editor while the model streams: cancel once the mock streams.
            assert await asyncio.to_thread(setup.mock.script.slow_started.wait, 30)
        else:
            await ed.wait_for(
                "acp/sessionUpdate",
                lambda u: u["turnId"] == slow["turnId"] and SLOW_CHUNK.strip() in json.dumps(u["update"]),
            )
        assert (await ed.command("acp.cancel")) == {"cancelled": True}
        end = await ed.wait_turn_end(slow["turnId"])
        assert end["stopReason"] == "cancelled", end
        if setup.name in WHOLE_MESSAGES:
            # What it had of the message when cancelled comes whole, if anything.
            assert set(ed.text_of(slow["turnId"]).split()) <= {SLOW_CHUNK.strip()}
        else:
            assert set(ed.text_of(slow["turnId"]).split()) == {SLOW_CHUNK.strip()}

        after, end = await ed.prompt_and_wait("Now quickly [mock:text]")
        assert end["stopReason"] == "end_turn", end
        if setup.name in LATE_REPLY_AFTER_CANCEL:
            # The agent answers this prompt at once with nothing, and each reply then comes one
            # prompt late (two together now and then, catching up, depending on timing): the
            # sidecar must deliver every reply, whole and in order, within the turns that carry
            # them; at most the last prompt's reply is still owed.
            texts = [ed.text_of(after["turnId"])]
            assert texts == [""]
            while "".join(texts) != TEXT_REPLY * len(texts) and len(texts) < 4:
                more, end = await ed.prompt_and_wait(f"Prompt {len(texts)} [mock:text]")
                assert end["stopReason"] == "end_turn", end
                texts.append(ed.text_of(more["turnId"]))
            assert all(text.replace(TEXT_REPLY, "") == "" for text in texts), texts
            delivered = "".join(texts).count(TEXT_REPLY)
            assert delivered in (len(texts) - 1, len(texts)), texts
        elif setup.name in STALE_REPLY_AFTER_CANCEL:
            # The agent leaves the rest of the cancelled reply unread: this turn shows it (whole)
            # instead of the reply the model gave to this prompt, which comes with the next one.
            assert set(ed.text_of(after["turnId"]).split()) == {SLOW_CHUNK.strip()}
            more, end = await ed.prompt_and_wait("Once more [mock:text]")
            assert end["stopReason"] == "end_turn", end
            assert ed.text_of(more["turnId"]) == TEXT_REPLY
            assert any("Now quickly" in r.prompt for r in setup.mock.of("text")), setup.mock.describe()
        elif setup.name in CANCELLED_REPLY_IN_NEXT_TURN:
            # The whole cancelled reply, then this prompt's own, both in this turn.
            text = ed.text_of(after["turnId"])
            assert text.endswith(TEXT_REPLY), text
            assert set(text.removesuffix(TEXT_REPLY).split()) <= {SLOW_CHUNK.strip()}, text
        else:
            assert ed.text_of(after["turnId"]) == TEXT_REPLY
        # Kilo appends its <environment_details> to the prompt.
        assert "[mock:text]" in setup.mock.of("text")[-1].prompt
        ended_once_each(ed)


async def test_read_tool_reads_the_workspace_file(setup: Setup) -> None:
    token = f"TOKEN-{secrets.token_hex(4)}"
    notes = setup.workspace / "notes.md"
    notes.write_text(f"# Notes\n\nThe secret word is {token}.\n")
    setup.mock.script.read_path = notes
    async with setup.editor() as ed:
        await ed.command("acp.session.new")
        if setup.name in ASKS_FOR_READS:
            ed.permission_choice = ALLOW_TITLE[setup.name]
        if setup.name == "codex":
            # codex reads with `cat`, which its read-only sandbox runs under bubblewrap (not installed).
            await ed.command("acp.session.setMode", {"modeId": "full-access"})
        admitted, end = await ed.prompt_and_wait("What do the notes say? [mock:read]")
        assert end["stopReason"] == "end_turn", end
        prefix = TEXT_AFTER_TOOL_PREFIX.get(setup.name, "")
        assert ed.text_of(admitted["turnId"]) == prefix + read_reply([token]), setup.mock.describe()
        calls = tool_calls(ed, admitted["turnId"])
        kind = None if setup.name in TOOL_CALLS_WITHOUT_KIND else "read"
        # An agent whose completed update fails in it leaves the call as it started, without a status.
        status = None if setup.name in TOOL_CALLS_NEVER_END else "completed"
        assert [(c.get("kind"), c.get("status")) for c in calls] == [(kind, status)], calls
        (answered,) = [r for r in setup.mock.of("read") if r.tool_results]
        assert token in answered.tool_results[0]
        ended_once_each(ed)


async def ask_before_edits(ed: Editor, name: str) -> None:
    """The mode in which the agent asks before an edit, where its first mode does not ask."""
    if name in ASKING_MODE:
        await ed.command("acp.session.setMode", {"modeId": ASKING_MODE[name]})


async def respond(ed: Editor, pending: dict[str, Any], kind: str, **extra: Any) -> None:
    """Answer a pending permission with its option of `kind` (allow_once, reject_once)."""
    option = next(o for o in pending["options"] if o["kind"] == kind)
    answer = {"requestId": pending["requestId"], "optionId": option["optionId"], **extra}
    assert await ed.command("acp.permission.respond", answer) == {}


async def allow_the_read(ed: Editor, name: str, start: int) -> int:
    """Agents that ask before reads too (the scripted edit reads the file first): allow the read
    where it waits, from `start`, and return the mark after it was settled (else `start`)."""
    if name not in ASKS_FOR_READS:
        return start
    read = await ed.wait_for("acp/permission", lambda p: p["state"] == "pending", timeout=60, start=start)
    allow = next(o for o in read["options"] if o["kind"] == "allow_once")
    await ed.command(
        "acp.permission.respond", {"requestId": read["requestId"], "optionId": allow["optionId"]}
    )
    await ed.wait_for(
        "acp/permission",
        lambda p: p["requestId"] == read["requestId"] and p["state"] == "resolved",
        start=start,
    )
    return ed.mark()


def permission_arguments(actions: Any, option_id: str) -> list[Any]:
    """The arguments of the one `acp.permission.respond` code action that picks `option_id`."""
    found: list[list[Any]] = [
        list(a.command.arguments or [])
        for a in actions or []
        if a.command
        and a.command.command == "acp.permission.respond"
        and (a.command.arguments or [{}])[0].get("optionId") == option_id
    ]
    assert len(found) == 1, actions
    return found[0]


@pytest.mark.parametrize("agent_name", ASKS_PERMISSION)
async def test_permission_by_dialog_then_by_code_action(setup: Setup) -> None:
    target = setup.workspace / "edit_me.py"
    target.write_text("value = 1\nname = 'unchanged'\n")
    script = setup.mock.script
    script.edit_path, script.edit_old, script.edit_new = target, "value = 1", "value = 2"
    async with setup.editor() as ed:
        await ed.command("acp.session.new")
        await ask_before_edits(ed, setup.name)
        # Allowed in the dialog (window/showMessageRequest).
        ed.permission_choice = ALLOW_TITLE[setup.name]
        allowed, end = await ed.prompt_and_wait("Change the value [mock:edit]")
        assert end["stopReason"] == "end_turn", end
        # One dialog for the edit, after one for the read where the agent asks before reads too.
        *reads, dialog = ed.message_requests
        assert len(reads) == (setup.name in ASKS_FOR_READS), ed.message_requests
        assert ALLOW_TITLE[setup.name] in [a.title for a in dialog.actions or []]
        prefix = TEXT_AFTER_TOOL_PREFIX.get(setup.name, "")
        assert ed.text_of(allowed["turnId"]) == prefix + EDIT_REPLY, setup.mock.describe()
        assert target.read_text() == "value = 2\nname = 'unchanged'\n"

        # Rejected with a code action while the dialog is still open.
        script.edit_old, script.edit_new = "value = 2", "value = 3"
        ed.hold_message_requests = True
        uri = ed.open(target)
        mark = ed.mark()
        rejected = await ed.command("acp.prompt", {"text": "Change it again [mock:edit]"})
        mark = await allow_the_read(ed, setup.name, mark)
        await ed.wait_for("acp/status", lambda s: s["state"] == "waiting_permission", timeout=60, start=mark)
        actions = await ed.code_actions(uri)
        # The agent's diff (a whole file for gemini-cli, only the changed part for claude-agent-acp;
        # gemini-cli sends it only with the permission request) is applied to the file for the
        # preview, never written over it. codex-acp asks to run a command here: no diff.
        if setup.name in EDITS_WITH_DIFF:
            apply = next(a for a in actions if a.title.startswith("Apply agent edit: "))
            assert apply.edit is not None, apply
            assert applied_text(apply.edit) == "value = 3\nname = 'unchanged'\n", apply.edit
        reject = permission_arguments(actions, REJECT_OPTION[setup.name])
        assert await ed.command("acp.permission.respond", *reject) == {}
        ed.hold_message_requests = False
        end = await ed.wait_turn_end(rejected["turnId"], timeout=60)
        assert target.read_text() == "value = 2\nname = 'unchanged'\n"
        if setup.name in REJECT_ABORTS_TURN:
            assert end["stopReason"] == REJECT_ABORTS_TURN[setup.name], end
            assert ed.text_of(rejected["turnId"]) == REJECTED_TEXT.get(setup.name, "")
        else:
            assert end["stopReason"] == "end_turn", end
            assert ed.text_of(rejected["turnId"]) == prefix + EDIT_FAILED_REPLY, setup.mock.describe()
        ended_once_each(ed)


@pytest.mark.parametrize("agent_name", NEVER_ASKS)
async def test_an_edit_lands_without_a_permission_where_the_agent_never_asks(setup: Setup) -> None:
    target = setup.workspace / "edit_me.py"
    target.write_text("value = 1\nname = 'unchanged'\n")
    script = setup.mock.script
    script.edit_path, script.edit_old, script.edit_new = target, "value = 1", "value = 2"
    async with setup.editor() as ed:
        await ed.command("acp.session.new")
        admitted, end = await ed.prompt_and_wait("Change the value [mock:edit]")
        assert end["stopReason"] == "end_turn", end
        assert ed.text_of(admitted["turnId"]) == EDIT_REPLY, setup.mock.describe()
        assert not ed.of("acp/permission") and not ed.message_requests
        assert target.read_text() == "value = 2\nname = 'unchanged'\n"
        ended_once_each(ed)


@pytest.mark.parametrize("agent_name", [n for n in ASKS_PERMISSION if n not in REVIEW_NOT_SETTLED])
async def test_an_edit_changed_in_review_lands_as_the_user_left_it(setup: Setup) -> None:
    """Allowed with the user's version of the file (`edits`): gemini-cli writes through the sidecar,
    which writes the user's text instead; claude-agent-acp writes the disk itself, and the sidecar
    puts the user's text in place of exactly its edit once the tool call completes."""
    target = setup.workspace / "edit_me.py"
    target.write_text("value = 1\nname = 'unchanged'\n")
    script = setup.mock.script
    script.edit_path, script.edit_old, script.edit_new = target, "value = 1", "value = 2"
    mine = "value = 42  # the user's choice\nname = 'unchanged'\n"
    async with setup.editor() as ed:
        await ed.command("acp.session.new")
        await ask_before_edits(ed, setup.name)
        ed.hold_message_requests = True
        mark = ed.mark()
        admitted = await ed.command("acp.prompt", {"text": "Change the value [mock:edit]"})
        mark = await allow_the_read(ed, setup.name, mark)
        pending = await ed.wait_for(
            "acp/permission", lambda p: p["state"] == "pending", timeout=60, start=mark
        )
        diffs = [c for c in pending["toolCall"].get("content") or [] if c.get("type") == "diff"]

        if setup.name not in EDITS_WITH_DIFF:
            # codex-acp asks to run a command that edits the file: nothing to review as a diff.
            assert not diffs, pending
            await respond(ed, pending, "reject_once")
            await ed.wait_turn_end(admitted["turnId"], timeout=60)
            assert target.read_text() == "value = 1\nname = 'unchanged'\n"
            return
        assert [d["path"] for d in diffs] == [str(target)], diffs
        await respond(ed, pending, "allow_once", edits=[{"path": str(target), "text": mine}])
        ed.hold_message_requests = False
        end = await ed.wait_turn_end(admitted["turnId"], timeout=60)
        assert end["stopReason"] == "end_turn", end
        async with asyncio.timeout(10):
            while target.read_text() != mine:
                await asyncio.sleep(0.05)
        ended_once_each(ed)


async def listed_entry(
    ed: Editor, session_id: str, wanted: Callable[[dict[str, Any]], bool], timeout: float = 30
) -> dict[str, Any]:
    """The session's entry of `acp.session.list` with refresh, once `wanted` holds for it."""
    async with asyncio.timeout(timeout):
        while True:
            listed = await ed.command("acp.session.list", {"refresh": True})
            entry: dict[str, Any] = next(s for s in listed["sessions"] if s["sessionId"] == session_id)
            if wanted(entry):
                return entry
            await asyncio.sleep(0.2)


async def test_session_list_and_rename(setup: Setup) -> None:
    async with setup.editor() as ed:
        sid = (await ed.command("acp.session.new"))["sessionId"]
        await ed.prompt_and_wait("First words of the session [mock:text]")
        if setup.name in TITLES_AFTER_THE_TURN:
            # Its own title, from a model request it makes once the turn has ended.
            await ed.wait_for(
                "acp/sessionInfo",
                lambda i: (
                    i["sessionId"] == sid
                    and (i["title"], i["titleSource"]) == (TITLES_AFTER_THE_TURN[setup.name], "agent")
                ),
                timeout=60,
            )
        if setup.name in LISTS_SESSIONS:
            # The agent lists the session under its first prompt, which outranks the local fallback;
            # claude-agent-acp lists a session only once it has written it, which takes a moment.
            # An agent's own session_info_update title outranks the listed one; a session listed
            # without a title keeps the local fallback.
            titles_itself = setup.name in TITLES_BY_UPDATE or setup.name in TITLES_AFTER_THE_TURN
            source = "agent" if titles_itself else "list"
            source = "fallback" if setup.name in LISTS_WITHOUT_TITLES else source
            entry = await listed_entry(ed, sid, lambda e: e["titleSource"] == source)
            if setup.name in LISTED_TITLE:
                assert entry["title"].startswith(LISTED_TITLE[setup.name]), entry
            else:
                assert entry["title"] == "First words of the session [mock:text]", entry
        else:
            with pytest.raises(JsonRpcException, match="does not offer session/list"):
                await ed.command("acp.session.list", {"refresh": True})
            listed = await ed.command("acp.session.list")
            entry = next(s for s in listed["sessions"] if s["sessionId"] == sid)
            assert entry["titleSource"] == "fallback", entry

        mark = ed.mark()
        renamed = await ed.command("acp.session.rename", {"title": "Production rename"})
        assert renamed == {"sessionId": sid, "requestedTitle": "Production rename"}
        done = await ed.wait_for(
            "acp/sessionInfo", lambda i: i["renameState"] not in ("pending", None), start=mark, timeout=60
        )
        infos = [p for _, m, p in ed.notes[mark:] if m == "acp/sessionInfo" and p["sessionId"] == sid]
        # pi-acp sends session_info_update without a title at each turn's start and end: each is
        # shown again with the rename still pending.
        states = [
            state for state, _ in itertools.groupby(i["renameState"] for i in infos if i["renameState"])
        ]
        asked = any("Production rename" in r.prompt for r in setup.mock.requests)
        if setup.name in RENAMES_BY_METHOD:
            # Renamed by the agent's own method, which it confirms: no rename prompt, no turn.
            assert states == ["confirmed"], infos
            assert not asked, setup.mock.describe()
            assert not [n for n in ed.notes[mark:] if n[1] == "acp/turn"]
        else:
            assert states == ["pending", "unconfirmed"], infos
            # None of these agents confirms a rename prompt: the title is kept locally as the user's.
            assert asked, setup.mock.describe()
        assert (done["title"], done["titleSource"]) == ("Production rename", "user")
        relisted = await ed.command("acp.session.list", {"refresh": setup.name in LISTS_SESSIONS})
        entry = next(s for s in relisted["sessions"] if s["sessionId"] == sid)
        assert (entry["title"], entry["titleSource"], entry["pendingTitle"]) == (
            "Production rename",
            "user",
            None,
        )
        assert (await ed.command("acp.status"))["title"] == "Production rename"
        ended_once_each(ed)


async def test_load_after_a_sidecar_restart(setup: Setup) -> None:
    async with setup.editor() as ed:
        sid = (await ed.command("acp.session.new"))["sessionId"]
        await ed.prompt_and_wait("Remember the word kumquat [mock:text]")
    if setup.name not in LOADS_AFTER_RESTART:
        # gemini-cli offers session/load, but a new process finds the earlier session only at times
        # ("No previous sessions found for this project" otherwise). An agent home without any
        # session makes that failure certain: it must reach the editor as a clear error.
        setup.home = setup.home.with_name("fresh-agent-home")
        setup.home.mkdir()
    async with setup.editor() as ed:
        if setup.name not in LOADS_AFTER_RESTART:
            with pytest.raises(JsonRpcException) as failed:
                await ed.command("acp.session.load", {"sessionId": sid}, timeout=60)
            assert "the agent answered" in failed.value.message, failed.value
            assert LOAD_REFUSAL[setup.name] in json.dumps(failed.value.data), failed.value.data
            await ed.command("acp.session.new")
            admitted, end = await ed.prompt_and_wait("Still working [mock:text]")
            assert ed.text_of(admitted["turnId"]) == TEXT_REPLY
            return
        assert (await ed.command("acp.session.load", {"sessionId": sid}, timeout=60)) == {"sessionId": sid}
        admitted, end = await ed.prompt_and_wait("What was the word? [mock:text]")
        assert admitted["sessionId"] == sid
        assert end["stopReason"] == "end_turn", end
        assert ed.text_of(admitted["turnId"]) == TEXT_REPLY
        # The agent sent the model the conversation it had before the restart.
        assert "kumquat" in json.dumps(setup.mock.of("text")[-1].body)
        ended_once_each(ed)


# What docs/protocol.md says acp/status shows (issue 13, items 8 to 10), with each agent's own data.
AGENT_INFO = {
    "gemini": ("gemini-cli", "Gemini CLI"),
    "codex": ("codex-acp", "Codex"),
    "claude": ("@zed-industries/claude-agent-acp", "Claude Agent"),
    "qwen": ("qwen-code", "Qwen Code"),
    "claude-code": ("@zed-industries/claude-code-acp", "Claude Code"),
    "pi": ("pi-acp", "pi ACP adapter"),
    "opencode": ("OpenCode", None),
    "kilo": ("Kilo", None),
    "copilot": ("Copilot", "Copilot"),
    "vibe": ("@mistralai/mistral-vibe", "Mistral Vibe"),
    "agentao": ("agentao", "Agentao"),
    "droid": ("@factory/cli", "Factory Droid"),
    "cline": ("cline", None),
    "kimi": ("Kimi Code CLI", None),
    "fast-agent": ("fast-agent-acp", None),
    "claude-code-py": ("claude-code-acp-py", "Claude Code (Python)"),
    "hermes": ("hermes-agent", None),
    "openhands": ("OpenHands CLI ACP Agent", None),
}
FIRST_MODE = {
    "gemini": {"id": "default", "name": "Default"},
    "codex": {"id": "read-only", "name": "Read Only"},
    "claude": {"id": "default", "name": "Default"},
    "qwen": {"id": "plan", "name": "Plan"},
    "claude-code": {"id": "default", "name": "Default"},
    "pi": {"id": "off", "name": "Thinking: off"},  # pi-acp offers its thinking levels as modes
    "opencode": None,  # no `modes` at all
    "kilo": None,
    "copilot": {"id": "https://agentclientprotocol.com/protocol/session-modes#agent", "name": "Agent"},
    "vibe": {"id": "ask", "name": "Ask"},
    "agentao": {"id": "read-only", "name": "Read-only"},
    "droid": {"id": "normal", "name": "Auto (Off)"},
    "cline": {"id": "plan", "name": "Plan"},
    "kimi": {"id": "default", "name": "Default"},
    "fast-agent": {"id": "agent", "name": "Agent"},
    "claude-code-py": {"id": "default", "name": "Default"},
    "hermes": {"id": "default", "name": "Default"},
    "openhands": {"id": "always-ask", "name": "Always Ask Mode"},
}
# The context window each agent reports in usage_update (gemini sends none).
CONTEXT_SIZE = {
    "gemini": None,
    "codex": 258400,
    "claude": 200000,
    "qwen": 1000000,
    "claude-code": None,
    "pi": 128000,
    "opencode": None,
    "kilo": None,
    "copilot": 64000,
    "vibe": 200000,
    "agentao": None,
    "droid": None,
    "cline": None,
    "kimi": None,
    "fast-agent": None,
    "claude-code-py": None,
    "hermes": 256000,
    "openhands": None,
}
# qwen-code with Gemini auth offers no model choice (`availableModels: []`, only the current one).
# copilot, fast-agent, OpenHands: no `models` at all
NO_MODEL_CHOICE = frozenset({"qwen", "copilot", "fast-agent", "openhands"})


async def test_status_names_the_agent_and_lists_its_choices(setup: Setup) -> None:
    async with setup.editor() as ed:
        await ed.command("acp.session.new")
        await ed.prompt_and_wait("Hello [mock:text]")
        status: dict[str, Any] = await ed.command("acp.status")
        assert (status["agent"]["name"], status["agent"]["title"]) == AGENT_INFO[setup.name], status
        assert (status["modes"] or [None])[0] == FIRST_MODE[setup.name], status
        assert bool(status["models"]) == (setup.name not in NO_MODEL_CHOICE), status
        assert all(set(m) == {"id", "name"} for m in status["models"] or []), status
        size = CONTEXT_SIZE[setup.name]
        if size is None:
            assert status["usage"] is None, status
        else:
            # claude-agent-acp sends `"used": null` (the schema requires a number): still shown,
            # without a context share in the text.
            assert status["usage"]["size"] == size, status
            assert ("context" in status["text"]) == (status["usage"]["used"] is not None), status


@pytest.mark.parametrize("agent_name", ["gemini", "claude"])
async def test_an_allowed_edit_is_reverted_per_hunk_after_it_landed(setup: Setup) -> None:
    """Issue 26 with production agents: gemini-cli writes through the sidecar (`fs/write_text_file`),
    claude-agent-acp writes the disk itself (its completed tool call's diff tells the text before).
    Either way the landed edit is one hunk, shown as a diagnostic, and reverting it puts back
    exactly the old line."""
    target = setup.workspace / "edit_me.py"
    before = "value = 1\nname = 'unchanged'\n"
    target.write_text(before)
    script = setup.mock.script
    script.edit_path, script.edit_old, script.edit_new = target, "value = 1", "value = 2"
    async with setup.editor() as ed:
        await ed.command("acp.session.new")
        await ask_before_edits(ed, setup.name)
        ed.permission_choice = ALLOW_TITLE[setup.name]
        _, end = await ed.prompt_and_wait("Change the value [mock:edit]")
        assert end["stopReason"] == "end_turn", end
        assert target.read_text() == "value = 2\nname = 'unchanged'\n"
        uri = target.as_uri()
        async with asyncio.timeout(30):
            while not (listed := await ed.command("acp.changes.list", {"uri": uri}))["files"]:
                await asyncio.sleep(0.1)
        (changed,) = listed["files"]
        (hunk,) = changed["hunks"]
        assert (hunk["oldText"], hunk["newText"]) == ("value = 1\n", "value = 2\n"), hunk
        result = await ed.command("acp.changes.revert", {"hunkId": hunk["hunkId"]})
        assert result["reverted"] == [hunk["hunkId"]] and not result["refused"], result
        async with asyncio.timeout(10):
            while target.read_text() != before:
                await asyncio.sleep(0.05)
        assert (await ed.command("acp.changes.list", {"uri": uri}))["files"] == []
        ended_once_each(ed)
