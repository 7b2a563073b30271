"""The Neovim review with production agents (over the local mock model), as the user sees it in
tmux: claude-agent-acp sends only the changed part as its diff and writes the disk itself;
gemini-cli sends the whole file and writes through the sidecar. Either way the review shows the
whole file after the edit, the user changes the proposal, and the file gets the user's version."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from nvim_harness import PLUGIN
from tmux_nvim import TmuxNvim

from tests.production.harness import agent_command, agent_env
from tests.production.mock_model import MockModel

pytestmark = [pytest.mark.nvim, pytest.mark.editors, pytest.mark.production]

INIT = """
vim.opt.runtimepath:prepend({plugin})
vim.o.laststatus = 2
vim.o.statusline = "%f %m%=%{{%v:lua.require'acp_sidecar'.statusline()%}} %l:%c "
require("acp_sidecar").setup({{ cmd = {{ {sidecar} }}, agent = vim.json.decode({agent}) }})
vim.api.nvim_create_autocmd("VimEnter", {{
  once = true,
  callback = function() require("acp_sidecar").chat() end,
}})
"""


@pytest.mark.parametrize("agent", ["claude", "gemini"])
def test_a_production_agents_edit_reviewed_changed_and_accepted(
    agent: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("IS_SANDBOX", raising=False)  # claude-agent-acp exits as root with it
    vim = TmuxNvim(tmp_path)
    with MockModel() as mock:
        try:
            target = vim.ws / "edit_me.py"
            target.write_text("value = 1\nname = 'unchanged'\n")
            mock.script.edit_path, mock.script.edit_old, mock.script.edit_new = (
                target,
                "value = 1",
                "value = 2",
            )
            home = tmp_path / "agent-home"
            home.mkdir()
            options = {"command": agent_command(agent), "env": agent_env(agent, mock, home)}
            init = tmp_path / "init.lua"
            init.write_text(
                INIT.format(
                    plugin=json.dumps(str(PLUGIN)),
                    sidecar=json.dumps(vim.sidecar),
                    agent=json.dumps(json.dumps(options)),
                )
            )
            vim.start(["--clean", "-u", str(init), "edit_me.py"])
            vim.wait_screen(r"## Your prompt", timeout=90)
            vim.keys("G", "i")
            vim.type("Change the value [mock:edit]")
            vim.keys("C-s")
            screen = vim.wait_screen(r"The agent asks:", timeout=90)
            # The whole file on both sides, the agent's line on the right only.
            assert "current edit_me.py" in screen and "proposed by the agent (editable)" in screen, screen
            sides = json.loads(
                vim.lua(
                    "vim.tbl_map(function(b) return vim.api.nvim_buf_get_lines(b, 0, -1, false) end,"
                    " require('acp_sidecar.review').review.files[1].bufs)"
                )
            )
            assert sides == [["value = 1", "name = 'unchanged'"], ["value = 2", "name = 'unchanged'"]], sides
            assert screen.count("name = 'unchanged'") == 2, screen
            vim.keys("Enter")  # not now: the review stays
            # Said with vim.notify; a redraw of the statusline's spinner may clear the message
            # line before the screen is read (seen once in CI), so its history counts too.
            vim.wait(
                lambda: "still waiting" in vim.screen() or "still waiting" in vim.messages(),
                "the note that the permission request is still waiting",
            )
            vim.keys("Enter")
            vim.keys("g", "g", "c", "c")
            vim.type("value = 42")
            vim.keys("Escape")
            vim.keys("g", "a")

            def buffer() -> list[str]:
                return json.loads(
                    vim.lua("vim.api.nvim_buf_get_lines(vim.fn.bufnr('edit_me.py'), 0, -1, false)")
                )

            vim.wait(
                lambda: buffer() == ["value = 42", "name = 'unchanged'"],
                "the user's version in the buffer",
                90,
            )
            if agent == "claude":
                # It wrote the disk itself; the sidecar put the user's version in place of its edit.
                assert target.read_text() == "value = 42\nname = 'unchanged'\n"
                said = "edit_me.py: the agent wrote its own edit; your reviewed version replaced it"
                vim.wait(
                    lambda: said in vim.lua("table.concat(require('acp_sidecar.log').lines, ' ')"),
                    "the sidecar's message (in :AcpLog)",
                )
            else:
                # Written through the sidecar into the open buffer: the disk waits for :w.
                assert target.read_text() == "value = 1\nname = 'unchanged'\n"
            screen = vim.wait_screen(r"\[idle\]", timeout=90)
            assert "Press ENTER" not in screen, screen  # every message fit one line
        finally:
            vim.close()
