"""The extension in a real VS Code workbench (code-server 4.139.1 = VS Code 1.139.1, headless Chromium).

Each test gets a fresh code-server with the built .vsix, the demo agent and a
private state directory. Needs `make setup` (code-server, Node 24,
playwright-core, Debian chromium): missing tools fail with that hint.
Scenarios marked `needs_sidecar` are strict xfails while the sidecar lacks
that feature (see features.py), ordinary tests once it has it.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from tests.chunks import shows_chunk
from tests.editors.vscode.workbench import TOAST, Workbench
from tests.procs import wait_gone

pytestmark = [pytest.mark.editors, pytest.mark.slow, pytest.mark.timeout(420)]

EDIT_LINE = "Edited by the acp-sidecar demo agent."
ASKS = "the agent asks to run"
# The demo agent sends an edit's diff as only the changed part, as claude-agent-acp's Edit does.
SNIPPET_DIFFS = {"ACP_DEMO_DIFFS": "snippet"}
# The conversation: the transcript document's turns.
YOU = "#conversation section.you"
AGENT = "#conversation section.agent"


def start_session(workbench: Workbench, prompt: str) -> None:
    """Opens the chat, sends a prompt, waits for its answer to end (status bar idle)."""
    workbench.open_chat()
    workbench.chat_send(prompt)
    workbench.wait_chat(YOU, prompt)
    workbench.wait_chat(AGENT)
    workbench.wait_status(r"· idle$", timeout=90.0)


def review_edit(workbench: Workbench, shown: Callable[[dict[str, str]], bool]) -> dict[str, str]:
    """Asks the demo agent to edit README.md and opens its diff review from the notification;
    waits until both sides show what `shown` wants (not one side right after the other showed)."""
    workbench.open_chat()
    workbench.chat_send("#edit=README.md")
    workbench.wait_toast(ASKS)
    workbench.click_toast_button(ASKS, "Review diff")
    workbench.wait_for(".tab", hasText="current ↔ agent's edit")
    sides: dict[str, str] = {}

    def rendered() -> bool:
        sides.update(workbench.diff_sides())
        return shown(sides)

    workbench.wait_until(lambda: f"both sides of the diff (last seen {sides!r})", rendered)
    return sides


def accept_review(workbench: Workbench) -> None:
    """Accept in the diff editor's title bar: the review closes and the agent's tool call completes."""
    workbench.click('.editor-actions a.action-label[aria-label*="Accept the agent"]')
    workbench.wait_for(".monaco-diff-editor", state="hidden")
    workbench.wait_chat(".permission.resolved", "Answered: Allow")
    workbench.wait_conversation("Edit README.md — completed")


def change_proposal(workbench: Workbench) -> str:
    """The user writes its own line instead of the agent's, on the review's proposal side."""
    mine = "The user's own line."
    workbench.click(".monaco-diff-editor .editor.modified .view-line", hasText=EDIT_LINE)
    workbench.press("End")
    workbench.press("Shift+Home")
    workbench.call("type", text=mine)
    sides: dict[str, str] = {}

    def changed() -> bool:
        sides.update(workbench.diff_sides())
        return mine in sides["modified"] and EDIT_LINE not in sides["modified"]

    workbench.wait_until(lambda: f"the user's line on the right side (last seen {sides!r})", changed)
    # Kept in memory at once: the tab is not left dirty, so closing it would ask nothing.
    workbench.wait_for(".tab.dirty", state="hidden")
    return mine


def test_activation_without_errors_and_status_bar(workbench: Workbench) -> None:
    server = workbench.server
    workbench.wait_for('.part.activitybar .action-label[aria-label^="ACP"]')  # the extension is registered
    # Not activated at start-up: no sidecar until the user opens the chat or runs an ACP command.
    time.sleep(2.0)
    assert not server.sidecars(), "the sidecar started before any ACP command or view"
    workbench.open_chat()
    text = workbench.wait_status(r"^no session · idle$", timeout=90.0)
    assert text == "no session · idle"
    workbench.wait_until("one sidecar process", lambda: len(server.sidecars()) == 1)
    assert "no session yet" in workbench.chat_header()
    assert not workbench.error_toasts(), workbench.describe()
    log = server.exthost_log()
    assert "acp-sidecar" in log, "the extension host log does not mention the extension"
    errors = [line for line in log.splitlines() if "[error]" in line and "acp-sidecar" in line]
    assert not errors, "\n".join(errors)


def test_prompt_typed_in_chat_streams_into_it(workbench: Workbench) -> None:
    workbench.open_chat()
    policy = workbench.call(
        "attribute", scope="chat", selector='meta[http-equiv="Content-Security-Policy"]', name="content"
    )
    assert "default-src 'none'" in policy and "script-src 'nonce-" in policy, policy

    # Shift+Enter is a new line; nothing is sent.
    workbench.call("fill", scope="chat", selector="#input", text="Explain README.md")
    workbench.press("Shift+Enter", selector="#input", scope="chat")
    workbench.call("type", text="slowly #slow=120")
    assert workbench.call("value", scope="chat", selector="#input") == "Explain README.md\nslowly #slow=120"
    assert not workbench.texts(f"{YOU}, .msg.user", scope="chat")
    # Enter sends: the prompt shows at once (then as the transcript has it), the answer streams below it.
    workbench.press("Enter", selector="#input", scope="chat")
    workbench.wait_chat(f"{YOU}, .msg.user", "Explain README.md")
    assert workbench.call("value", scope="chat", selector="#input") == ""
    workbench.wait_chat(AGENT, "README.md is at the root")
    workbench.wait_for("#stop", scope="chat")  # a turn runs: Stop shows
    first = workbench.texts(AGENT, scope="chat")[0]
    workbench.wait_status(r"· idle$", timeout=90.0)
    workbench.wait_conversation("Turn ended")
    final = workbench.texts(AGENT, scope="chat")[0]
    assert len(final) > len(first) and final.startswith(first.rstrip()[:10]), (first, final)
    assert "README.md" in final
    workbench.wait_for("#stop", scope="chat", state="hidden")
    # The read tool call and the plan are part of the conversation (the plan where the turn ends).
    assert "Read README.md — completed" in final, final
    assert [p[:1] for p in workbench.texts(f"{AGENT} li.task", scope="chat")] == ["☑"] * 3, final
    # The prompt shows once: as the transcript has it, the one typed here gone.
    assert not workbench.texts(".msg.user", scope="chat")
    # Twice: the prompt, and the answer quoting it.
    assert workbench.conversation().count("Explain README.md") == 2, workbench.conversation()
    # The first prompt titled the session.
    assert "Explain README.md" in workbench.status_text()
    assert "Explain README.md" in workbench.chat_header()
    assert not workbench.error_toasts(), workbench.describe()


def test_html_from_the_agent_is_shown_as_text(workbench: Workbench) -> None:
    # The demo agent's answer quotes the prompt's first words ("You asked about …"): markup in it
    # must show as text in the chat, and nothing in it may become an element or load.
    start_session(workbench, "Explain <b>bold</b> <img src=x onerror=alert(1)>")
    answer = workbench.texts(AGENT, scope="chat")[0]
    assert "<b>bold</b>" in answer and "<img src=x" in answer, answer
    assert not workbench.texts("#conversation b, #conversation img", scope="chat")
    assert "<b>bold</b>" in workbench.texts(YOU, scope="chat")[0]


def test_stop_button_cancels_the_running_turn(workbench: Workbench) -> None:
    workbench.open_chat()
    workbench.chat_send("Count for me #chunks=2000 #slow=100")
    workbench.wait_chat(AGENT, "c3 ")
    workbench.wait_status(r"· running$")
    workbench.click("#stop", scope="chat")
    workbench.wait_conversation("Cancelled (cancelled)")
    workbench.wait_for("#stop", scope="chat", state="hidden")
    workbench.wait_status(r"· idle$")
    streamed = workbench.texts(AGENT, scope="chat")[0]
    assert not shows_chunk(streamed, 1999)


@pytest.mark.needs_sidecar("permission_notifications")
def test_permission_answered_dismissed_is_not_rejected(workbench: Workbench) -> None:
    workbench.open_chat()
    # Answered from the notification.
    workbench.chat_send("#permission")
    workbench.wait_toast(ASKS)
    workbench.milestone("permission-notification")
    workbench.click_toast_button(ASKS, "Reject")
    workbench.wait_chat(".permission.resolved", "Answered: Reject")
    workbench.wait_conversation("— failed")
    workbench.wait_status(r"· idle$")
    # Dismissed: still pending, answered later from the chat view.
    workbench.chat_send("#permission again")
    workbench.wait_toast(ASKS)
    workbench.wait_status(r"waiting for you$")
    workbench.click(TOAST, hasText=ASKS, inner=".codicon-notifications-clear")
    workbench.wait_for(TOAST, hasText=ASKS, state="hidden")
    time.sleep(1.0)
    assert workbench.status_text().endswith("waiting for you"), workbench.describe()
    workbench.milestone("permission-pending-in-chat")
    workbench.click(".permission.pending button", scope="chat", hasText="Allow")
    workbench.wait_chat(".permission.resolved", "Answered: Allow")
    workbench.wait_conversation("— completed")
    workbench.wait_status(r"· idle$")


@pytest.mark.needs_sidecar("permission_notifications")
def test_diff_reviewed_and_accepted(workbench: Workbench) -> None:
    # An unsaved change in the open file is part of the comparison and survives the edit.
    readme = workbench.server.workspace / "README.md"
    on_disk = readme.read_text()
    workbench.open_file("README.md")
    workbench.click(".editor-instance .monaco-editor .view-lines")
    workbench.press("Control+Home")
    workbench.call("type", text="Unsaved line\n")
    sides = review_edit(workbench, lambda s: "Unsaved line" in s["original"] and EDIT_LINE in s["modified"])
    assert "Unsaved line" in sides["modified"], sides
    # Nothing was applied before Accept: the current side is the unsaved editor text, still unsaved.
    assert EDIT_LINE not in sides["original"], (sides, workbench.describe())
    assert readme.read_text() == on_disk, "the unsaved line was saved"
    workbench.milestone("diff-review")
    accept_review(workbench)
    workbench.open_file("README.md")
    workbench.wait_until("the edit in the editor", lambda: EDIT_LINE in workbench.editor_text())
    assert "Unsaved line" in workbench.editor_text()
    # It went through the open editor (an unsaved edit, like the user's own), not behind its back to disk.
    assert readme.read_text() == on_disk


@pytest.mark.needs_sidecar("permission_notifications")
@pytest.mark.machine_settings({"acpSidecar.agent.env": SNIPPET_DIFFS})
def test_snippet_diff_reviewed_changed_and_accepted(workbench: Workbench) -> None:
    # The agent sends only the changed part (as claude-agent-acp's Edit does): the review still
    # shows the whole file after the edit, and what the user makes of it is what the file gets.
    readme = workbench.server.workspace / "README.md"
    on_disk = readme.read_text()
    lines = [line for line in on_disk.splitlines() if line]
    workbench.open_file("README.md")
    sides = review_edit(workbench, lambda s: EDIT_LINE in s["modified"] and lines[0] in s["original"])
    assert all(line in sides["modified"] for line in lines), sides  # the whole file, not the snippet
    workbench.milestone("snippet-diff-review")
    mine = change_proposal(workbench)
    workbench.milestone("snippet-diff-changed")
    accept_review(workbench)
    assert not workbench.texts(".monaco-dialog-box"), "closing the review asked something"
    assert_readme_is(workbench, on_disk, mine)


@pytest.mark.machine_settings({"acpSidecar.agent.env": SNIPPET_DIFFS, "acpSidecar.permissions": "reject"})
def test_tool_call_diff_reviewed_changed_and_applied(workbench: Workbench) -> None:
    # No permission to answer (rejected by the setting): Accept puts the user's version into the
    # file through the editor, as acp.edit.apply would the agent's.
    readme = workbench.server.workspace / "README.md"
    on_disk = readme.read_text()
    workbench.open_file("README.md")
    workbench.open_chat()
    workbench.chat_send("#edit=README.md")
    workbench.wait_conversation("Edit README.md — failed")
    workbench.wait_status(r"· idle$")
    workbench.click(".tool button", scope="chat", hasText="Review diff")
    workbench.wait_for(".tab", hasText="current ↔ agent's edit")
    workbench.wait_until(
        "the agent's line on the right side", lambda: EDIT_LINE in workbench.diff_sides()["modified"]
    )
    mine = change_proposal(workbench)
    # Closed without a decision and opened again: the user's version is what it shows.
    workbench.run_command("View: Close Editor")
    workbench.wait_for(".monaco-diff-editor", state="hidden")
    workbench.click(".tool button", scope="chat", hasText="Review diff")
    workbench.wait_until(
        "the user's line kept on the right side",
        lambda: mine in (sides := workbench.diff_sides())["modified"] and EDIT_LINE not in sides["modified"],
    )
    workbench.click('.editor-actions a.action-label[aria-label*="Accept the agent"]')
    workbench.wait_for(".monaco-diff-editor", state="hidden")
    assert_readme_is(workbench, on_disk, mine)


@pytest.mark.needs_sidecar("permission_notifications")
@pytest.mark.machine_settings({"acpSidecar.agent.env": SNIPPET_DIFFS})
def test_snippet_diff_that_no_longer_fits_is_shown_as_sent(workbench: Workbench) -> None:
    # The user changed the lines the agent's snippet replaces before reviewing it: no whole file
    # can be made of it, so the review shows the agent's old and new text and says so.
    workbench.open_file("README.md")
    workbench.open_chat()
    workbench.chat_send("#edit=README.md")
    workbench.wait_toast(ASKS)
    workbench.open_file("README.md")
    workbench.click(".editor-instance .monaco-editor .view-line", hasText="Line four.")
    workbench.press("End")
    workbench.press("Shift+Home")
    workbench.call("type", text="Line 4.")
    workbench.click(".permission.pending button", scope="chat", hasText="Review diff")
    workbench.wait_for(".tab", hasText="agent's old ↔ new text (does not fit the file)")
    workbench.wait_toast("does not fit the file as it is now")
    sides: dict[str, str] = {}

    def rendered() -> bool:
        sides.update(workbench.diff_sides())
        return "Line four." in sides["original"] and EDIT_LINE in sides["modified"]

    workbench.wait_until(lambda: f"the agent's old and new text (last seen {sides!r})", rendered)
    assert "Practice repo" not in sides["original"] + sides["modified"], sides
    workbench.click('.editor-actions a.action-label[aria-label*="Reject the agent"]')
    workbench.wait_for(".monaco-diff-editor", state="hidden")
    workbench.wait_chat(".permission.resolved", "Answered: Reject")


def assert_readme_is(workbench: Workbench, on_disk: str, mine: str) -> None:
    """The open README.md holds exactly its text and the user's line, unsaved (the disk unchanged)."""
    workbench.open_file("README.md")
    workbench.wait_until("the user's line in the editor", lambda: mine in workbench.editor_text())
    text = workbench.editor_text()
    assert EDIT_LINE not in text, text
    shown = [line for line in text.splitlines() if line.strip()]
    assert shown == [line for line in on_disk.splitlines() if line] + [mine], text
    # Through the open editor, unsaved: nothing was written to disk.
    assert (workbench.server.workspace / "README.md").read_text() == on_disk


