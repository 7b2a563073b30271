"""The agent's form question answered in the conversation document of a real Helix: the demo
agent's `#elicit` puts its form into the conversation Helix opened, the user types each answer
after its field's colon, `space a` on the block offers "Answer the agent", and the screen shows
the line that records the answer where the form was (the agent got exactly that)."""

from __future__ import annotations

import re

from tests.editors.helix.harness import HelixEditor
from tests.editors.helix.test_transcript import TRANSCRIPT, shown_lines, transcript_file

ANSWERED = (
    "_The agent asked: A few details, please — you answered: email = dev@example.com, count = 3, "
    "notify = no, channel = beta, targets = linux, mac_"
)


def answer_after_colon(helix: HelixEditor, label: str, value: str) -> None:
    """Find the field's line (`/` search), `A` (append at the end of the line), type, Escape."""
    helix.normal_mode()
    helix.type_text(f"/{label}")
    helix.send_keys("Enter")
    helix.send_keys("A")
    helix.wait_screen(r"^\s*INS\b", region="status")
    helix.type_text(value)
    helix.normal_mode()
    helix.wait_screen(rf"(?m)^\s+\d+  - \*\*{re.escape(label)}\*\* .*: {re.escape(value)}$")


def test_a_form_question_is_answered_by_typing_in_the_block(helix: HelixEditor) -> None:
    helix.start("main.py")
    helix.wait_agent_ready()
    helix.workspace_command("acp.prompt", '"#elicit details"')
    helix.wait_screen(TRANSCRIPT, region="status")
    # The form, in the conversation: each field says what it takes; defaults are filled in.
    helix.wait_screen(r"(?m)^\s+\d+  ### The agent asks: A few details, please$")
    helix.wait_screen(
        r"(?m)^\s+\d+  - \*\*How many\*\* \(`count`; a whole number from 1 to 10; required\): 3$"
    )
    helix.wait_screen(
        r"(?m)^\s+\d+  _Type each answer after its colon, on the same line, then run the code action"
    )
    answer_after_colon(helix, "Your email", "dev@example.com")
    answer_after_colon(helix, "Channel", "beta")
    answer_after_colon(helix, "Targets", "linux, mac")
    # The cursor is on the block (the Targets line): the question's own actions come first.
    helix.send_keys("space", "a")
    actions = ["Answer the agent", "Decline"]
    helix.wait_until(
        lambda: helix.selected_item(actions) == actions[0], "the code action menu, its item selected"
    )
    assert "Decline" in helix.screen()
    helix.send_keys("Enter")
    helix.wait_turns_ended(1)
    # Where the form was: the line that says what the agent was told; then the agent's reply.
    helix.wait_screen(
        r"(?m)^\s+\d+  _The agent asked: A few details, please — you answered: email = dev@example\.com"
    )
    helix.wait_screen(r"Elicitation answer: \{\"action\": \"accept\", \"content\": \{\"channel\": \"beta\"")
    helix.wait_until(lambda: "### The agent asks" not in helix.screen(), "the form gone from the screen")
    print("\n" + helix.screen())
    text = transcript_file(helix).read_text()
    assert ANSWERED in text.split("\n") and "acp-sidecar question" not in text
    reply = (
        'Elicitation answer: {"action": "accept", "content": {"channel": "beta", "count": 3, '
        '"email": "dev@example.com", "notify": false, "targets": ["linux", "mac"]}}'
    )
    assert reply in text
    assert text.index(ANSWERED) < text.index(reply)
    assert any(line.startswith(ANSWERED[:60]) for line in shown_lines(helix))
