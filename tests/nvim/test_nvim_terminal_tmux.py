"""An agent's terminal as a Neovim user sees it: real Neovim 0.11 in tmux, started like `make demo`,
read with `capture-pane`. The demo agent's `#terminal` asks permission to run a command; allowed,
the sidecar runs it and the chat (the session's transcript document) shows its output, fenced, then
how it ended. A running terminal is killed from the chat with a code action."""

from __future__ import annotations

import json
import re

import pytest
from tmux_nvim import TmuxNvim

pytestmark = [pytest.mark.nvim, pytest.mark.editors]


def chat_text(vim: TmuxNvim) -> str:
    text: str = json.loads(
        vim.lua(
            "(function() local c = require('acp_sidecar.chat'); if not c.visible() then return '' end;"
            " return table.concat(vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(c.win), 0, -1, false),"
            " '\\n') end)()"
        )
    )
    return text


def send_from_chat(vim: TmuxNvim, prompt: str) -> None:
    vim.wait_screen(r"## Your prompt")
    vim.keys("G", "i")
    vim.type(prompt)
    vim.keys("C-s")


def allow(vim: TmuxNvim) -> str:
    """The permission picker for the command, answered "Allow" as a user does (its number)."""
    screen = vim.wait_screen(r"The agent asks: Run `")
    allow_rows = [line for line in screen.splitlines() if re.match(r"^\d+: Allow$", line.strip())]
    assert len(allow_rows) == 1, screen
    vim.type(allow_rows[0].split(":")[0].strip())
    vim.keys("Enter")
    return screen


def test_a_terminal_s_output_and_its_end_are_shown_in_the_chat(vim: TmuxNvim) -> None:
    vim.start_demo("README.md")
    send_from_chat(vim, "#terminal")
    allow(vim)
    screen = vim.wait_screen(r"(?m)^.*demo terminal line 4 ✓")
    # The output lines as the command printed them, inside a ```text fence, under the command.
    lines = [line.rstrip() for line in screen.splitlines()]
    fence = next(i for i, line in enumerate(lines) if line.endswith("```text"))
    for n in range(5):
        assert any(line.endswith(f"demo terminal line {n} ✓") for line in lines[fence + 1 :]), screen
    # "**Terminal:** `COMMAND` in `CWD`" above it (Markdown's ** concealed on screen).
    assert any("Terminal: `" in line and "python" in line for line in lines[:fence]), screen
    screen = vim.wait_screen(r"exited with code 0\.")
    screen = vim.wait_screen(r"Turn ended \(end_turn\)")
    assert "demo terminal line 0 ✓" in screen and "exited with code 0." in screen, screen
    vim.wait_screen(r"\[idle\]")
    text = chat_text(vim)
    assert "```text\ndemo terminal line 0 ✓\n" in text, text


def test_a_running_terminal_killed_from_the_chat_shows_how_it_ended(vim: TmuxNvim) -> None:
    """`#terminal=slow` prints a line every 0.2 s for two minutes; the code action "Kill terminal:"
    (vim.lsp.buf.code_action() in the chat) ends it: the chat says it was ended by SIGTERM."""
    vim.start_demo("README.md")
    send_from_chat(vim, "#terminal=slow")
    allow(vim)
    vim.wait_screen(r"slow terminal line 3\b")
    assert "was ended by" not in vim.screen()
    vim.keys("Escape")
    vim.keys(":lua vim.lsp.buf.code_action()", "Enter")
    screen = vim.wait_screen(r"\d+: Kill terminal: ")
    kill = [line for line in screen.splitlines() if re.match(r"^\d+: Kill terminal: ", line.strip())]
    assert len(kill) == 1 and "python" in kill[0], screen
    vim.type(kill[0].strip().split(":")[0])
    vim.keys("Enter")
    screen = vim.wait_screen(r"was ended by SIGTERM\.", timeout=30)
    # The output shown up to the kill, then the end; the two-minute command did not run out.
    assert "slow terminal line 3" in chat_text(vim), chat_text(vim)
    assert "slow terminal line 599" not in chat_text(vim)
    # The agent saw the signal: its tool call failed, it said so, and the turn ended.
    screen = vim.wait_screen(r"Turn ended \(end_turn\)")
    assert "The command ended with signal SIGTERM" in screen, screen
    vim.wait_screen(r"\[idle\]")
