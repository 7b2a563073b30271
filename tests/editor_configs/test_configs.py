"""The editor configs name only what the contract offers, and they build.

- Helix: languages.toml / config.toml parse; the server's `config` uses only
  initializationOptions keys of docs/protocol.md; every language keeps its usual
  servers first; the README shows `:lsp-workspace-command` for every command.
- VS Code: checked against docs/protocol.md: package.json settings map to
  its keys (with its bounds), every `acp.*` command id used exists; the
  extension activates on demand; the README's install command names the
  .vsix that `npm run package` makes; `npm ci`, compile, the unit tests and
  packaging run (tests/editors/vscode/build.py), and the .vsix is bundled.
- Neovim: every `acp.*` id in the plugin exists; luacheck passes (installed by `make setup`).

The command list and option keys are parsed from docs/protocol.md, the project's
editor protocol. It must keep everything of the original contract
(../shared/CONTRACT.md, copied below; the copy is compared with the file when
the file sits beside the repository).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tomllib
import zipfile
from pathlib import Path
from typing import Any

import pytest

from sidecar.editor_config import helix_builtin
from sidecar.editor_config.helix import builtin_languages, languages_toml
from tests.editors.vscode.build import build_vsix

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO / "editor-configs"
HELIX = CONFIGS / "helix"
VSCODE = CONFIGS / "vscode"
NVIM = CONFIGS / "nvim"
CONTRACT_PATH = REPO.parent / "shared" / "CONTRACT.md"
PROTOCOL_PATH = REPO / "docs" / "protocol.md"

# Copy of the original CONTRACT.md: command -> (argument keys, positional shortcut?)
CONTRACT_COMMANDS: dict[str, tuple[frozenset[str], bool]] = {
    "acp.session.new": (frozenset({"cwd"}), False),
    "acp.session.list": (frozenset({"cwd", "refresh"}), False),
    "acp.session.load": (frozenset({"sessionId"}), True),
    "acp.prompt": (frozenset({"text", "sessionId", "uri", "range"}), True),
    "acp.cancel": (frozenset({"sessionId"}), False),
    "acp.session.rename": (frozenset({"title", "sessionId"}), True),
    "acp.session.setMode": (frozenset({"modeId", "sessionId"}), True),
    "acp.session.setModel": (frozenset({"modelId", "sessionId"}), True),
    "acp.session.setConfigOption": (frozenset({"configId", "value", "sessionId"}), False),
    "acp.edit.apply": (frozenset({"sessionId", "toolCallId"}), False),
    "acp.permission.respond": (frozenset({"requestId", "optionId"}), False),
    "acp.authenticate": (frozenset({"methodId"}), True),
    "acp.status": (frozenset(), False),
}
# Copy of the original CONTRACT.md: initializationOptions keys (dotted paths; agent.env is a map).
CONTRACT_OPTIONS: frozenset[str] = frozenset(
    {
        "agent",
        "agent.command",
        "agent.env",
        "permissions",
        "rename",
        "rename.timeoutMs",
        "rename.fallback",
        "titles",
        "titles.maxLength",
        "notify",
        "notify.titleAsShowMessage",
        "notify.statusDiagnostic",
    }
)
MAP_OPTIONS = frozenset({"agent.env"})  # values are user maps, not option keys
ENUMS = {"permissions": {"ask", "allow_reads", "reject"}, "rename.fallback": {"keep_local", "revert"}}

ACP_ID = re.compile(r"\bacp\.[A-Za-z]+(?:\.[A-Za-z]+)*")


# ------------------------------------------------------------------ contract
def _flatten(obj: dict[str, Any], prefix: str = "") -> set[str]:
    out: set[str] = set()
    for key, value in obj.items():
        path = f"{prefix}{key}"
        out.add(path)
        if isinstance(value, dict) and path not in MAP_OPTIONS:
            out |= _flatten(value, path + ".")
    return out


def parse_contract(text: str) -> tuple[dict[str, tuple[frozenset[str], bool]], frozenset[str]]:
    commands: dict[str, tuple[frozenset[str], bool]] = {}
    section = text.split("## Commands", 1)[1].split("\n## ", 1)[0]
    for line in section.splitlines():
        m = re.match(r"^\|\s*`(acp\.[A-Za-z.]+)`([^|]*)\|([^|]*)\|", line)
        if not m:
            continue
        arg = m.group(3)
        inner = arg.split("{", 1)[1].split("}", 1)[0] if "{" in arg else ""
        keys = frozenset(re.findall(r"([A-Za-z]+)\??", inner))
        commands[m.group(1)] = (keys, "(+" in m.group(2))
    init = text.split("## initializationOptions", 1)[1]
    block = init.split("```json", 1)[1].split("```", 1)[0]
    options = frozenset(_flatten(json.loads(block)))
    return commands, options


@pytest.fixture(scope="module")
def contract() -> tuple[dict[str, tuple[frozenset[str], bool]], frozenset[str]]:
    return parse_contract(PROTOCOL_PATH.read_text())


def test_the_protocol_keeps_the_original_contract() -> None:
    original_commands, original_options = CONTRACT_COMMANDS, CONTRACT_OPTIONS
    if CONTRACT_PATH.is_file():  # beside the repository (CI, the lead's checkout): the copy is current
        original_commands, original_options = parse_contract(CONTRACT_PATH.read_text())
        assert (original_commands, original_options) == (CONTRACT_COMMANDS, CONTRACT_OPTIONS), (
            "CONTRACT.md changed: update the copy in this test"
        )
    commands, options = parse_contract(PROTOCOL_PATH.read_text())
    for name, (keys, positional) in original_commands.items():
        assert name in commands, f"docs/protocol.md lost {name}"
        assert keys <= commands[name][0], f"docs/protocol.md lost arguments of {name}"
        assert commands[name][1] == positional, f"docs/protocol.md changed the shortcut of {name}"
    assert original_options <= options, f"docs/protocol.md lost options {original_options - options}"


# ------------------------------------------------------------------ helix
def _config_paths(obj: dict[str, Any], prefix: str = "") -> set[str]:
    return _flatten(obj, prefix)


def test_helix_languages_toml(contract: tuple[dict[str, Any], frozenset[str]]) -> None:
    _, options = contract
    # The README's languages.toml is what `acp-sidecar editor-config helix` prints (here: from its
    # built-in list, the real Helix's own is tested in tests/editors/helix).
    data = tomllib.loads(languages_toml(builtin_languages()))
    server = data["language-server"]["acp-sidecar"]
    assert server["command"] == "acp-sidecar"
    assert isinstance(server.get("args", []), list)
    config = server["config"]
    unknown = _config_paths(config) - options
    assert not unknown, f"not in docs/protocol.md initializationOptions: {unknown}"
    assert config["notify"]["titleAsShowMessage"] is True
    flat: dict[str, Any] = {}

    def walk(obj: dict[str, Any], prefix: str = "") -> None:
        for k, v in obj.items():
            if isinstance(v, dict):
                walk(v, f"{prefix}{k}.")
            else:
                flat[f"{prefix}{k}"] = v

    walk(config)
    for key, allowed in ENUMS.items():
        if key in flat:
            assert flat[key] in allowed, (key, flat[key])

    languages = data["language"]
    names = [lang["name"] for lang in languages]
    assert len(names) == len(set(names)), names
    for required in ("python", "rust", "markdown", "toml", "javascript", "typescript", "go", "lua"):
        assert required in names, required
    for lang in languages:
        servers = [s if isinstance(s, str) else s["name"] for s in lang["language-servers"]]
        assert servers[-1] == "acp-sidecar", lang
        assert servers.count("acp-sidecar") == 1, lang
        assert servers[:-1] == list(helix_builtin.LANGUAGES[lang["name"]]), "keep the default servers first"


def test_helix_config_toml() -> None:
    data = tomllib.loads((HELIX / "config.toml").read_text())
    assert data["editor"]["lsp"]["display-progress-messages"] is True


def _json_values(raw: str) -> list[Any]:
    """Parse a stream of JSON values separated by whitespace (as Helix does)."""
    dec = json.JSONDecoder()
    out, i = [], 0
    raw = raw.strip()
    while i < len(raw):
        value, end = dec.raw_decode(raw, i)
        out.append(value)
        i = end
        while i < len(raw) and raw[i].isspace():
            i += 1
    return out


def test_helix_readme_covers_every_command(contract: tuple[dict[str, Any], frozenset[str]]) -> None:
    commands, options = contract
    text = (HELIX / "README.md").read_text()
    named = set(ACP_ID.findall(text))
    assert named <= set(commands), f"not in CONTRACT: {named - set(commands)}"
    usages = re.findall(r":lsp-workspace-command (acp\.[A-Za-z.]+)([^`\n]*)`", text)
    used = {name for name, _ in usages}
    assert used == set(commands), f"missing :lsp-workspace-command usage for {set(commands) - used}"
    for name, raw in usages:
        keys, positional = commands[name]
        values = _json_values(raw.replace("%%", "%"))
        assert len(values) <= 1, (name, raw)
        for v in values:
            if isinstance(v, str):
                assert positional, f"{name} has no positional shortcut in CONTRACT: {raw}"
            else:
                assert isinstance(v, dict), (name, raw)
                assert set(v) <= keys, f"{name}: {set(v) - keys} not in CONTRACT"
    for name, (_, positional) in commands.items():
        if positional:
            assert re.search(rf':lsp-workspace-command {re.escape(name)} "', text), f"{name}: positional form"
    # Every init option key the README names exists.
    settings = text.split("## Settings", 1)[1].split("\n## ", 1)[0]
    table_keys = set(re.findall(r"^\| `([A-Za-z.]+)`(?:, `([A-Za-z.]+)`)? \|", settings, re.M))
    assert len(table_keys) >= 5, table_keys
    for pair in table_keys:
        for key in pair:
            if key:
                assert key in options, key
    for block in re.findall(r"```toml\n(.*?)```", text, re.S):
        tomllib.loads(block)


# ------------------------------------------------------------------ vscode
# The VS Code extension is built against docs/protocol.md (in the repository), commands and options
# included that other parts of the sidecar add.
PROTOCOL_PATH = REPO / "docs" / "protocol.md"
EDITOR_ONLY_SETTINGS = {"path", "args", "trace.server"}
# The options the extension sends because it shows the conversation, permission requests and the
# agent's questions itself.
EXTENSION_OPTIONS = {
    "notify.permissionDialog",
    "notify.elicitationDialog",
    "notify.replayUpdates",
    "transcript.showOnPrompt",
}


@pytest.fixture(scope="module")
def protocol() -> tuple[dict[str, tuple[frozenset[str], bool]], frozenset[str]]:
    return parse_contract(PROTOCOL_PATH.read_text())


def _manifest() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((VSCODE / "package.json").read_text())
    return data


def _extension_source() -> str:
    return "\n".join(p.read_text() for p in sorted((VSCODE / "src").rglob("*.ts")))


def test_vscode_manifest(protocol: tuple[dict[str, Any], frozenset[str]]) -> None:
    commands, options = protocol
    pkg = _manifest()
    assert pkg["engines"]["vscode"] == "^1.90.0"
    assert pkg["main"] == "./out/extension.js"
    assert {"compile", "package", "test"} <= set(pkg["scripts"])
    assert (VSCODE / "package-lock.json").is_file()
    assert (VSCODE / ".vscodeignore").is_file()
    tsconfig = json.loads((VSCODE / "tsconfig.json").read_text())
    assert tsconfig["compilerOptions"]["strict"] is True
    # Bundled by esbuild: nothing is needed from node_modules at run time.
    assert not pkg.get("dependencies"), "runtime dependencies: everything is bundled into out/extension.js"
    assert "--no-dependencies" in pkg["scripts"]["package"]

    contributed = {c["command"] for c in pkg["contributes"]["commands"]}
    assert all(c.startswith("acpSidecar.") for c in contributed), contributed
    source = _extension_source()
    registered = set(re.findall(r"register\('(acpSidecar\.[A-Za-z]+)'", source))
    assert registered == contributed, registered ^ contributed
    for want in ("openChat", "prompt", "cancel", "rename", "sessions", "newSession", "setMode", "setModel"):
        assert f"acpSidecar.{want}" in contributed
    for want in ("permissions", "acceptDiff", "rejectDiff"):
        assert f"acpSidecar.{want}" in contributed

    named = set(ACP_ID.findall(json.dumps(pkg))) | set(ACP_ID.findall(source))
    assert named <= set(commands), f"not in docs/protocol.md: {named - set(commands)}"
    for key in EXTENSION_OPTIONS:
        assert key in options, f"{key} is not in docs/protocol.md"
        section, name = key.split(".")
        sent = re.search(rf"{section}: \{{[^}}]*\b{name}: false\b[^}}]*\}}", source)
        assert sent, f"the extension does not send {key}: false"

    settings = pkg["contributes"]["configuration"]["properties"]
    for key in settings:
        assert key.startswith("acpSidecar."), key
        name = key.removeprefix("acpSidecar.")
        if name not in EDITOR_ONLY_SETTINGS:
            assert name in options, f"setting {key} is not an initializationOptions key"
        if name in ENUMS:
            assert set(settings[key]["enum"]) == ENUMS[name], key
    for want in ("agent.command", "permissions", "rename.timeoutMs", "rename.fallback", "titles.maxLength"):
        assert f"acpSidecar.{want}" in settings, want
    # The bounds the sidecar accepts (docs/protocol.md), so the settings UI refuses what it would refuse.
    title = settings["acpSidecar.titles.maxLength"]
    assert (title["minimum"], title["maximum"]) == (8, 10000)
    assert "`titles.maxLength`: 8 to 10 000." in PROTOCOL_PATH.read_text()
    timeout = settings["acpSidecar.rename.timeoutMs"]
    assert timeout["minimum"] >= 1 and timeout["maximum"] <= 86_400_000
    for machine in ("path", "args", "agent.command", "agent.env"):
        assert settings[f"acpSidecar.{machine}"]["scope"] == "machine-overridable", machine


def test_vscode_activates_on_demand_with_a_chat_view() -> None:
    pkg = _manifest()
    events = pkg.get("activationEvents", [])
    assert "*" not in events and "onStartupFinished" not in events, events
    views = [v for group in pkg["contributes"]["views"].values() for v in group]
    chat = [v for v in views if v["id"] == "acpSidecar.chat"]
    assert chat and chat[0]["type"] == "webview", views
    assert "onView:acpSidecar.chat" in events
    # The agent edits files and runs tools: not in a folder the user has not trusted.
    assert pkg["capabilities"]["untrustedWorkspaces"]["supported"] is False


def test_vscode_readme_install_command_matches_the_package() -> None:
    made = re.search(r"-o (\S+\.vsix)", _manifest()["scripts"]["package"])
    assert made, "npm run package names no .vsix"
    vsix = made.group(1)
    for readme in (VSCODE / "README.md", REPO / "README.md"):
        installs = re.findall(r"--install-extension ([^\s`]+)", readme.read_text())
        assert installs, f"{readme} shows no install command"
        assert set(installs) == {vsix}, f"{readme}: {installs} but npm run package makes {vsix}"


@pytest.mark.editors
@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_vscode_extension_builds_and_packages(tmp_path_factory: pytest.TempPathFactory) -> None:
    build = build_vsix(tmp_path_factory.getbasetemp())
    with zipfile.ZipFile(build.vsix) as vsix:
        names = set(vsix.namelist())
    for want in ("extension/package.json", "extension/out/extension.js", "extension/out/webview/chat.js"):
        assert want in names, sorted(names)
    assert "extension/media/chat.css" in names
    leaked = sorted(
        n
        for n in names
        if "node_modules" in n or n.endswith((".ts", ".map")) or "/src/" in n or "/test/" in n
    )
    assert not leaked, leaked


# ------------------------------------------------------------------ neovim
def test_nvim_plugin_names_only_contract_commands(contract: tuple[dict[str, Any], frozenset[str]]) -> None:
    commands, _ = contract
    files = [*NVIM.rglob("*.lua"), *NVIM.rglob("*.txt")]
    assert files
    named: set[str] = set()
    for f in files:
        named |= set(ACP_ID.findall(f.read_text()))
    assert named, "the plugin names no acp.* command"
    assert named <= set(commands), f"not in CONTRACT: {named - set(commands)}"


def test_docs_name_only_contract_commands(contract: tuple[dict[str, Any], frozenset[str]]) -> None:
    commands, _ = contract
    for doc in CONFIGS.rglob("*.md"):
        if "node_modules" in doc.parts:
            continue
        named = set(ACP_ID.findall(doc.read_text()))
        assert named <= set(commands), f"{doc}: not in CONTRACT: {named - set(commands)}"


def test_lua_passes_luacheck() -> None:
    luacheck = shutil.which("luacheck")
    assert luacheck is not None, "luacheck not found: run `make setup` (installs Debian package lua-check)"
    res = subprocess.run(
        [luacheck, "--config", str(NVIM / ".luacheckrc"), str(NVIM), str(REPO / "tests" / "nvim")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stdout + res.stderr
