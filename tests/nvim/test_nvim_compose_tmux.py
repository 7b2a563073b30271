"""Composing in the chat on a real Neovim 0.11 screen (tmux, started like `make demo`): the
built-in LSP completion (`vim.lsp.completion`, opened by the trigger characters) offers the
sidecar's `@` files and `/` commands in the input area; an accepted mention goes along."""

from __future__ import annotations

import json
import re

import pytest
from test_nvim_chat_tmux import chat_state, chat_text
from tmux_nvim import TmuxNvim

pytestmark = [pytest.mark.nvim, pytest.mark.editors]


def left_pane(screen: str) -> str:
    """The rows of the left window (or of a full-width one) joined, so a wrapped line reads whole."""
    return "".join(row.split("│")[0] for row in screen.split("\n"))


def pum_visible(vim: TmuxNvim) -> bool:
    return bool(json.loads(vim.lua("vim.fn.pumvisible() == 1")))


def test_at_offers_the_file_and_the_accepted_mention_goes_along_then_slash_offers_commands(
    vim: TmuxNvim,
) -> None:
    vim.start_demo("README.md")
    vim.wait_screen(r"## Your prompt")
    vim.keys("i")
    vim.type("Explain @READ")
    # The menu shows the one match (kind File), selected but not inserted yet.
    vim.wait_screen(r"@README\.md\s+File")
    assert pum_visible(vim)
    assert chat_state(vim)["input"] == "Explain @READ"
    vim.keys("C-y")
    vim.wait(lambda: chat_state(vim)["input"] == "Explain @README.md", "the accepted mention")
    vim.keys("C-s")
    # The chat shows what went along, and the demo agent says what it received.
    vim.wait_screen(r"Turn ended \(end_turn\)")
    text = chat_text(vim)
    assert "\n    Explain @README.md\n\nContext: `README.md` (3 lines)\n" in text, text
    assert "Context received: README.md (embedded, 3 lines)." in " ".join(text.split()), text

    # `/` at the start of the (now empty) prompt: the demo agent's commands, each described.
    vim.wait(lambda: chat_state(vim)["input"] == "", "the input area cleared")
    vim.type("/")
    screen = vim.wait_screen(r"/help\s+Function\s+List the demo agent's prompt keywords")
    for name in ("/edit", "/permission", "/title"):
        assert re.search(rf"{name}\s+Function", screen), screen
    vim.type("ti")
    vim.wait(lambda: not re.search(r"/help\s+Function", vim.screen()), "the menu filtered by what was typed")
    assert re.search(r"/title\s+Function", vim.screen()), vim.screen()


def test_sessions_are_workspace_symbols_and_turns_document_symbols(vim: TmuxNvim) -> None:
    vim.start_demo("README.md")
    vim.wait_screen(r"## Your prompt")
    vim.keys("i")
    vim.type("#chunks=2 Fix the login bug")
    vim.keys("C-s")
    vim.wait_screen(r"ACP: Fix the login bug \[idle\]")
    vim.keys("Escape")
    vim.type(":AcpNew")
    vim.keys("Enter")
    vim.wait_screen(r"ACP: untitled \[idle\]")
    vim.keys("i")
    vim.type("#chunks=2 Write the docs")
    vim.keys("C-s")
    vim.wait_screen(r"ACP: Write the docs \[idle\]")
    vim.keys("Escape")
    vim.keys("C-w", "h")  # back to README.md
    vim.type(":lua vim.lsp.buf.workspace_symbol('login')")
    vim.keys("Enter")
    # The quickfix list: the session whose title matches, at its conversation document.
    screen = vim.wait_screen(r"\[Quickfix List\] Symbols matching 'login'")
    unwrapped = left_pane(screen)  # a long path wraps
    # A break at the space before "[Event]" leaves that space at a row's end, which the capture trims.
    entry = r"acp-sidecar-demo/demo-[0-9a-f-]+\.md\|1 col 1\| ?\[Event\] Fix the login bug"
    assert re.search(entry, unwrapped), screen
    assert vim.lua("#vim.fn.getqflist()") == "1"  # not "Write the docs"
    vim.keys("Enter")  # opens the session's conversation
    vim.wait(lambda: vim.expr("getline(1)") == "# Fix the login bug", "the conversation opened")
    vim.type(":lua vim.lsp.buf.document_symbol()")
    vim.keys("Enter")
    # The location list: its turns, by the prompt's first line.
    vim.wait(
        lambda: re.search(r"md\|4 col 1-7\| ?\[Event\] #chunks=2 Fix the login bug", left_pane(vim.screen())),
        "the location list of the turns",
    )
