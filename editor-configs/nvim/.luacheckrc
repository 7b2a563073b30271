-- luacheck configuration for the Neovim plugin
std = "luajit"
globals = { "vim" }
max_line_length = 120
exclude_files = { ".luarocks", "lua_modules" }
