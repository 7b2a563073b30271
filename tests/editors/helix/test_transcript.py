"""The conversation on a real Helix screen: a prompt opens the session's transcript document
(window/showDocument) and the answer streams into it (workspace/applyEdit); the prompt area is
written in Helix and sent with the code action "Send to agent" (space a)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.chunks import shows_chunk
from tests.editors.helix.harness import HelixEditor

TRANSCRIPT = r"/transcripts/acp-sidecar-demo/demo-[0-9a-f-]+\.md"


def shown_lines(helix: HelixEditor) -> list[str]:
    """The document's lines on screen, without Helix's line numbers (rows that show a line)."""
    lines = []
    for row in helix.lines()[:-2]:
        found = re.match(r"^\s*(\d+)(?: {2}(.*))?$", row)
        if found:
            lines.append((found.group(2) or "").rstrip())
    return lines


def file_lines(helix: HelixEditor) -> list[str]:
    """The transcript file's lines as a screen shows them (trailing blanks are not drawn)."""
    return [line.rstrip() for line in transcript_file(helix).read_text().rstrip("\n").split("\n")]


def transcript_file(helix: HelixEditor) -> Path:
    [path] = (helix.state_dir / "transcripts" / "acp-sidecar-demo").glob("*.md")
    return path


def goto_last_line(helix: HelixEditor) -> None:
    """`ge`, until the status line says the cursor is on the document's last line (keys sent
    right after Helix opened a document are sometimes lost)."""
    last = len(file_lines(helix))
    for _ in range(5):
        helix.send_keys("Escape")
        helix.send_keys("g", "e")
        try:
            helix.wait_screen(rf"\b{last}:\d+$", region="status", timeout=3)
            return
        except AssertionError:
            continue
    helix.wait_screen(rf"\b{last}:\d+$", region="status", timeout=1)


def test_a_prompt_opens_the_transcript_and_the_answer_streams_on_screen(helix: HelixEditor) -> None:
    helix.start("main.py")
    helix.wait_agent_ready()
    helix.workspace_command("acp.prompt", '"#chunks=40 #slow=100 stream please"')
    helix.wait_screen(TRANSCRIPT, region="status")  # Helix opened it (showDocument)
    helix.wait_screen(r"(?m)^\s+\d+  ## You$")
    helix.wait_screen(r"\\#chunks=40 #slow=100 stream please")
    # Streaming: the first chunks are on screen while the turn still runs.
    helix.wait_screen(r"c3 c4 c5 ")
    assert not shows_chunk(helix.screen(), 39) and "Turn ended" not in helix.screen(), helix.screen()
    helix.wait_screen(r"c38 c39")
    helix.wait_screen(r"_Turn ended \(end_turn\) · ")
    # Helix shows exactly the file (the document fits the screen).
    helix.wait_until(lambda: shown_lines(helix) == file_lines(helix), "the screen to show the file")


def test_the_prompt_area_is_sent_with_the_code_action_and_cleared(helix: HelixEditor) -> None:
    helix.start("main.py")
    helix.wait_agent_ready()
    helix.workspace_command("acp.prompt", '"#chunks=5 first"')
    helix.wait_screen(TRANSCRIPT, region="status")
    helix.wait_screen(r"_Turn ended \(end_turn\) · ")
    # The user writes below the marker line (the last line), then runs the code action.
    goto_last_line(helix)
    helix.send_keys("o")
    helix.type_text("#chunks=30 #slow=50 second question")
    helix.send_keys("Escape")
    helix.wait_screen(r"(?m)^\s+\d+  #chunks=30 #slow=50 second question$")
    helix.send_keys("space", "a")
    send = ["Send to agent"]
    helix.wait_until(lambda: helix.selected_item(send) == send[0], "the code action menu, its item selected")
    helix.send_keys("Enter")
    helix.wait_screen(r"(?m)^\s+\d+  \\#chunks=30 #slow=50 second question$")  # now in the conversation
    helix.wait_screen(r"c28 c29")
    helix.wait_until(
        lambda: helix.screen().count("_Turn ended (end_turn) · ") == 2, "the second turn's end on screen"
    )
    helix.wait_until(lambda: shown_lines(helix) == file_lines(helix), "the screen to show the file")
    lines = shown_lines(helix)
    assert lines[-1].startswith("<!-- acp-sidecar: write your prompt below"), lines[-3:]  # area cleared


def test_a_terminal_s_output_is_shown_in_the_conversation(helix: HelixEditor) -> None:
    """The demo agent runs a command in the sidecar's terminal (after the permission popup): its
    output appears fenced in the conversation Helix shows, then how it ended."""
    helix.start("main.py")
    helix.wait_agent_ready()
    helix.workspace_command("acp.prompt", '"#terminal"')
    helix.wait_screen(r"The agent asks permission: Run `")
    helix.send_keys("Enter")  # "Allow" is preselected
    helix.wait_screen(TRANSCRIPT, region="status")
    helix.wait_screen(r"(?m)^\s+\d+  ```text$")
    helix.wait_screen(r"(?m)^\s+\d+  demo terminal line 0 ✓$")
    helix.wait_screen(r"exited with code 0\.")
    helix.wait_screen(r"_Turn ended \(end_turn\) · ")
    text = transcript_file(helix).read_text()
    assert "demo terminal line 4 ✓" in text and "ended with code 0" in text
