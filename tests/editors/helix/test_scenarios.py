"""Scenarios on a real Helix screen, set up as editor-configs/helix/README.md says.

What a user sees: the message line (last row), the status line with its
progress spinner, popups. What Helix does not show (the agent's answer, which
travels as `acp/sessionUpdate`) is checked in Helix's own LSP log.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.editors.helix.harness import SIDECAR_SERVER, HelixEditor
from tests.editors.helix.lsp_log import LspLog

ACTIONS = ["Allow", "Always allow", "Reject"]
PERMISSION_POPUP = r"The agent asks permission: Run `echo hello from the demo agent`"


def did_open(log: LspLog, relpath: str) -> dict[str, object] | None:
    for message in log.of(SIDECAR_SERVER, "textDocument/didOpen", to_server=True):
        document = message.params["textDocument"]
        if document["uri"].endswith("/" + relpath):
            return dict(document)
    return None


def start_session(helix: HelixEditor) -> None:
    helix.workspace_command("acp.session.new")
    helix.wait_screen(r"ACP session", region="message")


def test_readme_setup_attaches_sidecar_to_python_and_markdown(helix: HelixEditor) -> None:
    helix.start("main.py")
    helix.wait_agent_ready()
    python = helix.wait_log(lambda log: did_open(log, "main.py"), "didOpen main.py to the sidecar")
    assert python["languageId"] == "python"

    helix.command("open notes.md")
    helix.wait_screen(r"notes\.md", region="status")
    markdown = helix.wait_log(lambda log: did_open(log, "notes.md"), "didOpen notes.md to the sidecar")
    assert markdown["languageId"] == "markdown"
    # One sidecar serves both languages of the workspace.
    assert len(helix.log().of(SIDECAR_SERVER, "initialize", to_server=True)) == 1

    # The sidecar answers on screen: acp.status says the agent's state in the message line.
    helix.workspace_command("acp.status")
    helix.wait_screen(r"^demo · no session · idle$", region="message")  # agents start on first use

    # Helix runs with Debian sid's loader and libc; the sidecar it starts with the system's.
    [sidecar] = helix.processes("bin/acp-sidecar")
    maps = Path(f"/proc/{sidecar}/maps").read_text()
    assert "/lib/x86_64-linux-gnu/libc.so.6" in maps and str(helix.hx.parent) not in maps

    # README step 4: `hx --health python` finds acp-sidecar under the user's config.
    servers = helix.health("python")
    assert list(servers)[-1] == SIDECAR_SERVER and servers[SIDECAR_SERVER], servers


def test_prompt_shows_progress_until_the_turn_ends(helix: HelixEditor) -> None:
    helix.start("main.py")
    helix.wait_agent_ready()
    helix.workspace_command("acp.prompt", '"Where is the README? #slow=150"')
    # Running: the spinner turns in the status line, the progress text is in the message line.
    helix.wait_until(helix.spinner_visible, "the progress spinner in the status line")
    helix.wait_screen(r"^acp-sidecar: .*(running|Plan:|Read)", region="message")
    # The first turn titled the session: once it ended, the title is what the message line says.
    helix.wait_turns_ended(1)
    helix.wait_screen(r"^ACP session: Where is the README\?$", region="message")
    assert "README.md" in helix.log().session_text(SIDECAR_SERVER)

    # A turn that leaves the title as it is ends with its stop reason, under the session's title.
    helix.workspace_command("acp.prompt", '"#chunks=20 #slow=100 And the tests?"')
    helix.wait_screen(r"^acp-sidecar: Where is the README\? ⋅ running$", region="message")
    helix.wait_turns_ended(2)
    helix.wait_screen(r"^acp-sidecar: Where is the README\? ⋅ end_turn$", region="message")


def test_a_failing_turn_says_why_last(helix: HelixEditor) -> None:
    helix.start("main.py")
    helix.wait_agent_ready()
    helix.workspace_command("acp.prompt", '"#error Break it"')
    helix.wait_turns_ended(1)
    # After the progress's end ("failed: ...") and the new session's title: the failure stays.
    helix.wait_screen(r"^ACP turn failed: the agent answered: demo failure$", region="message")
    assert (
        helix.log().show_messages(SIDECAR_SERVER)[-1] == "ACP turn failed: the agent answered: demo failure"
    )
    # A command error is said in the message line too (Helix itself only logs it).
    helix.workspace_command("acp.session.load", '"no-such-session"')
    helix.wait_screen(r"^acp\.session\.load: unknown session: 'no-such-session'$", region="message")
    # An unquoted word is refused by Helix itself: it parses each argument as JSON.
    helix.workspace_command("acp.prompt", "Hello")
    helix.wait_screen(
        r"^'lsp-workspace-command': failed to parse arguments: expected value", region="message"
    )


def rename_new_session(helix: HelixEditor, title: str) -> None:
    """A new session renamed to `title`; returns once the sidecar said the title to Helix."""
    helix.start("main.py")
    helix.wait_agent_ready()
    start_session(helix)
    helix.workspace_command("acp.session.rename", f'"{title}"')
    helix.wait_log(
        lambda log: f"ACP session: {title}" in log.show_messages(SIDECAR_SERVER),
        "the new title as window/showMessage",
    )


def test_rename_shows_the_new_title(helix: HelixEditor) -> None:
    # The demo agent offers session/set_title: the rename is no turn, the title shows at once.
    rename_new_session(helix, "Fix auth timeout")
    helix.wait_screen(r"Fix auth timeout", region="message")
    # The message line reports the renamed session when asked.
    helix.workspace_command("acp.status")
    helix.wait_screen(r"Fix auth timeout", region="message")
    # Two quoted strings are two arguments to Helix: the shortcut joins them.
    helix.workspace_command("acp.session.rename", '"Fix"', '"login"')
    helix.wait_screen(r"^ACP session: Fix login$", region="message")


def test_after_a_rename_the_new_title_is_what_the_message_line_shows(tmp_path: Path) -> None:
    # A rename prompt (an agent without session/set_title) is a turn with its own progress.
    helix = HelixEditor(tmp_path, env={"ACP_DEMO_CAPS": "no-set-title"})
    try:
        rename_by_prompt_then_check(helix)
    finally:
        helix.close()


def rename_by_prompt_then_check(helix: HelixEditor) -> None:
    rename_new_session(helix, "Fix auth timeout")
    helix.wait_turns_ended(1)  # the rename turn, whose progress began under the old title
    helix.wait_screen(r"^ACP session: Fix auth timeout$", region="message")
    # The title was said after the turn's progress ended, so nothing overwrites it.
    log = helix.log()
    told = [i for i, m in enumerate(log.messages) if m.method == "window/showMessage"]
    ended = [
        i
        for i, m in enumerate(log.messages)
        if m.method == "$/progress" and m.params["value"]["kind"] == "end"
    ]
    assert told[-1] > ended[-1]
    assert log.messages[told[-1]].params["message"] == "ACP session: Fix auth timeout"


def ask_permission(helix: HelixEditor) -> None:
    helix.start("main.py")
    helix.wait_agent_ready()
    helix.workspace_command("acp.prompt", '"Run the demo command #permission"')
    helix.wait_screen(PERMISSION_POPUP)
    helix.wait_screen(r"\(run_command\) · pending$", region="message")


@pytest.mark.parametrize(("keys", "choice"), [((), "Allow"), (("Down", "Down"), "Reject")])
def test_permission_answered_in_the_popup(helix: HelixEditor, keys: tuple[str, ...], choice: str) -> None:
    ask_permission(helix)
    assert helix.selected_item(ACTIONS) == "Allow"  # the first action is preselected
    for key in keys:
        helix.send_keys(key)
    helix.wait_until(lambda: helix.selected_item(ACTIONS) == choice, f"{choice!r} to be selected")
    helix.send_keys("Enter")
    helix.wait_screen_gone(PERMISSION_POPUP)
    helix.wait_turns_ended(1)

    log = helix.log()
    [request] = log.of(SIDECAR_SERVER, "window/showMessageRequest", to_server=False)
    assert [a["title"] for a in request.params["actions"]] == ACTIONS
    answer = log.response_to(request)
    assert answer is not None and answer.body["result"] == {"title": choice}, answer
    # The demo agent says which option it got, in the conversation Helix opened.
    helix.wait_screen(f"You chose “{choice}”")


@pytest.mark.parametrize("key", ["Escape", "j"])
def test_a_dismissed_popup_leaves_the_request_to_the_code_actions(helix: HelixEditor, key: str) -> None:
    ask_permission(helix)
    # Escape, or any key the popup does not use (Helix then runs it too: `j` moves the cursor
    # down), closes the popup; Helix answers null and the request stays pending.
    helix.send_keys(key)
    helix.wait_screen_gone(PERMISSION_POPUP)
    helix.wait_screen(
        r"^The agent's permission request \(Run `echo hello from the demo agent`\) is still waiting: "
        r"answer with a code action",
        region="message",
    )
    assert helix.spinner_visible()  # the turn still waits
    [request] = helix.log().of(SIDECAR_SERVER, "window/showMessageRequest", to_server=False)
    answer = helix.log().response_to(request)
    assert answer is not None and answer.body["result"] is None, answer

    # space a: one action per option of the pending request.
    helix.normal_mode()
    helix.send_keys("space", "a")
    actions = [f"Agent permission: {a} — Run `echo hello from the demo agent`" for a in ACTIONS]
    helix.wait_until(
        lambda: helix.selected_item(actions) == actions[0], "the code actions, the first selected"
    )
    helix.send_keys("Down")
    helix.wait_until(lambda: helix.selected_item(actions) == actions[1], "the second action to be selected")
    helix.send_keys("Enter")
    helix.wait_turns_ended(1)
    helix.wait_screen("You chose “Always allow”")


def test_quit_leaves_no_process(helix: HelixEditor) -> None:
    helix.start("main.py")
    helix.wait_agent_ready()
    helix.workspace_command("acp.prompt", '"Where is the README?"')
    helix.wait_turns_ended(1)
    # The conversation's buffer took the answer as edits ([+]): `:q` refuses, as the README says.
    helix.wait_screen(r"\.md \[\+\]", region="status")
    helix.command("q")
    helix.wait_screen(r"^'quit': 1 unsaved buffer remaining: \[\".*/transcripts/", region="message")
    helix.quit()  # :q!


def test_quit_leaves_no_process_even_when_the_agent_ignores_sigterm(tmp_path: Path) -> None:
    python = Path(sys.executable)
    agent = f"sh -c 'trap \"\" TERM HUP; {python} -m sidecar.demo_agent; sleep 120'"
    helix = HelixEditor(tmp_path, env={"ACP_SIDECAR_AGENT": agent})
    try:
        helix.start("main.py")
        helix.wait_agent_ready()
        helix.quit()
    finally:
        helix.close()


def test_an_agents_question_of_choices_is_answered_in_popups(helix: HelixEditor) -> None:
    """ACP elicitation in real Helix: one popup per field of a choice form; the agent's answer
    is shown in the conversation Helix opened."""
    helix.start("main.py")
    helix.wait_agent_ready()
    helix.workspace_command("acp.prompt", '"#elicit=choice"')
    helix.wait_screen(r"The agent asks: A few details, please — Channel")
    assert helix.selected_item(["stable", "beta", "Decline"]) == "stable"
    helix.send_keys("Down")
    helix.wait_until(lambda: helix.selected_item(["stable", "beta", "Decline"]) == "beta", "beta selected")
    helix.send_keys("Enter")
    helix.wait_screen(r"The agent asks: A few details, please — Notify the team")
    helix.send_keys("Enter")  # Yes, preselected
    helix.wait_turns_ended(1)
    helix.wait_screen(
        r'Elicitation answer: \{"action": "accept", "content": \{"channel": "beta", "notify": true\}\}'
    )
