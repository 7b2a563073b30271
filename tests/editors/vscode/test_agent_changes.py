"""The agent's changes after they landed, in a real VS Code workbench (code-server, headless
Chromium; docs/protocol.md, "Agent changes", issue 26): the agent's edit to the open file is
marked (a Hint diagnostic: its dots, and its hover names the change), the quick-fix menu
(Ctrl+.) offers the sidecar's actions for it, and "Revert this agent change" puts the file back
exactly as it was, the mark gone."""

from __future__ import annotations

import pytest

from tests.editors.vscode.workbench import Workbench

pytestmark = [pytest.mark.editors, pytest.mark.slow, pytest.mark.timeout(480)]

EDIT_LINE = "Edited by the acp-sidecar demo agent."
ASKS = "the agent asks to run"
PROMPT = "Add a line #edit=README.md"
TITLE = "Add a line"  # the demo agent titles the session with the prompt's first words
EDITOR = ".editor-instance .monaco-editor"
HINT = f"{EDITOR} .squiggly-hint"  # the dots of a Hint diagnostic
HOVER = f"{EDITOR} .monaco-hover"
MENU_ROW = ".action-widget .monaco-list-row"
MENU_HEADER = "Quick Fix"
REVERT = "Revert this agent change"


def hints(workbench: Workbench) -> int:
    return len(workbench.call("texts", selector=HINT))


def put_cursor_on(workbench: Workbench, text: str) -> None:
    workbench.press("Escape")
    workbench.click(f"{EDITOR} .view-line", hasText=text)


def test_an_agent_edit_is_marked_and_reverted_from_the_quick_fix_menu(workbench: Workbench) -> None:
    readme = workbench.server.workspace / "README.md"
    before = readme.read_text()
    workbench.open_file("README.md")
    workbench.wait_for(f"{EDITOR} .view-line", hasText="Line four.")
    # Monaco shows a file's lines, the empty one after its last line end included.
    assert workbench.editor_lines() == before.split("\n")
    assert hints(workbench) == 0, "a hint before the agent did anything"

    workbench.open_chat()
    workbench.chat_send(PROMPT)
    workbench.wait_toast(ASKS, timeout=90.0)
    workbench.click_toast_button(ASKS, "Allow")
    workbench.wait_conversation("Edit README.md — completed", timeout=90.0)
    workbench.wait_status(rf"^{TITLE} · idle$", timeout=90.0)
    # The demo agent appends a blank line and its line; it went into the open editor, unsaved.
    edited = (before + "\n" + EDIT_LINE + "\n").split("\n")
    workbench.wait_until(
        lambda: f"the agent's edit in the editor (last seen {workbench.editor_lines()!r})",
        lambda: workbench.editor_lines() == edited,
    )
    assert readme.read_text() == before

    # The mark: one Hint diagnostic, whose dots VS Code draws at the start of the agent's lines
    # (the blank line it added); the hover there says what it is.
    workbench.wait_until("the hint's dots in the editor", lambda: hints(workbench) == 1, timeout=30.0)
    put_cursor_on(workbench, EDIT_LINE)
    workbench.press("Home")
    workbench.press("ArrowUp")  # the blank line the agent added, where the hunk starts
    workbench.press("Control+K")
    workbench.press("Control+I")  # Show or Focus Hover
    workbench.wait_for(HOVER, hasText="added by the agent")
    hover = " ".join(workbench.texts(HOVER, hasText="added by the agent"))
    workbench.milestone("hover")
    assert f"added by the agent · {TITLE} · " in hover, hover
    assert "acp-sidecar(agent-change)" in hover, hover  # the diagnostic's source and code

    # Ctrl+. on the agent's line: exactly the sidecar's actions for this hunk, chosen by label.
    put_cursor_on(workbench, EDIT_LINE)
    workbench.press("Control+.")
    workbench.wait_for(MENU_ROW, hasText=REVERT)
    rows = [row for row in workbench.texts(MENU_ROW) if row != MENU_HEADER]
    workbench.milestone("quick-fix-menu")
    assert rows == [REVERT, "Keep this agent change", "Show the agent's change"], rows
    workbench.click(MENU_ROW, hasText=REVERT)

    # The editor shows the file as it was, line for line, and the mark is gone.
    workbench.wait_until(
        lambda: f"the file as it was in the editor (last seen {workbench.editor_lines()!r})",
        lambda: workbench.editor_lines() == before.split("\n"),
    )
    workbench.wait_until("the hint's dots gone", lambda: hints(workbench) == 0)
    workbench.milestone("reverted")
    # Exactly as before, to the byte: the reverted buffer (still an unsaved edit) saved is the file.
    assert workbench.texts(".tab.active.dirty"), "the revert was not an edit of the open buffer"
    workbench.press("Control+S")
    workbench.wait_for(".tab.active.dirty", state="hidden")
    assert readme.read_text() == before
    assert not workbench.error_toasts(), workbench.describe()


@pytest.mark.machine_settings({"acpSidecar.changes.severity": "information"})
def test_the_severity_setting_lists_agent_changes_in_the_problems_panel(workbench: Workbench) -> None:
    """`acpSidecar.changes.severity: information`: the mark is an information squiggle, not the
    hint's dots, and the Problems panel (Ctrl+Shift+M) lists it."""
    workbench.open_file("README.md")
    workbench.wait_for(f"{EDITOR} .view-line", hasText="Line four.")
    workbench.open_chat()
    workbench.chat_send(PROMPT)
    workbench.wait_toast(ASKS, timeout=90.0)
    workbench.click_toast_button(ASKS, "Allow")
    workbench.wait_status(rf"^{TITLE} · idle$", timeout=90.0)
    info = f"{EDITOR} .squiggly-info"
    workbench.wait_until(
        "the information squiggles under the agent's lines (one decoration per line)",
        lambda: len(workbench.texts(info)) >= 1,
        timeout=30.0,
    )
    assert hints(workbench) == 0
    workbench.press("Control+Shift+M")
    row = ".markers-panel .monaco-list-row"
    workbench.wait_for(row, hasText="added by the agent")
    workbench.milestone("problems-panel")
    listed = " ".join(workbench.texts(row, hasText="added by the agent"))
    assert f"added by the agent · {TITLE}" in listed, listed
