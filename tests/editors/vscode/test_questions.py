"""The agent's questions in real VS Code (code-server, headless Chromium): each field of an
elicitation asked with a QuickPick or an InputBox, the answer the agent received shown in the chat."""

from __future__ import annotations

import json

import pytest

from tests.editors.vscode.workbench import QUICK_INPUT, Workbench

pytestmark = [pytest.mark.editors, pytest.mark.slow, pytest.mark.timeout(420)]


def agent_received(workbench: Workbench) -> dict[str, object]:
    workbench.wait_conversation("Elicitation answer: ")
    line = workbench.conversation().split("Elicitation answer: ", 1)[1].splitlines()[0]
    # The rendered Markdown may wrap: the JSON object ends at its last brace.
    answer: dict[str, object] = json.loads(line[: line.rindex("}") + 1])
    return answer


def test_a_form_is_asked_field_by_field(workbench: Workbench) -> None:
    workbench.open_chat()
    workbench.chat_send("#elicit")
    workbench.input_box("dev@example.com")  # Your email
    workbench.milestone("asked")
    workbench.input_box("4")  # How many (default 3 pre-filled: replaced)
    workbench.input_box("")  # Ratio: optional, left out
    assert "(no answer)" in " ".join(workbench.quick_pick_rows())  # Notify the team: optional
    workbench.pick("Yes")
    rows = workbench.quick_pick_rows(containing="Stable")  # Channel: required, no "(no answer)"
    assert not any("(no answer)" in r for r in rows), rows
    workbench.pick("Beta")
    # Targets: a multi-select.
    workbench.click(QUICK_ROW_CHECK, hasText="linux")
    workbench.click(QUICK_ROW_CHECK, hasText="mac")
    workbench.press("Enter", selector=f"{QUICK_INPUT} input")
    assert agent_received(workbench) == {
        "action": "accept",
        "content": {
            "email": "dev@example.com",
            "count": 4,
            "notify": True,
            "channel": "beta",
            "targets": ["linux", "mac"],
        },
    }
    workbench.milestone("answered")


def test_escape_declines(workbench: Workbench) -> None:
    workbench.open_chat()
    workbench.chat_send("#elicit=choice")
    workbench.quick_pick_rows()
    workbench.press("Escape", selector=f"{QUICK_INPUT} input")
    assert agent_received(workbench) == {"action": "decline"}


QUICK_ROW_CHECK = ".quick-input-widget .quick-input-list .monaco-list-row"
