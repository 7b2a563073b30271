"""Composing and navigating on a real Helix screen: typing `/` in a conversation's prompt area
pops up the agent's commands (textDocument/completion), one is picked and sent."""

from __future__ import annotations

import re

from tests.editors.helix.harness import SIDECAR_SERVER, HelixEditor
from tests.editors.helix.test_sessions import prompt_and_wait
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
    helix.normal_mode()
    helix.wait_until(lambda: "/help" in (shown_lines(helix) or [""])[-1], "the picked command in the prompt")
    helix.send_keys("space", "a")
    send = ["Send to agent"]
    helix.wait_until(lambda: helix.selected_item(send) == send[0], "the code action menu, its item selected")
    helix.send_keys("Enter")
    helix.wait_screen(r"Demo agent keywords")  # the agent answered /help
    helix.wait_until(
        lambda: helix.screen().count("_Turn ended (end_turn) · ") == 2, "the second turn's end on screen"
    )


def test_space_capital_s_lists_the_sessions_matching_what_is_typed_and_opens_one(helix: HelixEditor) -> None:
    helix.start("main.py")
    helix.wait_agent_ready()
    prompt_and_wait(helix, "#chunks=2 Fix the login bug", 1)
    helix.workspace_command("acp.session.new")
    prompt_and_wait(helix, "#chunks=2 Write the docs", 2)
    helix.command("open main.py")
    helix.wait_screen(r"main\.py", region="status")
    # Helix 25.07 asks the server only once something is typed: the picker opens empty.
    for _ in range(5):  # keys sent right after Helix opened a document are sometimes lost
        helix.normal_mode()
        helix.send_keys("space", "S")
        try:
            helix.wait_screen(r"kind name container path", timeout=3)
            break
        except AssertionError:
            continue
    helix.wait_screen(r"kind name container path", timeout=1)
    assert re.search(r"│\s+0/0 │", helix.screen()), helix.screen()
    assert not helix.log().of(SIDECAR_SERVER, "workspace/symbol", to_server=True)
    helix.type_text("login")
    helix.wait_screen(r"│ > event Fix the login bug /")  # kind, title, then the folder
    assert re.search(r"│ login\s+1/1 │", helix.screen()), helix.screen()
    assert "Write the docs" not in helix.screen()
    queries = [m.params["query"] for m in helix.log().of(SIDECAR_SERVER, "workspace/symbol", to_server=True)]
    assert queries and queries[-1] == "login", queries
    helix.send_keys("Enter")
    helix.wait_screen(TRANSCRIPT, region="status")  # the session's conversation document
    helix.wait_screen(r"(?m)^\s+1  # Fix the login bug$")


def test_at_pops_up_workspace_files_and_the_picked_mention_goes_along(helix: HelixEditor) -> None:
    helix.write("README.md", "# Readme\nhello\n")
    helix.start("main.py")
    helix.wait_agent_ready()
    helix.workspace_command("acp.prompt", '"#chunks=3 first"')
    helix.wait_screen(TRANSCRIPT, region="status")
    helix.wait_screen(r"_Turn ended \(end_turn\) · ")
    goto_last_line(helix)
    helix.send_keys("o")
    helix.type_text("Explain @READ")
    helix.wait_screen(r"@README\.md +file")  # the popup: the file, of kind file
    assert "main.py" not in helix.screen().split("@README.md")[-1], helix.screen()  # filtered
    helix.send_keys("Tab")
    helix.normal_mode()
    helix.wait_until(
        lambda: (shown_lines(helix) or [""])[-1] == "Explain @README.md", "the mention in the prompt"
    )
    helix.send_keys("space", "a")
    send = ["Send to agent"]
    helix.wait_until(lambda: helix.selected_item(send) == send[0], "the code action menu, its item selected")
    helix.send_keys("Enter")
    helix.wait_screen(r"(?m)^\s+\d+  Context: `README\.md` \(2 lines\)$")  # under the prompt
    # The demo agent says what it received: the file, embedded.
    helix.wait_screen(r"Context received: README\.md \(embedded, 2 lines\)\.")
