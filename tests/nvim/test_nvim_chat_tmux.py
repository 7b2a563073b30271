"""What a Neovim user sees: real Neovim 0.11 in tmux, started like `make demo` (the demo init,
the plugin of this checkout, the sidecar and its demo agent), driven with keys, read with
`capture-pane`. The chat is the sidecar's transcript document of the session."""

from __future__ import annotations

import json
import re

import pytest
from tmux_nvim import TmuxNvim

from tests.chunks import shows_chunk

pytestmark = [pytest.mark.nvim, pytest.mark.editors]

EDITED = "Edited by the acp-sidecar demo agent."


def chat_state(vim: TmuxNvim) -> dict:
    """Where the cursor is, relative to the chat buffer, and what its input area holds."""
    out = vim.lua(
        "(function() local c = require('acp_sidecar.chat'); local b = vim.api.nvim_get_current_buf();"
        " return { is_chat = c.is_chat(b), row = vim.api.nvim_win_get_cursor(0)[1],"
        " count = vim.api.nvim_buf_line_count(b), mode = vim.api.nvim_get_mode().mode,"
        " marker = (c.marker_row(b) or -2) + 1, input = c.input_text(b) } end)()"
    )
    return json.loads(out)


def chat_text(vim: TmuxNvim) -> str:
    return json.loads(
        vim.lua(
            "(function() local c = require('acp_sidecar.chat'); if not c.visible() then return '' end;"
            " return table.concat(vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(c.win), 0, -1, false),"
            " '\\n') end)()"
        )
    )


def test_make_demo_opens_the_chat_and_a_prompt_typed_there_streams_while_the_cursor_stays(
    vim: TmuxNvim,
) -> None:
    vim.start_demo("README.md")
    # make demo: the chat is open next to README.md, on a new session, ending in the input area.
    screen = vim.wait_screen(r"## Your prompt")
    assert "<C-s> send" in screen and "ACP: untitled [idle]" in screen, screen
    st = chat_state(vim)
    assert st["is_chat"] and st["row"] == st["count"] == st["marker"] + 1, st

    vim.keys("i")
    vim.type("#chunks=700 #slow=15 stream please")
    vim.keys("C-s")
    vim.wait_screen(r"c3 c4 c5 ")
    # Typing while the answer streams: nothing of it is disturbed, the cursor stays in the input area.
    vim.type("my next question")
    assert not shows_chunk(vim.screen(), 699)
    # The answer is far longer than the window: the window follows it, the input area stays in view.
    screen = vim.wait_screen(r"c5\d\d c5\d\d ")
    assert "my next question" in screen and "c0 c1 c2" not in screen, screen
    st = chat_state(vim)
    assert st["mode"] == "i" and st["input"] == "my next question", st
    assert st["row"] == st["count"] and st["row"] > st["marker"], st
    screen = vim.wait_screen(r"Turn ended \(end_turn\)")
    assert "c699" in screen and "my next question" in screen, screen
    st = chat_state(vim)
    assert st["input"] == "my next question" and st["row"] == st["count"], st
    text = chat_text(vim)
    assert text.count("#chunks=700 #slow=15 stream please") == 1, text
    # The prompt reads as typed: indented under "## You", no backslash before its "#".
    assert "\n## You\n\n    #chunks=700 #slow=15 stream please\n" in text, text
    assert "\\#chunks" not in text, text

    # The typed question goes out with <C-s> too; the input area empties.
    vim.keys("C-s")
    vim.wait(lambda: chat_text(vim).count("\n## You\n") == 2, "the second prompt in the chat")

    vim.wait(lambda: chat_state(vim)["input"] == "", "the input area cleared")
    vim.wait_screen(r"ACP: stream please \[idle\]")

    # Cancel from the chat: <C-c> while a long answer streams.
    vim.type("#chunks=2000 #slow=100 a long one")
    vim.keys("Escape")
    vim.keys("Enter")  # <CR> in normal mode in the input area sends
    vim.wait_screen(r"c3 c4 ")
    vim.wait_screen(r"ACP: . stream please \[running\]")  # the spinner turns in the statusline
    vim.keys("C-c")
    screen = vim.wait_screen(r"Cancelled \(cancelled\)")
    assert not shows_chunk(screen, 1999)
    vim.wait_screen(r"ACP: stream please \[idle\]")


