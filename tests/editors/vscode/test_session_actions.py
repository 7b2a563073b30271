"""The session picker's actions and the agent per session in a real VS Code workbench
(issues 24 and 25): "New session…" with two configured agents, a session deleted from the
picker's trash button after a modal question, Log out answered by the sidecar."""

from __future__ import annotations

import sys

import pytest

from tests.editors.vscode.workbench import QUICK_ROW, Workbench

pytestmark = [pytest.mark.editors, pytest.mark.slow, pytest.mark.timeout(420)]

YOU = "#conversation section.you"
AGENT = "#conversation section.agent"
# A second agent: the demo agent under another name (agentInfo.name).
SECOND = {"command": [sys.executable, "-m", "sidecar.demo_agent"], "env": {"ACP_DEMO_NAME": "second-agent"}}
TWO_AGENTS = {"acpSidecar.agents": {"second": SECOND}}


def start_session(workbench: Workbench, prompt: str) -> None:
    workbench.chat_send(prompt)
    workbench.wait_chat(YOU, prompt)
    workbench.wait_chat(AGENT)
    workbench.wait_status(rf"{prompt} · idle$", timeout=90.0)


def open_sessions(workbench: Workbench) -> None:
    workbench.run_command("ACP: Switch session…")
    workbench.wait_for(".quick-input-widget .quick-input-title", hasText="ACP sessions")


def status_tooltip(workbench: Workbench) -> str:
    """The status bar item's hover (its tooltip)."""
    workbench.hover('[id="acp-sidecar.acp-sidecar.acpSidecar.status"]')
    hover = ".workbench-hover, .monaco-hover"
    workbench.wait_for(hover, hasText="Agent:")
    return "\n".join(workbench.texts(hover, hasText="Agent:"))


@pytest.mark.machine_settings(TWO_AGENTS)
def test_new_session_asks_for_the_agent_and_names_it(workbench: Workbench) -> None:
    workbench.open_chat()
    workbench.wait_status(r"^no session · idle$", timeout=90.0)
    workbench.run_command("ACP: New session")
    workbench.wait_for(".quick-input-widget .quick-input-title", hasText="ACP: new session")
    rows = workbench.quick_pick_rows()
    workbench.screenshot("agent-picker")
    # The default first (the one named agent configured), each with its state; none started yet.
    assert [r.split("\n") for r in rows] == [["seconddefault", "stopped"], ["demo", "stopped"]], rows
    workbench.pick("seconddefault")
    workbench.wait_status(r"^untitled · idle$", timeout=90.0)
    workbench.wait_until(
        lambda: f"the agent in the chat header (last seen {workbench.chat_header()!r})",
        lambda: workbench.chat_header() == "untitled session · second · idle",
    )
    tip = status_tooltip(workbench)
    workbench.screenshot("second-agent-session")
    assert "Agent: second — second-agent (demo agent)" in tip, tip
    # The prompt goes to that session, of the second agent.
    start_session(workbench, "Explain README.md")
    assert workbench.chat_header() == "Explain README.md · second · idle", workbench.chat_header()


def test_session_deleted_from_the_picker_after_asking(workbench: Workbench) -> None:
    workbench.open_chat()
    start_session(workbench, "Explain README.md")
    workbench.run_command("ACP: New session")
    workbench.wait_status(r"^untitled · idle$")
    start_session(workbench, "Explain src/app.py")
    open_sessions(workbench)
    rows = workbench.quick_pick_rows()
    assert any("Explain README.md" in r for r in rows) and any("Explain src/app.py" in r for r in rows), rows
    workbench.hover(QUICK_ROW, hasText="Explain README.md")
    workbench.screenshot("row-buttons")
    # Cancel first: nothing is deleted.
    workbench.click_row_button("Explain README.md", "Delete session…")
    assert sorted(workbench.dialog_buttons()) == ["Cancel", "Delete"], workbench.dialog_buttons()
    workbench.screenshot("delete-question")
    assert 'Delete the session "Explain README.md"?' in workbench.dialog_text(), workbench.dialog_text()
    workbench.click(".monaco-dialog-box .dialog-buttons .monaco-button", hasText="Cancel")
    workbench.wait_for(".monaco-dialog-box", state="hidden")
    open_sessions(workbench)
    assert any("Explain README.md" in r for r in workbench.quick_pick_rows())
    workbench.click_row_button("Explain README.md", "Delete session…")
    workbench.dialog_buttons()
    workbench.click(".monaco-dialog-box .dialog-buttons .monaco-button", hasText="Delete")
    workbench.wait_toast('deleted the session "Explain README.md"')
    workbench.screenshot("deleted")
    open_sessions(workbench)
    rows = workbench.quick_pick_rows()
    assert not any("Explain README.md" in r for r in rows), rows
    assert any("Explain src/app.py" in r for r in rows), rows
    # The active session (the other one) is untouched.
    workbench.press("Escape")
    workbench.wait_status(r"Explain src/app.py · idle$")
    # From the palette: a picker asks which session, then the same question. The active one
    # deleted, the chat and the status bar have no session.
    workbench.run_command("ACP: Delete session…")
    workbench.wait_for(".quick-input-widget .quick-input-title", hasText="ACP: delete session")
    workbench.pick("Explain src/app.py")
    workbench.dialog_buttons()
    workbench.click(".monaco-dialog-box .dialog-buttons .monaco-button", hasText="Delete")
    workbench.wait_status(r"^no session · idle$")
    workbench.wait_until(
        lambda: f"no session in the chat header (last seen {workbench.chat_header()!r})",
        lambda: workbench.chat_header().startswith("no session yet"),
    )
    workbench.screenshot("active-deleted")
    assert not workbench.error_toasts(), workbench.describe()


def test_fork_and_log_out_show_the_sidecar_answer(workbench: Workbench) -> None:
    """The demo agent offers no logout without ACP_DEMO_CAPS=auth: the sidecar's message is shown."""
    workbench.open_chat()
    start_session(workbench, "Explain README.md")
    workbench.run_command("ACP: Log out")
    workbench.wait_toast("the agent does not offer logout")
    open_sessions(workbench)
    workbench.click_row_button("Explain README.md", "Fork session")
    # acp.session.fork: the new session (once the sidecar has it), else its error, shown as is.
    workbench.wait_until(
        "a fork or the sidecar's answer",
        lambda: (
            any("Fork session" in t for t in workbench.error_toasts())
            or "Fork: Explain README.md" in workbench.status_text()
        ),
    )
    if "Fork: " in workbench.status_text():
        # The fork is the active session; the chat shows its conversation: the parent's, then where it forked.
        workbench.wait_conversation("Forked from")
        assert "Explain README.md" in workbench.conversation(), workbench.conversation()
        assert workbench.chat_header().startswith("Fork: Explain README.md · demo"), workbench.chat_header()
    workbench.screenshot("fork")
