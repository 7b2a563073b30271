"""End to end: real headless Neovim + the plugin + the sidecar + the demo agent.

Each test runs one or two Lua scenarios (tests/nvim/scenarios/) in
``nvim --headless --clean -l`` and asserts on the JSON they write.
"""

from __future__ import annotations

import re
import sys
from typing import Any

import pytest
from nvim_harness import NvimEnv, NvimRun, wait_gone

pytestmark = [pytest.mark.nvim, pytest.mark.editors]

CONTROL = re.compile(r"[\x00-\x1f\x7f\x80-\x9f]")


def ok(run: NvimRun) -> dict[str, Any]:
    """The scenario ran to the end without a failed wait or an error."""
    assert not run.timed_out, run.explain()
    assert run.result.get("done") is True, run.explain()
    assert not run.result.get("errors"), run.explain()
    assert run.returncode == 0, run.explain()
    return run.result


def expected_statusline(status: dict[str, Any]) -> str:
    """What the plugin's default statusline format shows for a status."""
    title = status.get("title") or ""
    if len(title) > 40:
        title = title[:39] + "…"
    spinner = "⠋ " if status["state"] in ("running", "cancelling", "waiting_permission") else ""
    empty = "untitled" if status.get("sessionId") else "no session"
    return f"ACP: {spinner}{title or empty} [{status['state']}]"


def check_statusline(sl: dict[str, Any], status: dict[str, Any]) -> str:
    want = expected_statusline(status)
    for key in ("expr_format", "expr_plain"):
        got = sl[key]
        assert "error" not in got, got
        assert got["str"] == want, (key, got, want)
        assert got["width"] == len(want), (key, got)
    assert sl["concat"]["str"].startswith("[") and want in sl["concat"]["str"], sl["concat"]
    assert sl["concat"]["str"].endswith("end"), sl["concat"]
    assert sl["option_ok"], sl.get("option_error")
    assert sl["text"] == want
    return want


def test_prompt_streams_into_the_chat_and_quit_leaves_no_process(nvim_env: NvimEnv) -> None:
    run = nvim_env.run("prompt")
    res = ok(run)

    # The turn ran to completion.
    assert res["turn_ended"]["stopReason"] == "end_turn", res["turn_ended"]

    # The agent's streamed text is in the chat: the session's transcript document.
    transcript = res["transcript"]
    joined = "\n".join(transcript)
    agent_text = res["agent_text"].strip()
    assert agent_text, "no agent_message_chunk arrived"
    first_line = agent_text.splitlines()[0].strip()
    assert first_line[:60] in joined, (first_line, transcript)
    # The prompt is shown once, under a "You" header, before the agent's answer.
    assert "## You" in transcript
    assert transcript.count("    " + res["prompt"]) == 1, transcript  # as typed, an indented block
    assert transcript.index("    " + res["prompt"]) < transcript.index("## Agent")
    assert "## Agent" in transcript
    name = res["transcript_name"]
    assert f"/transcripts/acp-sidecar-demo/{res['session_id']}" in name and name.endswith(".md"), name
    assert res["transcript_filetype"] == "markdown"
    assert res["transcript_attached_clients"] == 1, "the sidecar keeps the document live"
    assert res["transcript_window_opened"]

    # The statusline shows the automatic title (from the first prompt's first words).
    status = res["status"]
    assert status["sessionId"] == res["session_id"]
    assert status["title"] and "Hello" in status["title"], status
    want = check_statusline(res["statusline"], status)
    assert status["title"][:39] in want

    # A prompt on a line range (document + range as context) runs too.
    assert res["range_turn"]["stopReason"] == "end_turn", res["range_turn"]
    assert res["range_turn"]["sessionId"] == res["session_id"]

    # Quitting Neovim leaves no sidecar or agent process.
    procs = res["processes"]
    assert procs, "no sidecar process was found under Neovim"
    assert any("acp-sidecar" in (p.get("cmdline") or "") for p in procs), procs
    pids = {p: st for p, st in run.seen.items()}
    for p in procs:
        pids.setdefault(p["pid"], None)
    left = wait_gone(pids, timeout=10)
    assert not left, f"still running after Neovim quit: {left} {procs}"