def test_an_edit_reviewed_as_a_diff_accepted_rejected_and_answered_later(vim: TmuxNvim) -> None:
    vim.start_demo("README.md")
    vim.wait_screen(r"## Your prompt")
    # An unsaved change in README.md: the review shows it, the agent edits the buffer's text.
    vim.keys("C-w", "h")
    vim.keys("G", "o")
    vim.type("unsaved line")
    vim.keys("Escape")
    vim.keys("C-w", "l")

    def send(prompt: str) -> None:
        vim.keys("G", "i")
        vim.type(prompt)
        vim.keys("C-s")

    def readme_buffer() -> list[str]:
        return json.loads(vim.lua("vim.api.nvim_buf_get_lines(vim.fn.bufnr('README.md'), 0, -1, false)"))

    disk = (vim.ws / "README.md").read_text()
    send("#edit")
    screen = vim.wait_screen(r"The agent asks: Edit README.md")
    assert "current README.md" in screen and "proposed by the agent" in screen, screen
    assert screen.count("unsaved line") == 2 and EDITED in screen, screen
    assert "1: Allow" in screen and "3: Reject" in screen, screen
    vim.type("1")
    vim.keys("Enter")
    vim.wait(lambda: readme_buffer()[-1] == EDITED, "the accepted edit in the buffer")
    assert readme_buffer() == [
        "# Practice repo",
        "",
        "A small file for the agent to read.",
        "unsaved line",
        "",
        EDITED,
    ]
    assert (vim.ws / "README.md").read_text() == disk  # open in the editor: the buffer took it
    vim.wait_screen(r"\[idle\]")
    assert "proposed by the agent" not in vim.screen()  # the review closed

    # Another one, rejected: the buffer stays.
    vim.keys("C-w", "l")
    send("#edit")
    vim.wait_screen(r"The agent asks: Edit README.md")
    vim.type("3")
    vim.keys("Enter")
    vim.wait(lambda: "rejected" in chat_text(vim).lower(), "the rejection in the chat")
    assert readme_buffer()[-1] == EDITED and readme_buffer().count(EDITED) == 1

    # A third one, dismissed: it stays pending, the chat says so, gp answers it later.
    vim.wait_screen(r"\[idle\]")
    vim.keys("C-w", "l")
    send("#edit")
    vim.wait_screen(r"The agent asks: Edit README.md")
    vim.keys("Enter")  # an empty answer dismisses the prompt
    vim.wait_screen(r"still waiting")
    vim.keys("Enter")
    vim.keys("q")  # close the review: later
    screen = vim.wait_screen(r"permission request\(s\) waiting: gp to answer")
    assert "[waiting_permission]" in screen, screen
    assert readme_buffer().count(EDITED) == 1
    vim.keys("g", "p")
    vim.wait_screen(r"The agent asks: Edit README.md")
    vim.type("1")
    vim.keys("Enter")
    vim.wait(lambda: readme_buffer().count(EDITED) == 2, "the edit answered later in the buffer")
    vim.wait_screen(r"\[idle\]")
    # Saved by the user: the disk has both edits.
    vim.keys(":wall", "Enter")
    vim.wait(lambda: (vim.ws / "README.md").read_text().count(EDITED) == 2, "README.md written")


def test_a_proposal_changed_in_review_lands_as_the_user_left_it(vim: TmuxNvim) -> None:
    """The proposal side of the review is the whole file after the edit, and editable: the user
    dismisses the question, rewrites the agent's line, accepts with ga; the buffer gets that."""
    vim.start_demo("README.md", env={"ACP_DEMO_DIFFS": "snippet"})  # only the changed part, as Claude
    vim.wait_screen(r"## Your prompt")
    vim.keys("G", "i")
    vim.type("#edit")
    vim.keys("C-s")
    screen = vim.wait_screen(r"The agent asks: Edit README.md")
    # The whole file on both sides (a snippet diff applied where it belongs), not the snippet alone.
    assert screen.count("# Practice repo") == 2 and EDITED in screen, screen
    assert "proposed by the agent (editable)" in screen, screen
    vim.keys("Enter")  # dismiss the question: the review stays
    vim.wait_screen(r"still waiting")
    vim.keys("Enter")
    vim.keys("G", "c", "c")
    vim.type("My own line, not the agent's.")
    vim.keys("Escape")
    vim.keys("g", "a")

    def readme_buffer() -> list[str]:
        return json.loads(vim.lua("vim.api.nvim_buf_get_lines(vim.fn.bufnr('README.md'), 0, -1, false)"))

    vim.wait(
        lambda: readme_buffer()[-1] == "My own line, not the agent's.", "the reviewed text in the buffer"
    )
    assert EDITED not in readme_buffer()
    assert readme_buffer()[0] == "# Practice repo"
    vim.wait_screen(r"\[idle\]")


