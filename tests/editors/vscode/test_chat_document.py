"""The chat view shows the session's conversation document: what the sidecar decided once, as Markdown.

A notice, a streamed answer, a tool call and an agent's diff each show in the chat
as the conversation document has them (docs/protocol.md, "Conversation documents").
"""

from __future__ import annotations

import pytest

from tests.editors.vscode.workbench import Workbench

pytestmark = [pytest.mark.editors, pytest.mark.slow, pytest.mark.timeout(420)]

EDIT_LINE = "Edited by the acp-sidecar demo agent."


@pytest.mark.machine_settings({"acpSidecar.permissions": "reject"})
def test_notice_answer_tool_call_and_diff_show_in_the_chat(workbench: Workbench) -> None:
    workbench.open_chat()
    workbench.milestone("empty-chat")
    workbench.chat_send("Explain README.md #slow=60 #notice=warning:Disk almost full | Free some space")
    # The answer streams: its first words show before the turn ends.
    workbench.wait_until(
        "the answer streaming", lambda: "at the root of your workspace" in workbench.chat_text()
    )
    workbench.wait_status(r"· running$")
    workbench.milestone("streaming")
    workbench.wait_status(r"· idle$", timeout=90.0)
    text = workbench.chat_text()
    # The notice: its severity, title and description.
    assert "Warning: Disk almost full — Free some space" in text, text
    # The read tool call, completed, and the plan.
    assert "Read README.md" in text and "completed" in text, text
    # An edit: its tool call and its diff (rejected by the setting: the tool call failed).
    workbench.chat_send("#edit=README.md")
    workbench.wait_until("the diff in the chat", lambda: f"+{EDIT_LINE}" in workbench.chat_text())
    workbench.wait_status(r"· idle$", timeout=90.0)
    workbench.wait_until("the failed edit", lambda: "failed" in workbench.chat_text())
    workbench.milestone("diff")
    assert "Diff of README.md" in workbench.chat_text(), workbench.chat_text()