def test_rename_through_set_title(nvim_env: NvimEnv) -> None:
    # The demo agent offers session/set_title: no prompt, nothing pending, confirmed at once.
    done = ok(nvim_env.run("rename", {"ACP_TEST_TITLE": "Set at once"}))
    states = [i.get("renameState") for i in done["rename_infos"]]
    assert "pending" not in states and states[-1] == "confirmed", done["rename_infos"]
    assert done["status"]["title"] == "Set at once"
    assert "Set at once" in check_statusline(done["statusline"], done["status"])


def test_rename_then_sessions_after_restart(nvim_env: NvimEnv) -> None:
    # A rename prompt (what agents without session/set_title get): pending, then confirmed.
    first = ok(nvim_env.run("rename", {"ACP_TEST_TITLE": "New name", "ACP_DEMO_CAPS": "no-set-title"}))
    sid = first["session_id"]
    assert sid
    states = [i.get("renameState") for i in first["rename_infos"]]
    assert "pending" in states, first["rename_infos"]
    final = [
        i for i in first["rename_infos"] if i.get("renameState") in ("confirmed", "changed", "unconfirmed")
    ]
    assert final and final[-1]["renameState"] == "confirmed", first["rename_infos"]
    assert final[-1]["title"] == "New name"
    assert first["status"]["title"] == "New name"
    want = check_statusline(first["statusline"], first["status"])
    assert "New name" in want
    # Nothing of the first Neovim is left before the second starts.
    assert not wait_gone(nvim_env.runs[-1].seen, timeout=10)

    second = ok(nvim_env.run("sessions", {"ACP_TEST_SESSION": sid, "ACP_TEST_TITLE": "New name"}))
    picker = second["picker"]
    assert picker, "vim.ui.select was not called for the sessions"
    items = picker["items"]
    entry = next((e for e in items if e.get("sessionId") == sid), None)
    assert entry is not None, items
    assert entry["title"] == "New name"
    assert entry["titleSource"] in ("user", "agent"), entry
    line = picker["formatted"][items.index(entry)]
    # Title, cwd relative to ~ (here absolute: the workspace is not under ~), time; the active one marked.
    assert line.startswith("  New name — ") and str(nvim_env.ws) in line, line
    assert re.search(r" — \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$", line), line
    # Loading it makes it the active session, title intact.
    assert second["status"]["sessionId"] == sid
    assert second["status"]["title"] == "New name"
    check_statusline(second["statusline"], second["status"])
    # The chat opened on it, with its history: the sidecar's transcript document, attached.
    chat = "\n".join(second["chat_lines"])
    name = second["chat_name"]
    assert f"/transcripts/acp-sidecar-demo/{sid}" in name and name.endswith(".md"), name
    assert "## You" in chat and "Prepare the rename test" in chat and "## Agent" in chat, chat
    tail = second["chat_lines"][-3:]
    assert tail[-2].startswith("<!-- acp-sidecar: write your prompt") and tail[-1] == "", tail
    assert second["chat_attached"] == 1


def test_title_with_percent_and_escape_does_not_break_statusline(nvim_env: NvimEnv) -> None:
    res = ok(nvim_env.run("escape"))
    status = res["status"]
    title = status["title"]
    # The sidecar sanitizes; the plugin sanitizes again: nothing of the escape reaches the UI.
    assert "\x1b" not in title and not CONTROL.search(title), repr(title)
    assert "100%" in title and "red" in title, repr(title)
    want = check_statusline(res["statusline"], status)
    shown = res["statusline"]["expr_format"]["str"]
    assert "100% " in shown and "%%" not in shown and "\x1b" not in shown, repr(shown)
    assert not CONTROL.search(shown), repr(shown)
    assert shown == want