def test_a_file_the_agent_writes_itself_reloads_in_its_buffer(vim: TmuxNvim) -> None:
    """An agent that edits the disk itself (claude-agent-acp; the demo agent with own-writes):
    the open, unchanged buffer shows the new text when the edit ends, without :e."""
    vim.start_demo("README.md", env={"ACP_DEMO_CAPS": "own-writes"})
    vim.wait_screen(r"## Your prompt")
    vim.keys("G", "i")
    vim.type("#edit")
    vim.keys("C-s")
    vim.wait_screen(r"The agent asks: Edit README.md")
    vim.type("1")
    vim.keys("Enter")
    vim.wait(lambda: EDITED in (vim.ws / "README.md").read_text(), "the agent's own write on disk")
    vim.wait(
        lambda: (
            EDITED
            in json.loads(vim.lua("vim.api.nvim_buf_get_lines(vim.fn.bufnr('README.md'), 0, -1, false)"))
        ),
        "the buffer reloaded",
    )
    screen = vim.wait_screen(r"\[idle\]")
    assert EDITED in screen, screen


def two_chats(vim: TmuxNvim) -> None:
    """The demo started, a session titled First chat, then a new one titled Second chat."""
    vim.start_demo("README.md")
    vim.wait_screen(r"## Your prompt")
    vim.keys("i")
    vim.type("#title First chat")
    vim.keys("C-s")
    vim.wait_screen(r"ACP: First chat \[idle\]")
    vim.keys("Escape")
    vim.keys(":AcpNew", "Enter")
    # A new session: the chat follows it, empty, and the statusline says untitled.
    vim.wait_screen(r"ACP: untitled \[idle\]")
    vim.wait(lambda: "First chat" not in chat_text(vim), "the chat on the new session")
    assert chat_state(vim)["is_chat"]
    vim.keys("G", "i")
    vim.type("#title Second chat")
    vim.keys("C-s")
    vim.wait_screen(r"ACP: Second chat \[idle\]")
    vim.keys("Escape")


def test_sessions_picker_reopens_a_session_with_its_history(vim: TmuxNvim) -> None:
    two_chats(vim)
    vim.keys("g", "s")
    screen = vim.wait_screen(r"ACP sessions")
    rows = [line for line in screen.splitlines() if " — " in line]
    # Newest first, the active one marked, the workspace shown relative to ~, then when.
    assert len(rows) == 2, rows
    assert "● Second chat — ~/ws — 2" in rows[0], rows
    assert "  First chat — ~/ws — 2" in rows[1], rows
    number = rows[1].split(":")[0].strip()
    vim.type(number)
    vim.keys("Enter")  # opens it at once
    vim.wait_screen(r"ACP: First chat \[idle\]")
    vim.wait(lambda: "#title First chat" in chat_text(vim), "the first chat's history in the chat")
    screen = vim.screen()
    assert "## You" in screen and "#title First chat" in screen, screen


def test_session_deleted_from_the_picker_after_asking(vim: TmuxNvim) -> None:
    """Issue 25 as a user does it: gS, the session, "Delete session…", then "Delete"; the next
    gs lists the other session only."""
    two_chats(vim)
    vim.keys("g", "S")
    screen = vim.wait_screen(r"ACP sessions: choose one, then what to do")
    for label in ("Open", "Fork session", "Rename…", "Delete session…"):
        assert label not in screen, "the actions come after the session is chosen"
    first = [line for line in screen.splitlines() if "First chat — " in line]
    assert len(first) == 1, screen
    vim.type(first[0].split(":")[0].strip())
    vim.keys("Enter")
    screen = vim.wait_screen(r"Session First chat")
    for n, label in enumerate(("Open", "Fork session", "Rename…", "Delete session…"), 1):
        assert f"{n}: {label}" in screen, screen
    vim.type("4")
    vim.keys("Enter")
    screen = vim.wait_screen(r"Delete session First chat\?")
    assert "1: Delete" in screen and "2: Cancel" in screen, screen
    vim.type("1")
    vim.keys("Enter")
    vim.wait_screen(r"deleted session First chat")
    vim.keys("g", "s")
    screen = vim.wait_screen(r"ACP sessions")
    rows = [line for line in screen.splitlines() if " — " in line]
    assert len(rows) == 1 and "● Second chat" in rows[0], rows
    vim.keys("Escape")
    vim.wait_screen(r"ACP: Second chat \[idle\]")


