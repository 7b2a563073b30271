"""The Neovim plugin in a real headless Neovim, without a sidecar: loading,
setup, statusline escaping, choices from synthetic notifications, init
options, health check."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from nvim_harness import PLUGIN, run_lua

pytestmark = [pytest.mark.nvim, pytest.mark.editors]


def test_plugin_is_lazy_and_setup_registers_commands(nvim_bin: str, tmp_path: Path) -> None:
    res = run_lua(
        nvim_bin,
        """
        local before = vim.fn.exists(":AcpPrompt")
        local loaded = vim.g.loaded_acp_sidecar
        local lsp_before = vim.lsp.config and vim.lsp.is_enabled and vim.lsp.is_enabled("acp_sidecar")
        require("acp_sidecar").setup({ cmd = { "/nonexistent/acp-sidecar" } })
        vim.cmd.edit("x.md")
        vim.wait(100)
        local names = {}
        for _, n in ipairs({ "AcpPrompt", "AcpCancel", "AcpRename", "AcpSessions", "AcpNew",
                             "AcpDelete", "AcpFork", "AcpSessionActions", "AcpLogout", "AcpMode",
                             "AcpModel", "AcpLog", "AcpChat", "AcpPermission" }) do
          names[n] = vim.fn.exists(":" .. n)
        end
        -- The stream's event log is gone: the chat is the transcript document, :AcpLog the raw view.
        local gone = vim.fn.exists(":AcpTranscript")
        local bad = { pcall(require("acp_sidecar").setup, { cmd = "acp-sidecar" }) }
        return {
          before = before, loaded = loaded, lsp_before = lsp_before or false,
          names = names, gone = gone, enabled = vim.lsp.is_enabled("acp_sidecar"),
          statusline = require("acp_sidecar").statusline(),
          bad_ok = bad[1], bad_err = tostring(bad[2]),
        }
        """,
        tmp_path,
    )
    assert res["loaded"] == 1
    assert res["before"] == 0 and res["lsp_before"] is False
    assert all(v == 2 for v in res["names"].values()), res["names"]
    assert res["gone"] == 0
    assert res["enabled"] is True
    assert res["statusline"] == ""
    assert res["bad_ok"] is False and "cmd" in res["bad_err"]


def test_statusline_escaping(nvim_bin: str, tmp_path: Path) -> None:
    res = run_lua(
        nvim_bin,
        r"""
        local sl = require("acp_sidecar.statusline")
        local out = {}
        local cases = {
          { title = "100% \27[31mred\27[0m", state = "idle" },
          { title = "a%b%%c %= %#Error# %{x} %!", state = "running" },
          { title = "line1\nline2\tx\r\7bell", state = "idle" },
          { title = "\226\128\174rtl\194\155x", state = "idle" },
          { title = string.rep("é", 100), state = "idle" },
          { title = vim.NIL, state = "starting" },
          { sessionId = "s1", title = vim.NIL, state = "idle" },
        }
        for i, c in ipairs(cases) do
          local text = sl.render(c, { max_length = 40, prefix = "ACP: " })
          local esc = text:gsub("%%", "%%%%")
          local ev = vim.api.nvim_eval_statusline(esc, {})
          local plain = vim.api.nvim_eval_statusline("%{v:lua.vim.g.acp_t}", {})
          vim.g.acp_t = text
          plain = vim.api.nvim_eval_statusline("%{g:acp_t}", {})
          out[i] = { text = text, shown = ev.str, width = ev.width, plain = plain.str }
        end
        return out
        """,
        tmp_path,
    )
    texts = [r["text"] for r in res]
    assert texts[0] == "ACP: 100% red [idle]"
    # While a turn runs a spinner turns before the title.
    assert texts[1] == "ACP: ⠋ a%b%%c %= %#Error# %{x} %! [running]"
    assert texts[2] == "ACP: line1 line2 x bell [idle]"
    assert texts[3] == "ACP: rtlx [idle]"
    assert texts[4] == "ACP: " + "é" * 39 + "… [idle]"
    assert texts[5] == "ACP: no session [starting]"
    # A session without a title yet (right after :AcpNew).
    assert texts[6] == "ACP: untitled [idle]"
    for r in res:
        # Escaped and re-parsed, or shown literally: the same visible text.
        assert r["shown"] == r["text"], r
        assert r["plain"] == r["text"], r


def test_choices_and_slash_commands_come_from_acp_status(nvim_bin: str, tmp_path: Path) -> None:
    # :AcpMode, :AcpModel and :AcpPrompt complete what acp/status offers; the raw stream teaches
    # the plugin nothing (the sidecar keeps that state: one place decides).
    res = run_lua(
        nvim_bin,
        """
        require("acp_sidecar").setup({ cmd = { "/nonexistent/acp-sidecar" } })
        local h = require("acp_sidecar.handlers")
        h.status(nil, { sessionId = "s1", title = vim.NIL, state = "idle",
          modes = { { id = "ask", name = "Ask" }, { id = "code", name = "Code" } },
          models = { { id = "demo-fast", name = "Demo Fast" } },
          commands = { { name = "help", description = "Help", hint = vim.NIL },
                       { name = "edit", description = "Edit", hint = "path" } } }, { client_id = 1 })
        h.session_update(nil, { sessionId = "s1", update = { sessionUpdate = "available_commands_update",
          availableCommands = { { name = "stream-only" } } } })
        h.session_update(nil, { sessionId = "s1", update = { sessionUpdate = "current_mode_update",
          currentModeId = "stream-mode" } })
        return {
          modes = vim.fn.getcompletion("AcpMode ", "cmdline"),
          models = vim.fn.getcompletion("AcpModel ", "cmdline"),
          commands = vim.fn.getcompletion("AcpPrompt /", "cmdline"),
          edit = vim.fn.getcompletion("AcpPrompt /e", "cmdline"),
        }
        """,
        tmp_path,
    )
    assert res["modes"] == ["ask", "code"], res
    assert res["models"] == ["demo-fast"], res
    assert res["commands"] == ["/help", "/edit"], res
    assert res["edit"] == ["/edit"], res


def test_a_turn_without_an_answer_says_so(nvim_bin: str, tmp_path: Path) -> None:
    res = run_lua(
        nvim_bin,
        r"""
        require("acp_sidecar").setup({ cmd = { "/nonexistent/acp-sidecar" } })
        local chat = require("acp_sidecar.chat")
        local notes = {}
        vim.notify = function(msg) table.insert(notes, msg) end
        for i, answered in ipairs({ false, true }) do
          chat.on_turn({ sessionId = "s1", turnId = "t" .. i, state = "ended", stopReason = "end_turn",
                         error = vim.NIL, answered = answered })
        end
        return { notes = notes }
        """,
        tmp_path,
    )
    gave = [n for n in res["notes"] if "the agent gave no answer" in n]
    answered = [n for n in res["notes"] if "the agent answered" in n]
    assert len(gave) == 1 and len(answered) == 1, res["notes"]


def test_init_options_and_state_dir(nvim_bin: str, tmp_path: Path) -> None:
    res = run_lua(
        nvim_bin,
        r"""
        local config = require("acp_sidecar.config")
        local out = {}
        config.set({ agent = { "codex-acp", "--flag" }, init_options = { permissions = "allow_reads",
          rename = { timeoutMs = 5000 }, notify = { statusDiagnostic = true } } })
        out.a = config.init_options()
        config.set({ agent = { command = { "claude-code-acp" }, env = { K = "V" } } })
        out.b = config.init_options()
        config.set({})
        out.c = config.init_options()
        -- A command string, split by the sidecar like its --agent (a traceback before).
        config.set({ agent = "codex-acp --foo", review = false,
          init_options = { transcript = { showOnPrompt = true } } })
        out.d = config.init_options()
        out.bad = { pcall(config.set, { agent = 42 }) }
        config.set({ cmd = { "acp-sidecar", "--state-dir", "/tmp/sd" } })
        out.sd1 = { config.state_dir() }
        config.set({ cmd_env = { ACP_SIDECAR_STATE_DIR = "/tmp/env-sd" } })
        out.sd2 = { config.state_dir() }
        vim.env.ACP_SIDECAR_STATE_DIR = nil
        vim.env.XDG_STATE_HOME = "/tmp/xdg"
        config.set({})
        out.sd3 = { config.state_dir() }
        return out
        """,
        tmp_path,
    )
    # The plugin shows the conversation and asks permissions and the agent's questions itself:
    # the sidecar neither opens the transcript document nor shows its own dialogs.
    plugin_owns = {
        "transcript": {"showOnPrompt": False},
        "notify": {"permissionDialog": False, "elicitationDialog": False, "replayUpdates": False},
    }
    assert res["a"] == {
        "agent": {"command": ["codex-acp", "--flag"]},
        "permissions": "allow_reads",
        "rename": {"timeoutMs": 5000},
        "notify": {
            "statusDiagnostic": True,
            "permissionDialog": False,
            "elicitationDialog": False,
            "replayUpdates": False,
        },
        "transcript": {"showOnPrompt": False},
    }
    assert res["b"] == {"agent": {"command": ["claude-code-acp"], "env": {"K": "V"}}, **plugin_owns}
    assert res["c"] == plugin_owns
    # review = false leaves the permission dialog to the sidecar; the user's own options win.
    assert res["d"] == {
        "agent": {"command": "codex-acp --foo"},
        "transcript": {"showOnPrompt": True},
        "notify": {"elicitationDialog": False, "replayUpdates": False},
    }
    assert res["bad"][0] is False and "option agent must be" in res["bad"][1]
    assert res["sd1"] == ["/tmp/sd", "--state-dir"]
    assert res["sd2"] == ["/tmp/env-sd", "ACP_SIDECAR_STATE_DIR"]
    assert res["sd3"] == ["/tmp/xdg/acp-sidecar", "platform default"]


def test_prompt_range_context_and_session_format(nvim_bin: str, tmp_path: Path) -> None:
    res = run_lua(
        nvim_bin,
        r"""
        local cmds = require("acp_sidecar.commands")
        vim.api.nvim_buf_set_lines(0, 0, -1, false, { "héllo wörld", "second line", "x😀yz" })
        -- A characterwise visual selection from "llo" on line 1 to the emoji on line 3.
        vim.api.nvim_win_set_cursor(0, { 1, 3 })
        vim.cmd("normal! v")
        vim.api.nvim_win_set_cursor(0, { 3, 1 })
        vim.cmd("normal! \27")
        local v = cmds.range_context(0, 1, 3, "utf-16")
        local v8 = cmds.range_context(0, 1, 3, "utf-8")
        -- A plain line range (no visual selection on those lines).
        vim.cmd("normal! \27")
        local l = cmds.range_context(0, 2, 2, "utf-16")
        local line = cmds.format_session({ sessionId = "x", title = "My \27[1mtitle", cwd = "/tmp/p",
          titleSource = "user", active = true, pendingTitle = vim.NIL })
        return { v = v.range, v8 = v8.range, l = l.range, line = line }
        """,
        tmp_path,
    )
    # "hé" = 2 UTF-16 units (3 bytes): the selection starts at the first "l".
    assert res["v"]["start"] == {"line": 0, "character": 2}
    # The emoji is 2 UTF-16 units (4 bytes) and fully included.
    assert res["v"]["end"] == {"line": 2, "character": 3}
    assert res["v8"]["start"] == {"line": 0, "character": 3}
    assert res["v8"]["end"] == {"line": 2, "character": 5}
    assert res["l"] == {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 11}}
    assert res["line"] == "● My title — /tmp/p"


def test_checkhealth_runs(nvim_bin: str, tmp_path: Path) -> None:
    res = run_lua(
        nvim_bin,
        r"""
        require("acp_sidecar").setup({ cmd = { "/nonexistent/acp-sidecar" } })
        vim.cmd("checkhealth acp_sidecar")
        return { lines = vim.api.nvim_buf_get_lines(0, 0, -1, false) }
        """,
        tmp_path,
    )
    text = "\n".join(res["lines"])
    assert "setup() was called" in text
    assert "sidecar executable not found" in text
    assert "state dir" in text
    assert "Traceback" not in text and "failed to run" not in text.lower(), text


def test_help_tags_and_demo_init(nvim_bin: str, tmp_path: Path) -> None:
    copy = tmp_path / "plugin"
    shutil.copytree(PLUGIN, copy)
    res = run_lua(
        nvim_bin,
        f"""
        vim.v.errmsg = ""
        vim.cmd("helptags {copy / "doc"}")
        local err = vim.v.errmsg
        -- The demo init: plugin on the runtimepath, setup done, statusline set.
        vim.env.ACP_SIDECAR_DEMO_CMD = "/nonexistent/acp-sidecar"
        vim.cmd("source {PLUGIN / "demo.lua"}")
        return {{ err = err, tags = vim.fn.readfile("{copy / "doc" / "tags"}"),
                 setup = vim.g.acp_sidecar_setup, stl = vim.o.statusline }}
        """,
        tmp_path,
    )
    assert res["err"] == ""
    tags = {line.split("\t", 1)[0] for line in res["tags"]}
    for want in (
        "acp_sidecar.setup()",
        ":AcpPrompt",
        ":AcpSessions",
        "acp_sidecar-options",
        "acp_sidecar.statusline()",
        "acp_sidecar-chat",
    ):
        assert want in tags, want
    assert res["setup"] is True
    assert "acp_sidecar" in res["stl"]


def test_messages_fit_one_line_unless_a_notification_plugin_shows_them(nvim_bin: str, tmp_path: Path) -> None:
    """Neovim's own vim.notify stops at "Press ENTER" for a message wider than the screen: the
    plugin shortens it to one line (the whole text is in :AcpLog); a notification plugin gets it whole."""
    res = run_lua(
        nvim_bin,
        r"""
        local util = require("acp_sidecar.util")
        local shown = {}
        vim.o.columns = 60
        local real = vim.api.nvim_echo
        vim.api.nvim_echo = function(chunks, ...)
          shown[#shown + 1] = chunks[1][1]
          return real(chunks, ...)
        end
        util.notify("short one")
        util.notify(string.rep("long words ", 20) .. "\nsecond line")
        vim.api.nvim_echo = real
        local plugin = {}
        vim.notify = function(msg) plugin[#plugin + 1] = msg end
        util.notify(string.rep("long words ", 20))
        return { shown = shown, plugin = plugin }
        """,
        tmp_path,
    )
    assert res["shown"][0] == "acp-sidecar: short one"
    long = res["shown"][1]
    assert long.endswith("… (:AcpLog)") and "\n" not in long and len(long) <= 60 - 13, long
    assert res["plugin"] == ["acp-sidecar: " + "long words " * 20]


def test_chat_folds_diffs_only_and_finds_the_marker_from_the_end(nvim_bin: str, tmp_path: Path) -> None:
    """The chat's folds: each ```diff block is one closed fold, nothing else folds (a plain code
    block, the lines after a diff), also for lines appended at the end as an answer streams. Its
    input area's marker line is found from the end of a long buffer (issue 28: a growing answer
    must not cost its whole length on every edit)."""
    res = run_lua(
        nvim_bin,
        r"""
        local chat = require("acp_sidecar.chat")
        local b = vim.api.nvim_create_buf(true, false)
        vim.api.nvim_set_current_buf(b)
        local lines = { "## Agent", "", "Diff of a.txt:", "", "```diff", "-a", "+b", "```", "",
                        "```", "plain code", "```", "", "after" }
        for i = 1, 3000 do lines[#lines + 1] = "filler " .. i end
        vim.api.nvim_buf_set_lines(b, 0, -1, false, lines)
        local wo = vim.wo[0]
        wo.foldmethod = "expr"
        wo.foldexpr = "v:lua.require'acp_sidecar.chat'.foldexpr(v:lnum)"
        wo.foldlevel = 0
        wo.foldenable = true
        local function levels(first, last)
          local out = {}
          for l = first, last do out[#out + 1] = vim.fn.foldlevel(l) end
          return out
        end
        local before = levels(1, 14)
        local closed = { vim.fn.foldclosed(6), vim.fn.foldclosedend(6) }
        -- An answer streams on at the end: another diff, then text after it.
        vim.api.nvim_buf_set_lines(b, -1, -1, false, { "", "```diff", "+c" })
        local n = vim.api.nvim_buf_line_count(b)
        vim.api.nvim_buf_set_lines(b, -1, -1, false, { "```", "", "the end" })
        local after = levels(n - 2, n + 3)
        local marker = "<!-- acp-sidecar: write your prompt below this line -->"
        vim.api.nvim_buf_set_lines(b, -1, -1, false, { "---", "", "## Your prompt", "", marker, "typed" })
        return {
          before = before, closed = closed, after = after,
          closed2 = { vim.fn.foldclosed(n), vim.fn.foldclosedend(n) },
          marker = chat.marker_row(b), count = vim.api.nvim_buf_line_count(b),
          input = chat.input_text(b),
        }
        """,
        tmp_path,
    )
    # Lines 5-8 (```diff to its closing fence) fold; the plain code block and the rest do not.
    assert res["before"] == [0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0], res["before"]
    assert res["closed"] == [5, 8], res["closed"]
    assert res["after"] == [0, 1, 1, 1, 0, 0], res["after"]
    assert res["closed2"][0] == res["closed2"][1] - 2, res["closed2"]
    assert res["marker"] == res["count"] - 2 and res["input"] == "typed", res
