"""The conversation on a real Helix screen: a prompt opens the session's transcript document
(window/showDocument) and the answer streams into it (workspace/applyEdit); the prompt area is
written in Helix and sent with the code action "Send to agent" (space a)."""

from __future__ import annotations

import functools
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
        helix.normal_mode()
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
    helix.wait_screen(r"(?m)^\s+\d+      #chunks=40 #slow=100 stream please$")  # as typed, indented
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
    helix.normal_mode()
    helix.wait_screen(r"(?m)^\s+\d+  #chunks=30 #slow=50 second question$")
    helix.send_keys("space", "a")
    send = ["Send to agent"]
    helix.wait_until(lambda: helix.selected_item(send) == send[0], "the code action menu, its item selected")
    helix.send_keys("Enter")
    helix.wait_screen(r"(?m)^\s+\d+      #chunks=30 #slow=50 second question$")  # now in the conversation
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


def send_prompt_area(helix: HelixEditor, text: str) -> None:
    """Write `text` below the marker line (the document's last line) and run "Send to agent"."""
    goto_last_line(helix)
    helix.send_keys("o")
    helix.type_text(text)
    helix.normal_mode()
    helix.wait_screen(rf"(?m)^\s+\d+  {re.escape(text)}$")
    helix.send_keys("space", "a")
    send = ["Send to agent"]
    helix.wait_until(lambda: helix.selected_item(send) == send[0], "the code action menu, its item selected")
    helix.send_keys("Enter")


def answer_under(helix: HelixEditor, prompt: str) -> str | None:
    """The demo agent's answer paragraph under `prompt` if both are on screen (a plan and a tool
    call come between them: the answer starts some lines below the prompt)."""
    lines = shown_lines(helix)
    shown = "    " + prompt  # the user's words in the conversation: as typed, indented
    if shown not in lines:
        return None
    after = lines[lines.index(shown) :]
    return next((line for line in after if line.startswith("README.md is at the root")), None)


def streaming_answer(helix: HelixEditor, prompt: str) -> str | None:
    """The answer under `prompt` while it is still short (the whole one is wider than the screen)."""
    answer = answer_under(helix, prompt)
    return answer if answer is not None and len(answer) < 120 else None


def whole_answer(helix: HelixEditor, prompt: str, partial: str) -> bool:
    """The answer grown past `partial`, and the turn's end near the bottom of the screen."""
    answer = answer_under(helix, prompt)
    ended = "_Turn ended (end_turn) · " in "\n".join(shown_lines(helix)[-8:])
    return answer is not None and len(answer) > len(partial) and ended


def test_follow_ups_in_a_long_conversation_stream_on_screen(helix: HelixEditor) -> None:
    helix.start("main.py")
    helix.wait_agent_ready()
    # A first prompt of 30 lines: the conversation is longer than the screen (43 text rows).
    lines = "\\n".join(f"line {i}" for i in range(30))
    helix.workspace_command("acp.prompt", f'"#chunks=5 first\\n{lines}"')
    helix.wait_screen(TRANSCRIPT, region="status")
    helix.wait_turns_ended(1)
    for turn in range(3):
        # The demo agent's normal reply: a plan, a read of README.md, then the answer streamed
        # slowly, some 15 lines below the prompt.
        prompt = f"follow-up {turn} about README.md #slow=150"
        send_prompt_area(helix, prompt)
        # While it streams, the prompt and the answer so far are on screen (the whole answer is
        # wider than the screen: a short one is still streaming).
        partial = helix.wait_until(
            functools.partial(streaming_answer, helix, prompt), f"follow-up {turn}'s answer streaming"
        )
        helix.wait_turns_ended(2 + turn)
        # Then all of it, down to the turn's end and the prompt area.
        helix.wait_until(
            functools.partial(whole_answer, helix, prompt, partial),
            f"follow-up {turn}'s whole answer and turn end on screen (it streamed {partial!r})",
        )
    assert len(file_lines(helix)) > 80, "the conversation is much longer than the screen"
    shown, tail = shown_lines(helix), file_lines(helix)[-len(shown_lines(helix)) :]
    # The screen shows the end of the document (long lines cut at the screen's edge).
    assert all(line.startswith(on_screen) for on_screen, line in zip(shown, tail, strict=True)), shown