def test_help_opens_in_a_fresh_demo(vim: TmuxNvim) -> None:
    vim.start_demo("README.md")
    vim.wait_screen(r"## Your prompt")
    vim.keys("Escape")
    vim.keys(":help acp_sidecar", "Enter")
    screen = vim.wait_screen(r"acp_sidecar\.txt")
    assert "E149" not in screen and "Drive ACP coding agents from Neovim" in screen, screen


def test_a_review_opens_at_the_change_with_the_unchanged_lines_folded(vim: TmuxNvim) -> None:
    """A change at the end of a 300-line file: the review's first screen shows it (the cursor on
    it, the lines before it folded as diff mode folds them), above the picker that asks about it."""
    (vim.ws / "long.txt").write_text("".join(f"line {n}\n" for n in range(1, 301)))
    vim.start_demo("long.txt")
    vim.wait_screen(r"## Your prompt")
    vim.keys("G", "i")
    vim.type("#edit=long.txt")
    vim.keys("C-s")
    screen = vim.wait_screen(r"The agent asks: Edit long.txt")
    # The change and the lines just before it, on both sides; the 290-odd lines above are a fold.
    assert EDITED in screen and screen.count("line 300") == 2, screen
    assert "line 1 " not in screen and "line 150" not in screen, screen
    assert re.search(r"\+-+ *2\d\d lines", screen), screen
    vim.keys("Enter")  # dismiss the question: the review stays
    vim.wait_screen(r"still waiting")
    vim.keys("Enter")
    review = json.loads(
        vim.lua(
            "(function() return { row = vim.api.nvim_win_get_cursor(0)[1],"
            " line = vim.api.nvim_get_current_line(), diff = vim.wo.diff,"
            " folded = vim.fn.foldclosed(1) } end)()"
        )
    )
    # The cursor on the first changed line of the proposal; line 1 inside a closed fold.
    assert review["diff"] and review["row"] == 301 and review["folded"] == 1, review
    vim.keys("g", "x")
    vim.wait(lambda: "rejected" in chat_text(vim).lower(), "the rejection in the chat")


def test_an_edit_of_two_files_reviews_both_and_accepts_them_as_left(vim: TmuxNvim) -> None:
    """One tool call that edits two files: a review tab for each (]f moves to the next), the user
    rewrites the second proposal, ga accepts both: the first as proposed, the second as left."""
    (vim.ws / "notes.txt").write_text("My notes.\n")
    vim.start_demo("README.md")
    vim.wait_screen(r"## Your prompt")
    vim.keys("G", "i")
    vim.type("#edit=README.md,notes.txt")
    vim.keys("C-s")
    screen = vim.wait_screen(r"The agent asks: Edit README.md, notes.txt")
    assert "current README.md" in screen and "file 1/2" in screen and EDITED in screen, screen
    vim.keys("Enter")
    # Said in the message line; on a loaded machine a redraw may clear it before the screen is
    # read, so its place in the message history counts too.
    vim.wait(
        lambda: "still waiting" in vim.screen() or "still waiting" in vim.messages(),
        "the request said to be still waiting",
    )
    vim.keys("Enter")
    vim.keys("]", "f")
    screen = vim.wait_screen(r"current notes.txt")
    assert "file 2/2" in screen and "My notes." in screen and EDITED in screen, screen
    # This file's review, too, has its cursor on its first change.
    assert json.loads(vim.lua("vim.api.nvim_win_get_cursor(0)[1]")) == 2
    vim.keys("G", "c", "c")
    vim.type("My own last line.")
    vim.keys("Escape")
    vim.keys("g", "a")

    def readme_buffer() -> list[str]:
        return json.loads(vim.lua("vim.api.nvim_buf_get_lines(vim.fn.bufnr('README.md'), 0, -1, false)"))

    vim.wait(lambda: readme_buffer()[-1] == EDITED, "the first file's edit in its buffer")
    vim.wait(
        lambda: (vim.ws / "notes.txt").read_text() == "My notes.\n\nMy own last line.\n",
        "the second file as the user left it",
    )
    vim.wait_screen(r"\[idle\]")
    assert "proposed by the agent" not in vim.screen()  # both review tabs closed