def test_cancel_stops_running_turn(nvim_env: NvimEnv) -> None:
    res = ok(nvim_env.run("cancel"))
    ended = res["turn_ended"]
    assert ended["stopReason"] == "cancelled", ended
    turn_id = ended["turnId"]
    ends = [t for t in res["turns"] if t.get("turnId") == turn_id and t.get("state") == "ended"]
    assert len(ends) == 1, res["turns"]
    assert res["cancel_to_end_s"] < 10, res["cancel_to_end_s"]
    assert res["status"]["state"] == "idle"
    assert "running" in res["states"] or "cancelling" in res["states"], res["states"]
    assert any("cancelled" in line for line in res["transcript"]), res["transcript"]


def test_new_session_mode_and_model(nvim_env: NvimEnv) -> None:
    res = ok(nvim_env.run("mode"))
    first = res["first_status"]
    assert first["sessionId"]
    assert res["after_mode"]["mode"] != first["mode"], (first, res["after_mode"])
    assert res["after_model"]["model"] != first["model"], (first, res["after_model"])
    # The agent reports its model option: :AcpModel completes its ids.
    assert {"demo-fast", "demo-smart"} <= set(res["model_completion"]), res["model_completion"]
    assert "_Model: Demo Smart_" in res["transcript"], res["transcript"]


def test_chat_context_pickers_completion_notification_and_keymaps(nvim_env: NvimEnv) -> None:
    res = ok(nvim_env.run("chat_logic"))
    # :1,2AcpChat: the lines, named, in the input area; the cursor in the chat.
    assert res["input"] == "From `README.md`, lines 1-2:\n```markdown\n# Practice repo\n\n```", res["input"]
    assert res["in_chat"] is True
    # The pickers list the agent's choices from acp/status, the current one marked.
    pickers = {p["kind"]: p["formatted"] for p in res["pickers"]}
    assert pickers["acp_sidecar.mode"] == ["● Ask (ask)", "  Code (code)", "  Plan (plan)"], pickers
    assert pickers["acp_sidecar.model"] == ["● Demo Fast (demo-fast)", "  Demo Smart (demo-smart)"], pickers
    assert res["mode_completion"] == ["ask", "code", "plan"], res["mode_completion"]
    assert res["model_completion"] == ["demo-fast", "demo-smart"], res["model_completion"]
    # The chat was hidden when the answer finished: a notification says so.
    assert res["visible_after_close"] is False
    assert any("the agent answered" in n and ":AcpChat" in n for n in res["notes"]), res["notes"]
    chat = "\n".join(res["chat_lines"])
    assert "From `README.md`, lines 1-2:" in chat and "## Agent" in chat, chat
    # <Plug> mappings, the opt-in default keys, a user's own mapping left alone.
    assert res["plug_chat"] == "<Cmd>AcpChat<CR>" and res["plug_context"] == ":AcpChat<CR>"
    assert res["default_chat"] == "<Plug>(AcpChat)"
    assert res["user_sessions"] == "<Cmd>echo 'mine'<CR>"
    # Fork and delete have default keys; logout only its <Plug> mapping.
    assert res["default_fork"] == "<Plug>(AcpFork)" and res["plug_logout"] == "<Cmd>AcpLogout<CR>", res


def test_new_session_with_either_of_two_agents(nvim_env: NvimEnv) -> None:
    """Issue 24: `:AcpNew` completes the configured agents, `:AcpNew second` starts a session of
    the second one, `:AcpNew` alone asks with a picker; the session picker names each agent."""
    store = str(nvim_env.base / "second-store")
    env = {"ACP_TEST_PYTHON": sys.executable, "ACP_TEST_SECOND_STORE": store}
    res = ok(nvim_env.run("agents", env))
    assert {"demo", "second"} <= set(res["completion"]), res["completion"]
    second, demo = res["second_status"], res["demo_status"]
    assert (second["agent"]["configured"], second["agent"]["name"]) == ("second", "second-agent")
    assert demo["agent"]["configured"] == "demo" and demo["sessionId"] != second["sessionId"]
    # With several agents configured, the statusline says whose session it is.
    assert res["second_statusline"] == "ACP: second · untitled [idle]", res["second_statusline"]
    pickers = {p["kind"]: p for p in res["pickers"]}
    agents = pickers["acp_sidecar.agent"]
    assert [i["name"] for i in agents["items"]] == ["demo", "second"], agents
    # demo (the default, ●) not started yet; second running, with its title.
    assert agents["formatted"] == ["● demo [stopped]", "  second — second-agent (demo agent) [idle]"]
    sessions = pickers["acp_sidecar.session"]
    assert [i["agent"] for i in sessions["items"]] == ["demo", "second"], sessions
    assert "· demo —" in sessions["formatted"][0] and "· second —" in sessions["formatted"][1], sessions


