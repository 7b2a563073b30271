"""Composing and navigating on a real Helix screen: typing `/` in a conversation's prompt area
pops up the agent's commands (textDocument/completion), one is picked and sent."""

from __future__ import annotations

from tests.editors.helix.harness import HelixEditor
from tests.editors.helix.test_transcript import TRANSCRIPT, goto_last_line, shown_lines


def test_slash_pops_up_the_agents_commands_and_the_picked_one_is_sent(helix: HelixEditor) -> None:
    helix.start("main.py")
    helix.wait_agent_ready()
    helix.workspace_command("acp.prompt", '"#chunks=3 first"')
    helix.wait_screen(TRANSCRIPT, region="status")
    helix.wait_screen(r"_Turn ended \(end_turn\) · ")
    goto_last_line(helix)
    helix.send_keys("o")
    helix.type_text("/he")
    # The completion popup: the demo agent's /help with its description.
    helix.wait_screen(r"/help")
    assert "/edit" not in helix.screen(), helix.screen()  # filtered by what was typed
    helix.send_keys("Tab")  # select (and insert) the first item
    helix.send_keys("Escape")
    helix.wait_until(lambda: "/help" in (shown_lines(helix) or [""])[-1], "the picked command in the prompt")
    helix.send_keys("space", "a")
    send = ["Send to agent"]
    helix.wait_until(lambda: helix.selected_item(send) == send[0], "the code action menu, its item selected")
    helix.send_keys("Enter")
    helix.wait_screen(r"Demo agent keywords")  # the agent answered /help
    helix.wait_until(
        lambda: helix.screen().count("_Turn ended (end_turn) · ") == 2, "the second turn's end on screen"
    )