def test_a_buffer_changed_after_the_agent_asked_is_reviewed_as_it_is_now(vim: TmuxNvim) -> None:
    """The request's proposal was computed from the buffer as it was; the user types in it before
    answering: the review asks the sidecar again and shows the new line on both sides."""
    vim.start_demo("README.md")
    vim.wait_screen(r"## Your prompt")
    vim.keys("G", "i")
    vim.type("#edit")
    vim.keys("C-s")
    vim.wait_screen(r"The agent asks: Edit README.md")
    vim.keys("Enter")
    vim.wait_screen(r"still waiting")
    vim.keys("Enter")
    vim.keys("q")  # the review closes, the request waits
    vim.wait(lambda: "proposed by the agent" not in vim.screen(), "the review closed")
    vim.keys("C-w", "h")
    vim.keys("g", "g", "O")
    vim.type("Typed after the agent asked.")
    vim.keys("Escape")
    vim.keys(":AcpPermission", "Enter")
    screen = vim.wait_screen(r"The agent asks: Edit README.md")
    assert screen.count("Typed after the agent asked.") == 2 and EDITED in screen, screen
    vim.type("1")
    vim.keys("Enter")

    def readme_buffer() -> list[str]:
        return json.loads(vim.lua("vim.api.nvim_buf_get_lines(vim.fn.bufnr('README.md'), 0, -1, false)"))

    vim.wait(lambda: readme_buffer()[-1] == EDITED, "the accepted edit in the buffer")
    vim.wait_screen(r"\[idle\]")


def test_an_agents_question_is_asked_field_by_field(vim: TmuxNvim) -> None:
    """The demo agent's #elicit form: each field asked in turn at the command line (vim.ui.input)
    or as a numbered list (vim.ui.select); typed answers are converted by the sidecar."""
    vim.start_demo("README.md")
    vim.wait_screen(r"## Your prompt")
    vim.keys("G", "i")
    vim.type("#elicit")
    vim.keys("C-s")
    vim.wait_screen(r"A few details, please — Your email")
    vim.type("dev@example.com")
    vim.keys("Enter")
    screen = vim.wait_screen(r"A few details, please — How many: 3")  # the default, pre-filled
    vim.keys("Enter")
    vim.wait_screen(r"A few details, please — Ratio:")
    vim.keys("Enter")  # optional: left out
    screen = vim.wait_screen(r"Notify the team")
    assert "(no answer)" in screen and "Yes" in screen, screen
    vim.type("2")
    vim.keys("Enter")
    screen = vim.wait_screen(r"A few details, please — Channel")
    assert "Stable" in screen and "Beta" in screen, screen
    vim.type("2")
    vim.keys("Enter")
    vim.wait_screen(r"Targets \[comma separated\]")
    vim.type("linux, mac")
    vim.keys("Enter")
    vim.wait(lambda: "Elicitation answer" in chat_text(vim), "the agent's answer in the chat")
    answer = json.loads(chat_text(vim).split("Elicitation answer: ", 1)[1].splitlines()[0])
    assert answer == {
        "action": "accept",
        "content": {
            "email": "dev@example.com",
            "count": 3,
            "notify": True,
            "channel": "beta",
            "targets": ["linux", "mac"],
        },
    }
    # Escape at the first field declines the whole question.
    vim.keys("Escape")
    vim.keys("G", "i")
    vim.type("#elicit=choice")
    vim.keys("C-s")
    vim.wait_screen(r"Channel")
    vim.keys("Escape")
    vim.wait(lambda: '{"action": "decline"}' in chat_text(vim), "the decline in the chat")


def test_grn_in_the_chat_renames_the_session(vim: TmuxNvim) -> None:
    """The chat's rename key is Neovim's own rename key, `grn` (a `gr` of its own made Neovim wait
    for `gra`, `grr` and the others before renaming)."""
    vim.start_demo("README.md")
    vim.wait_screen(r"grn rename")
    vim.keys("Escape")
    vim.type("grn")
    vim.wait_screen(r"Rename session:")
    vim.keys("C-u")
    vim.type("Renamed in the chat")
    vim.keys("Enter")
    vim.wait_screen(r"ACP: Renamed in the chat \[idle\]")
    # The status line (acp/sessionInfo) and the conversation's header (the document's retitle,
    # written by the transcript worker) arrive separately: the header follows, under load later.
    vim.wait(lambda: chat_text(vim).startswith("# Renamed in the chat\n"), "the new title in the chat")
