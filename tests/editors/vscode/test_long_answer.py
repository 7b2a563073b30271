"""A long answer in the chat view (issue 28): whole, in order, and followed to its end.

The chat renders a growing answer block by block (editor-configs/vscode/src/blocks.ts) and the
webview replaces only the blocks that changed: these tests would fail if a block were lost or
shown twice, or if a block boundary fell inside a fenced code block (the demo agent's
``#para`` answer has a code block with a blank line inside every fifth paragraph).
"""

from __future__ import annotations

import re

import pytest

from sidecar.demo_agent.behaviours import ANSWER_END, paragraphs_text
from tests.editors.vscode.workbench import Workbench

pytestmark = [pytest.mark.editors, pytest.mark.slow, pytest.mark.timeout(420)]

SIZE = 200_000
LINES = 6
LINE = re.compile(r"line (\d{7}) of the long answer, words to fill it up to one line of text\.")


def test_a_long_answer_streams_whole_in_order_and_to_its_end(workbench: Workbench) -> None:
    expected = paragraphs_text(SIZE, LINES)
    workbench.open_chat()
    # Small pieces, paced: the chat renders the answer many times while it grows.
    workbench.chat_send(f"A long answer #answer={SIZE} #para={LINES} #piece=4000 #slow=20")
    workbench.wait_until(
        "the answer streaming", lambda: "line 0000060 of the long answer" in workbench.conversation()
    )
    workbench.wait_conversation(ANSWER_END, timeout=180.0)
    workbench.wait_status(r"· idle$", timeout=90.0)
    workbench.milestone("long-answer")

    # Every line of the answer, once, in order: nothing lost or shown twice between blocks.
    # (A paragraph's lines show as one line: their numbers tell them apart.)
    shown = LINE.findall(workbench.conversation())
    wanted = LINE.findall(expected)
    assert len(shown) == len(wanted), (len(shown), len(wanted))
    assert shown == wanted
    # Each fenced code block is one code block with its blank line inside (no boundary there).
    blocks = workbench.texts("#conversation section.agent pre", scope="chat")
    assert len(blocks) == expected.count("```text\n"), len(blocks)
    assert all(re.search(r"of text\.\n\n+line", b) for b in blocks), blocks[:2]
    assert not any(p.strip().startswith("```") for p in workbench.texts("#conversation p", scope="chat"))
    # The view followed the answer: its last paragraph is on screen.
    last = f'#conversation section.agent p:has-text("{ANSWER_END}")'
    assert workbench.call("inView", scope="chat", selector=last, container="#log")

    # Hidden and shown again, the view is made anew from everything the extension has: the same.
    workbench.run_command("View: Toggle Primary Side Bar Visibility")
    workbench.open_chat()
    workbench.wait_conversation(ANSWER_END, timeout=60.0)
    assert LINE.findall(workbench.conversation()) == wanted
    assert len(workbench.texts("#conversation section.agent pre", scope="chat")) == len(blocks)
