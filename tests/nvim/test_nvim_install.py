"""Installed as users install plugins, in real Neovim in tmux with a private HOME: the lazy.nvim
spec that `acp-sidecar editor-config nvim --lazy` prints (a `dir` spec: lazy.nvim puts that
directory on 'runtimepath', sources its plugin/ files, then runs `config`), and a plain packpath
install (the plugin directory linked into pack/*/start). Each one: :help acp_sidecar opens (the
tags are shipped: no :helptags needed), and the chat answers a prompt."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from nvim_harness import PLUGIN, find_nvim
from test_nvim_chat_tmux import chat_text
from tmux_nvim import TmuxNvim

pytestmark = [pytest.mark.nvim, pytest.mark.editors]

# What lazy.nvim does with a `dir` spec at startup (lazy.core.loader), written out: the spec file
# is the one the user saves as lua/plugins/acp-sidecar.lua.
LAZY_STYLE_INIT = """
local spec = dofile(vim.fn.stdpath("config") .. "/lua/plugins/acp-sidecar.lua")
vim.opt.runtimepath:append(spec.dir)
for _, f in ipairs(vim.fn.glob(spec.dir .. "/plugin/**/*.lua", false, true)) do
  vim.cmd.source(f)
end
spec.config()
vim.o.laststatus = 2
vim.o.statusline = "%f %m%=%{%v:lua.require'acp_sidecar'.statusline()%} %l:%c"
"""

PACK_INIT = """
require("acp_sidecar").setup({})
vim.o.laststatus = 2
vim.o.statusline = "%f %m%=%{%v:lua.require'acp_sidecar'.statusline()%} %l:%c"
"""


def help_and_chat(vim: TmuxNvim) -> None:
    vim.wait_screen(r"README\.md")
    vim.keys(":help acp_sidecar", "Enter")
    screen = vim.wait_screen(r"acp_sidecar\.txt")
    assert "E149" not in screen and "Drive ACP coding agents from Neovim" in screen, screen
    vim.keys(":close", "Enter")
    vim.keys(":AcpChat", "Enter")
    vim.wait_screen(r"## Your prompt")
    vim.keys("i")
    vim.type("Where is the README?")
    vim.keys("C-s")
    vim.wait_screen(r"Turn ended \(end_turn\)")
    text = chat_text(vim)
    assert "Where is the README?" in text and "README.md is at the root of your workspace" in text, text


def test_the_lazy_nvim_spec_printed_by_editor_config(vim: TmuxNvim) -> None:
    out = subprocess.run(
        [vim.sidecar, "editor-config", "nvim", "--lazy"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert f'dir = "{PLUGIN}"' in out, out
    plugins = vim.home / ".config" / "nvim" / "lua" / "plugins"
    plugins.mkdir(parents=True)
    (plugins / "acp-sidecar.lua").write_text(out)
    (vim.home / ".config" / "nvim" / "init.lua").write_text(LAZY_STYLE_INIT)
    vim.start(["README.md"])
    help_and_chat(vim)


def test_a_plain_packpath_install(vim: TmuxNvim) -> None:
    start = vim.home / ".local" / "share" / "nvim" / "site" / "pack" / "acp" / "start"
    start.mkdir(parents=True)
    (start / "acp-sidecar").symlink_to(PLUGIN)
    (vim.home / ".config" / "nvim").mkdir(parents=True)
    (vim.home / ".config" / "nvim" / "init.lua").write_text(PACK_INIT)
    vim.start(["README.md"])
    help_and_chat(vim)


def test_shipped_help_tags_match_the_help_file(tmp_path: Path) -> None:
    """doc/tags is shipped (so :help works without :helptags); it is what :helptags makes now."""
    nvim = find_nvim()
    assert nvim, "nvim not found"
    doc = tmp_path / "doc"
    doc.mkdir()
    (doc / "acp_sidecar.txt").write_bytes((PLUGIN / "doc" / "acp_sidecar.txt").read_bytes())
    subprocess.run(
        [nvim, "--headless", "--clean", "-c", f"helptags {doc}", "-c", "qa!"],
        check=True,
        timeout=60,
        capture_output=True,
    )
    shipped = (PLUGIN / "doc" / "tags").read_text()
    assert shipped == (doc / "tags").read_text(), "doc/tags is stale: run :helptags editor-configs/nvim/doc"
    assert "\nacp_sidecar\tacp_sidecar.txt\t/*acp_sidecar*\n" in "\n" + shipped
    first = (PLUGIN / "doc" / "acp_sidecar.txt").read_text().splitlines()[0]
    assert "*acp_sidecar*" in first
