"""`acp-sidecar editor-config nvim`: the plugin directory, a lazy.nvim spec, the runtimepath lines.

The plugin is the one installed with this sidecar (so the two always match); lazy.nvim
loads a `dir` spec by adding `dir` to 'runtimepath', sourcing its plugin/ files and
calling `config()`.
"""

from __future__ import annotations

import re
import shlex

from sidecar import __version__
from sidecar.editor_config.locations import EditorConfigs, SidecarCommand

# A path that `:set runtimepath^=` takes as it is (no space, comma, backslash, quote or bar).
_PLAIN_PATH = re.compile(r"[\w./+@:-]+")


def lua_string(text: str) -> str:
    """A double-quoted Lua string literal (Lua 5.1 escapes: control characters as \\ddd)."""
    out = []
    for char in text:
        if char in '"\\':
            out.append("\\" + char)
        elif ord(char) < 0x20 or char == "\x7f":
            out.append(f"\\{ord(char):03d}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _setup_call(command: SidecarCommand, indent: str) -> list[str]:
    lines = [f'{indent}require("acp_sidecar").setup({{']
    if command.full_path_because:
        lines.append(f"{indent}  -- {command.full_path_because}: this install's, by its full path")
        lines.append(f"{indent}  cmd = {{ {lua_string(command.command)} }},")
    lines += [
        f'{indent}  -- agent = {{ "codex-acp" }},                     -- default: the embedded demo agent',
        f'{indent}  -- init_options = {{ permissions = "allow_reads" }},',
        f"{indent}}})",
    ]
    return lines


def lazy_spec(plugin_dir: str, command: SidecarCommand) -> str:
    """One lazy.nvim plugin spec (a Lua table expression)."""
    lines = [
        "{",
        f"  dir = {lua_string(plugin_dir)},",
        '  name = "acp-sidecar",',
        "  config = function()",
        *_setup_call(command, "    "),
        "    -- vim.o.statusline = \"%f %m%=%{%v:lua.require'acp_sidecar'.statusline()%} %l:%c\"",
        "  end,",
        "}",
    ]
    return "\n".join(lines) + "\n"


def lazy_file(configs: EditorConfigs, command: SidecarCommand) -> str:
    """A lazy.nvim plugin file (lua/plugins/acp-sidecar.lua): the spec, returned."""
    return (
        f"-- acp-sidecar {__version__}: its Neovim plugin, for lazy.nvim "
        "(printed by `acp-sidecar editor-config nvim --lazy`).\n"
        f"return {lazy_spec(str(configs.nvim_plugin), command)}"
    )


def runtimepath_lines(plugin_dir: str, command: SidecarCommand) -> tuple[list[str], list[str]]:
    """(init.lua lines, init.vim lines) without a plugin manager."""
    init_lua = [f"vim.opt.runtimepath:prepend({lua_string(plugin_dir)})", *_setup_call(command, "")]
    if _PLAIN_PATH.fullmatch(plugin_dir):
        add = f"set runtimepath^={plugin_dir}"
    else:
        add = f"lua vim.opt.runtimepath:prepend({lua_string(plugin_dir)})"
    options = f"{{ cmd = {{ {lua_string(command.command)} }} }}" if command.full_path_because else "{}"
    return init_lua, [add, f'lua require("acp_sidecar").setup({options})']


def render(configs: EditorConfigs, command: SidecarCommand) -> str:
    plugin = str(configs.nvim_plugin)
    init_lua, init_vim = runtimepath_lines(plugin, command)
    where = "installed with it" if configs.installed else "of this checkout"
    # demo.lua starts `acp-sidecar` from PATH unless told otherwise.
    demo = f"ACP_SIDECAR_DEMO_CMD={shlex.quote(command.command)} " if command.full_path_because else ""
    lines = [
        f"-- acp-sidecar {__version__} for Neovim 0.10+. The plugin {where}:",
        f"--   {plugin}",
        "-- Use this directory (it matches this sidecar); print this again after reinstalling.",
        "",
        "-- lazy.nvim: add this spec to your plugin specs, or save",
        "-- `acp-sidecar editor-config nvim --lazy` as ~/.config/nvim/lua/plugins/acp-sidecar.lua",
        lazy_spec(plugin, command),
        "-- Without a plugin manager, in init.lua:",
        *init_lua,
        "",
        "-- or in init.vim:",
        *init_vim,
        "",
        f"-- Then :checkhealth acp_sidecar. Documentation: {plugin}/doc/acp_sidecar.txt",
        f"-- To try it with the demo agent: {demo}nvim --clean -u {shlex.quote(plugin + '/demo.lua')}",
    ]
    return "\n".join(lines) + "\n"