def test_delete_fork_and_logout_from_the_session_picker(nvim_env: NvimEnv) -> None:
    """Issue 25: the session picker's second picker acts on the chosen session. Delete asks
    first, then the session is gone from the next picker, its chat buffer closed and its
    transcript removed. :AcpFork and "Fork session" call acp.session.fork; :AcpLogout shows
    the sidecar's error when the agent offers no logout."""
    res = ok(nvim_env.run("delete"))
    a, b = res["a"], res["b"]
    pickers = res["pickers"]
    actions = [p for p in pickers if p["kind"] == "acp_sidecar.session_action"]
    assert actions[0]["formatted"] == ["Open", "Fork session", "Rename…", "Delete session…"], actions
    assert actions[0]["prompt"] == "Session (untitled)", actions
    (confirm,) = [p for p in pickers if p["kind"] == "acp_sidecar.confirm"]
    assert confirm["items"] == ["Delete", "Cancel"], confirm
    assert confirm["prompt"].startswith("Delete session (untitled)?"), confirm
    calls = res["calls"]
    (delete,) = [c for c in calls if c["command"] == "acp.session.delete"]
    assert delete["arg"] == {"sessionId": a} and delete.get("error") is None, delete
    assert any(n == "acp-sidecar: deleted session (untitled)" for n in res["notes"]), res["notes"]
    # Before: both listed; after: B only. A's transcript file is gone (its buffer was closed).
    lists = [p for p in pickers if p["kind"] == "acp_sidecar.session"]
    assert {i["sessionId"] for i in lists[0]["items"]} == {a, b}, lists[0]
    assert [i["sessionId"] for i in lists[1]["items"]] == [b], lists[1]
    assert (res["a_file_before"], res["a_file_after"]) == (1, 0), res
    # Fork: by id from the command, then from the picker; the sidecar's answer is shown as is.
    forks = [c for c in calls if c["command"] == "acp.session.fork"]
    assert [f["arg"] for f in forks] == [{"sessionId": b}, {"sessionId": b}], forks
    for f in forks:
        err = f.get("error")
        assert err is None or any(err in n for n in res["notes"]), (f, res["notes"])
    if all(f.get("error") is None for f in forks):  # a sidecar with acp.session.fork
        assert any(n.startswith("acp-sidecar: forked: Fork: ") for n in res["notes"]), res["notes"]
        assert res["after_fork"]["sessionId"] not in (a, b), res["after_fork"]
    (logout,) = [c for c in calls if c["command"] == "acp.logout"]
    assert logout["arg"] == {"agent": "demo"}, logout
    assert "the agent does not offer logout" in logout["error"], logout
    assert any("acp.logout: " in n and "does not offer logout" in n for n in res["notes"]), res["notes"]
    assert res["completion"] == [b], res["completion"]
    assert "demo" in res["logout_completion"], res["logout_completion"]


def test_logout_from_neovim(nvim_env: NvimEnv) -> None:
    """Issue 25: `:AcpLogout` logs out of an agent that offers it; what needs a login then asks."""
    res = ok(nvim_env.run("logout", {"ACP_DEMO_CAPS": "auth"}))
    assert res["login"] == "ok", res["login"]
    assert res["logged_out"] == "acp-sidecar: logged out of the agent", res["notes"]
    assert "acp.authenticate" in res["refused"], res["refused"]
