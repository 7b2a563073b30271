"""A fork on a real Helix screen: `space a`, "Fork this session" in a conversation opens the fork's
own conversation (the parent's turns, then the line saying where it forked), and a prompt written
there goes to the fork."""

from __future__ import annotations

import re
from pathlib import Path

from tests.editors.helix.harness import HelixEditor

ACTIONS = ["Send to agent", "Fork this session"]


def test_space_a_forks_the_session_and_opens_the_forks_conversation(helix: HelixEditor) -> None:
    helix.start("main.py")
    helix.wait_agent_ready()
    helix.workspace_command("acp.prompt", '"#title Helix parent"')
    helix.wait_screen(r"(?m)^\s+1  # Helix parent$")  # its conversation opened
    helix.wait_screen(r"_Turn ended \(end_turn\) · ")

    open_actions(helix)
    helix.send_keys("Down")
    helix.wait_until(lambda: helix.selected_item(ACTIONS) == ACTIONS[1], "the fork action to be selected")
    helix.send_keys("Enter")
    # The fork's document is on screen: its title, the parent's turn, the fork line.
    helix.wait_screen(r"(?m)^\s+1  # Fork: Helix parent$")
    helix.wait_screen(r"_Forked from “Helix parent” at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\._")
    assert helix.screen().count("_Turn ended (end_turn) · ") == 1, helix.screen()

    # A prompt written in the fork's prompt area goes to the fork.
    goto_fork_end(helix)
    helix.send_keys("o")
    helix.type_text("#chunks=3 on the fork")
    helix.wait_screen(r"(?m)^\s+\d+  #chunks=3 on the fork$")
    helix.normal_mode()
    open_actions(helix)
    helix.send_keys("Enter")
    helix.wait_until(
        lambda: helix.screen().count("_Turn ended (end_turn) · ") == 2, "the fork's own turn end on screen"
    )
    helix.wait_screen(r"(?m)^\s+1  # Fork: Helix parent$")
    documents = {p.read_text().split("\n", 1)[0]: p.read_text() for p in transcripts(helix)}
    assert set(documents) == {"# Helix parent", "# Fork: Helix parent"}
    assert "on the fork" in documents["# Fork: Helix parent"]
    assert "on the fork" not in documents["# Helix parent"]


def transcripts(helix: HelixEditor) -> list[Path]:
    return list((helix.state_dir / "transcripts" / "acp-sidecar-demo").glob("*.md"))


def goto_fork_end(helix: HelixEditor) -> None:
    """The cursor on the fork's last line (`ge` again until the status line says so: keys sent
    right after Helix opened a document are sometimes lost)."""
    (fork,) = [p for p in transcripts(helix) if p.read_text().startswith("# Fork: ")]
    last = len(fork.read_text().rstrip("\n").split("\n"))

    def at_last_line() -> bool:
        helix.normal_mode()
        helix.send_keys("g", "e")
        return re.search(rf"\b{last}:\d+$", helix.status_line()) is not None

    helix.wait_until(at_last_line, "the cursor on the fork's last line")


def open_actions(helix: HelixEditor) -> None:
    """`space a` until the code action menu shows, its first item selected (keys sent right after
    Helix opened a document are sometimes lost)."""
    for _ in range(5):
        helix.normal_mode()
        helix.send_keys("space", "a")
        try:
            helix.wait_until(lambda: helix.selected_item(ACTIONS) == ACTIONS[0], "the actions", timeout=3)
            return
        except AssertionError:
            continue
    helix.wait_until(lambda: helix.selected_item(ACTIONS) == ACTIONS[0], "the actions, the first selected")
