"""An agent's terminal in real VS Code (code-server, headless Chromium): the demo agent's
`#terminal` asks permission to run a command; allowed, the sidecar runs it and the chat view shows
its output as the transcript document has it (a fenced block, rendered as a code block), then how
it ended."""

from __future__ import annotations

import pytest

from tests.editors.vscode.workbench import TOAST, Workbench

pytestmark = [pytest.mark.editors, pytest.mark.slow, pytest.mark.timeout(420)]

ASKS = "the agent asks to run"
OUTPUT = "#conversation pre"


def test_a_terminal_s_output_and_its_end_show_in_the_chat(workbench: Workbench) -> None:
    workbench.open_chat()
    workbench.chat_send("#terminal")
    workbench.wait_toast(ASKS, timeout=90.0)
    toast = " ".join(workbench.texts(TOAST, hasText=ASKS))
    # The command as the agent asked (cut to one line; its length depends on the venv's path).
    assert "Run `" in toast and "python" in toast, toast
    workbench.click_toast_button(ASKS, "Allow")
    workbench.wait_chat(".permission.resolved", "Answered: Allow")
    # The output, as the command printed it, in code blocks of the conversation (one per write:
    # the sidecar adds new output at most every 0.5 s), on screen.
    workbench.wait_chat(OUTPUT, "demo terminal line 4 ✓", timeout=90.0)
    blocks = workbench.texts(OUTPUT, scope="chat", hasText="demo terminal line")
    shown = [line for block in blocks for line in block.strip().splitlines()]
    assert shown == [f"demo terminal line {n} ✓" for n in range(5)], blocks
    # How it ended, the agent's tool call completed, the turn over.
    workbench.wait_conversation("exited with code 0.", timeout=90.0)
    workbench.wait_conversation("Turn ended (end_turn)", timeout=90.0)
    workbench.wait_status(r"· idle$", timeout=90.0)
    text = workbench.conversation()
    assert "Terminal: " in text and " in " in text.split("Terminal: ", 1)[1].splitlines()[0], text
    assert text.index("Terminal: ") < text.index("demo terminal line 0 ✓") < text.index("exited with code 0.")
    assert "The command ended with code 0" in text, text
    # What the user sees: the block and the end line visible in the chat view (scrolled to the end).
    workbench.wait_chat(OUTPUT, "demo terminal line 4 ✓")
    workbench.wait_chat("#conversation p", "exited with code 0.")
    workbench.milestone("terminal")
