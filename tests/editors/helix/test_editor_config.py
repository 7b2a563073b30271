"""`acp-sidecar editor-config helix`: every language of the installed Helix, defaults kept.

The real-Helix tests load the generated snippet as a user's languages.toml
and check what Helix makes of it; the others check the snippet itself and
the fallback to the built-in list when there is no Helix.
"""

from __future__ import annotations

import random
import subprocess
import tomllib
from pathlib import Path

import pytest

from sidecar.editor_config import helix as generator
from sidecar.editor_config import helix_builtin
from tests.editors.helix.harness import SIDECAR_SERVER, HelixEditor, find_hx, find_sidecar

# The 19 languages of the hand-written snippet that the generator replaced.
OLD_SNIPPET_LANGUAGES = {
    *("python", "rust", "markdown", "toml", "javascript", "typescript", "tsx", "jsx", "go", "lua"),
    *("c", "cpp", "java", "ruby", "bash", "json", "yaml", "html", "css"),
}


def editor_config(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(find_sidecar()), "editor-config", "helix", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def servers_by_language(snippet: str) -> dict[str, list[str]]:
    return {entry["name"]: entry["language-servers"] for entry in tomllib.loads(snippet)["language"]}


# ------------------------------------------------------------------ with the real Helix
def test_installed_helix_defaults_are_the_builtin_list() -> None:
    """The committed list is what Helix 25.07.1 reports; regenerate it when this fails."""
    found = generator.installed_languages(str(find_hx()))
    assert found.notes == []
    assert "helix 25.07.1" in found.source
    assert found.languages == helix_builtin.LANGUAGES, (
        "the installed Helix differs from helix_builtin.py: "
        "run `python -m sidecar.editor_config.helix --write-builtin HX`"
    )
    assert generator.builtin_module_source(found, "25.07.1") == Path(helix_builtin.__file__).read_text()


def test_health_table_agrees_with_health_of_each_language(tmp_path: Path) -> None:
    """The table parse against `hx --health LANG` (one language at a time, Helix's plain output)."""
    helix = HelixEditor(tmp_path)
    (helix.config_dir / "languages.toml").unlink()  # Helix's defaults only
    table = generator.parse_health_table(generator.health_table(str(helix.hx)))
    several = sorted(name for name, servers in table.items() if len(servers) > 1)
    others = random.Random(14).sample(sorted(set(table) - set(several)), 15)
    assert len(several) >= 20
    for language in several + others:
        assert tuple(helix.health(language)) == table[language], language


def test_generated_snippet_in_real_helix(helix: HelixEditor) -> None:
    result = editor_config("--hx", str(helix.hx))
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    (helix.config_dir / "languages.toml").write_text(result.stdout)

    # Defaults kept, the sidecar last: python keeps zuban, which the old 19-language snippet dropped.
    python = helix.health("python")
    assert list(python) == [*helix_builtin.LANGUAGES["python"], SIDECAR_SERVER]
    assert "zuban" in python and python[SIDECAR_SERVER]  # found on PATH: Helix can start it
    assert list(helix.health("toml")) == ["taplo", "tombi", SIDECAR_SERVER]
    assert list(helix.health("ini")) == [SIDECAR_SERVER]

    # A language outside the old snippet, with no default server: the sidecar attaches.
    assert "ini" not in OLD_SNIPPET_LANGUAGES
    helix.write("settings.ini", "[agent]\nname = demo\n")
    helix.start("settings.ini")
    helix.wait_agent_ready()
    [opened] = helix.log().of(SIDECAR_SERVER, "textDocument/didOpen", to_server=True)
    assert opened.params["textDocument"]["languageId"] == "ini"
    helix.workspace_command("acp.status")
    helix.wait_screen(r"^demo · no session · idle$", region="message")  # agents start on first use


# ------------------------------------------------------------------ without Helix
def test_without_helix_the_builtin_list_is_used_and_said(tmp_path: Path) -> None:
    result = editor_config(env={"PATH": str(tmp_path), "HOME": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    assert "no Helix found on PATH" in result.stderr and "25.07.1" in result.stderr
    assert "# Note: no Helix found on PATH" in result.stdout
    listed = servers_by_language(result.stdout)
    assert set(listed) == set(helix_builtin.LANGUAGES)
    assert set(listed) > OLD_SNIPPET_LANGUAGES
    for name, servers in listed.items():
        assert servers == [*helix_builtin.LANGUAGES[name], SIDECAR_SERVER], name


def test_an_explicit_hx_that_is_not_helix_fails_loudly() -> None:
    result = editor_config("--hx", "/bin/true")
    assert result.returncode == 1
    assert "/bin/true is not Helix" in result.stderr
    assert result.stdout == ""


def test_command_option_and_quoting() -> None:
    found = generator.HelixLanguages({'we"ird': ("a-ls",)}, "a test")
    snippet = generator.languages_toml(found, command='/opt/my "sidecar"/acp-sidecar')
    parsed = tomllib.loads(snippet)
    assert parsed["language-server"][SIDECAR_SERVER]["command"] == '/opt/my "sidecar"/acp-sidecar'
    assert servers_by_language(snippet) == {'we"ird': ["a-ls", SIDECAR_SERVER]}


TABLE = """\
Language      Language servers   Debug adapter   Formatter
ada           ✘ ada-ls           None            None
python        ✘ ty               None            None
              ✓ acp-sidecar
              ✘ ruff
toml          None               None            None
"""


def test_parse_health_table() -> None:
    assert generator.parse_health_table(TABLE) == {
        "ada": ("ada-ls",),
        "python": ("ty", "acp-sidecar", "ruff"),
        "toml": (),
    }


@pytest.mark.parametrize(
    "table",
    [
        TABLE.replace("python   ", "pyth…    "),
        TABLE.replace("✘ ada-ls  ", "✘ ada-l…  "),
        TABLE.replace("Language servers", "Servers         "),
        "\n".join(TABLE.splitlines()[:1] + TABLE.splitlines()[3:]),
        "",
    ],
    ids=["cut-name", "cut-server", "header", "orphan-row", "empty"],
)
def test_parse_health_table_refuses_what_it_does_not_understand(table: str) -> None:
    with pytest.raises(generator.HelixReadError):
        generator.parse_health_table(table)