def test_rename_shown_in_status_bar(workbench: Workbench) -> None:
    start_session(workbench, "Explain README.md")
    workbench.run_command("ACP: Rename the active session")
    workbench.input_box("Fix auth timeout")
    workbench.wait_status(r"^Fix auth timeout · idle$", timeout=90.0)
    assert "Fix auth timeout" in workbench.chat_header()


def test_session_picker_from_the_status_bar(workbench: Workbench) -> None:
    start_session(workbench, "Explain README.md")
    workbench.run_command("ACP: New session")
    workbench.wait_status(r"^untitled · idle$")
    workbench.chat_send("Explain src/app.py")
    workbench.wait_status(r"Explain src/app.py · idle$", timeout=90.0)
    workbench.click('[id="acp-sidecar.acp-sidecar.acpSidecar.status"]')
    rows = workbench.quick_pick_rows()
    workbench.milestone("session-picker")
    assert any("Explain README.md" in r for r in rows) and any("Explain src/app.py" in r for r in rows), rows
    workbench.pick("Explain README.md")
    workbench.wait_status(r"Explain README.md · idle$")
    assert "Explain README.md" in workbench.chat_header()


@pytest.mark.needs_sidecar("transcripts")
def test_reopening_a_session_shows_its_history(workbench: Workbench) -> None:
    start_session(workbench, "Explain README.md")
    # A new sidecar (and agent): the session is resumed without replay; its history comes from the store.
    workbench.run_command("ACP: Restart the sidecar")
    workbench.wait_status(r"^no session · idle$", timeout=90.0)
    workbench.run_command("ACP: Switch session…")
    workbench.pick("Explain README.md")
    workbench.wait_status(r"Explain README.md · idle$")
    workbench.wait_chat(YOU, "Explain README.md", timeout=90.0)
    history = workbench.conversation()
    assert "README.md is at the root" in history and "Your prompt" not in history, history
    assert "acp-sidecar" not in history.replace("acp-sidecar demo agent", ""), history  # no marker comments
    # The whole document, prompt area included, opens in an editor.
    workbench.run_command("ACP: Open the session transcript document")
    workbench.wait_for(".editor-instance .monaco-editor .view-lines", hasText="Explain README.md")
    assert any(tab.strip().endswith(".md") for tab in workbench.texts(".tab.active")), workbench.texts(".tab")


def test_restarts_are_serialised(workbench: Workbench) -> None:
    server = workbench.server
    workbench.open_chat()
    workbench.wait_status(r"idle$", timeout=90.0)
    first = server.sidecars()
    assert len(first) == 1, first
    # Three restarts in quick succession (a key bound to ACP: Restart the sidecar): they run one
    # after another, the old sidecar is gone before a new one starts, and one sidecar is left.
    workbench.click(".part.editor")
    for _ in range(3):
        workbench.press("Control+Alt+R")
    workbench.wait_until("the old sidecar gone", lambda: not (server.sidecars() & first), timeout=60.0)
    workbench.wait_status(r"^no session · idle$", timeout=90.0)
    workbench.wait_until("exactly one sidecar", lambda: len(server.sidecars()) == 1, timeout=60.0)
    time.sleep(3.0)  # nothing more is starting
    assert len(server.sidecars()) == 1, server.sidecars()
    assert server.agents() == set(), server.agents()  # agents start on first use
    log = server.output_channel("ACP Sidecar")
    assert "already exists" not in log and "couldn't create connection" not in log, log[-3000:]
    # The sidecar left running works, with one agent.
    workbench.chat_send("Explain README.md")
    workbench.wait_status(r"Explain README.md · idle$", timeout=90.0)
    assert len(server.agents()) == 1, server.agents()


def test_no_sidecar_process_after_the_server_stops(workbench: Workbench) -> None:
    server = workbench.server
    start_session(workbench, "Explain README.md")
    sidecars, agents = server.sidecars(), server.agent_processes()
    assert len(sidecars) == 1 and len(server.agents()) == 1, (sidecars, agents)
    workbench.driver.close()
    code = server.stop(timeout=60.0)
    assert code is not None, "code-server did not exit on SIGTERM"
    left = wait_gone(sidecars | agents, timeout=30.0)
    assert not left, f"still running after code-server stopped: {left}"
