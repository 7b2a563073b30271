"""A languages.toml snippet that adds acp-sidecar to every language Helix knows.

Helix has no global language server: a server runs for a document only when
its language lists it, and a `language-servers` list in the user's
languages.toml replaces Helix's default list for that language. So the
snippet repeats, for each language, the default servers of the installed
Helix (first: they keep priority for completion, hover, formatting) and adds
`acp-sidecar` last.

The defaults come from the installed Helix: `hx --health all-languages`
prints one table row per language with its configured servers. Run with an
empty private config (so the user's own languages.toml does not leak in) on
a wide pseudo-terminal (Helix cuts cells to the terminal width). When no
Helix is found, or it cannot be read, a list generated from Helix 25.07.1
(`helix_builtin.py`) is used, and the snippet says so.

Limit: `hx --health` shows server names only, so a default entry that
restricts a server's features (`{ name = ..., except-features = [...] }`,
e.g. erlang as of 25.07) becomes the plain name.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import shutil
import struct
import subprocess
import tempfile
import termios
import time
from dataclasses import dataclass, field
from pathlib import Path

from sidecar.editor_config import helix_builtin

SERVER_NAME = "acp-sidecar"
HX_NAMES = ("hx", "helix")  # Debian and most distributions ship `hx`; Arch and Fedora `helix`
_COLUMNS = 2000  # wide enough that no cell is cut (Helix divides the width among 9 columns)
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_TIMEOUT = 30.0

# The server's own section: the same as editor-configs/helix/languages.toml (a test keeps them equal).
SERVER_SECTION = f"""\
[language-server.{SERVER_NAME}]
command = "{SERVER_NAME}"
args = []
# Optional: a log of the sidecar itself.
# args = ["--log-file", "/tmp/acp-sidecar.log"]

# `config` is sent as initializationOptions (docs/protocol.md "initializationOptions").
[language-server.{SERVER_NAME}.config]
# ask: a permission request is a popup when Helix offers one, else code actions (space-a);
# allow_reads answers read/search requests itself.
permissions = "ask"

# The ACP agent. Leave it out to use ACP_SIDECAR_AGENT or the embedded demo agent.
# [language-server.{SERVER_NAME}.config.agent]
# command = ["codex-acp"]
# env = {{ RUST_LOG = "warn" }}

[language-server.{SERVER_NAME}.config.rename]
timeoutMs = 120000
fallback = "keep_local"

[language-server.{SERVER_NAME}.config.titles]
maxLength = 500

[language-server.{SERVER_NAME}.config.notify]
# Helix ignores custom notifications: show the session title in the message line.
titleAsShowMessage = true
"""


class HelixReadError(RuntimeError):
    """The installed Helix could not be asked for its languages; the message says why."""


@dataclass(frozen=True)
class HelixLanguages:
    """Each language Helix knows -> its default language servers, in order."""

    languages: dict[str, tuple[str, ...]]
    source: str  # where the list comes from, for the snippet's header
    notes: list[str] = field(default_factory=list)  # why the built-in list was used, if it was


def find_hx() -> str | None:
    for name in HX_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


def _read_pty(master: int, proc: subprocess.Popen[bytes], what: str) -> bytes:
    """All `proc` writes to the terminal until it closes it; killed after _TIMEOUT."""
    deadline = time.monotonic() + _TIMEOUT
    chunks: list[bytes] = []
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            proc.kill()
            raise HelixReadError(f"`{what}` did not finish in {_TIMEOUT:g} s")
        ready, _, _ = select.select([master], [], [], min(remaining, 0.5))
        if not ready:
            if proc.poll() is not None:
                return b"".join(chunks)
            continue
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the terminal's other end is closed
            return b"".join(chunks)
        if not data:
            return b"".join(chunks)
        chunks.append(data)


def health_table(hx: str) -> str:
    """`hx --health all-languages` as Helix prints it on a wide terminal, colours removed."""
    with tempfile.TemporaryDirectory(prefix="acp-sidecar-hx-") as tmp:
        home = Path(tmp)
        # An empty private config and a neutral working directory: only Helix's defaults.
        env = dict(os.environ, HOME=str(home), XDG_CONFIG_HOME=str(home / "config"), COLUMNS=str(_COLUMNS))
        master, slave = pty.openpty()
        try:
            fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, _COLUMNS, 0, 0))
            try:
                proc = subprocess.Popen(
                    [hx, "--health", "all-languages"],
                    stdin=slave,
                    stdout=slave,
                    stderr=slave,
                    cwd=home,
                    env=env,
                    start_new_session=True,
                )
            except OSError as exc:
                raise HelixReadError(f"cannot run {hx}: {exc}") from exc
            os.close(slave)
            slave = -1
            with proc:
                raw = _read_pty(master, proc, f"{hx} --health all-languages")
                code = proc.wait(timeout=_TIMEOUT)
        finally:
            os.close(master)
            if slave >= 0:
                os.close(slave)
    text = _ANSI.sub("", raw.decode("utf-8", errors="replace")).replace("\r", "")
    if code != 0:
        raise HelixReadError(f"`{hx} --health all-languages` exited {code}: {text.strip()[-300:]}")
    return text


def parse_health_table(text: str) -> dict[str, tuple[str, ...]]:
    """Rows of `hx --health all-languages`: language name, then "✓ server"/"✘ server" or "None".

    A language with several servers continues on rows whose first cell is empty.
    """
    lines = text.splitlines()
    header_at = next((i for i, line in enumerate(lines) if line.startswith("Language ")), None)
    if header_at is None:
        raise HelixReadError("no table header in `hx --health all-languages`")
    header = lines[header_at]
    servers_at = header.find("Language servers")
    after = re.search(r"\S", header[servers_at + len("Language servers") :])
    if servers_at <= 0 or after is None:
        raise HelixReadError(f"unexpected table header: {header.strip()!r}")
    servers_end = servers_at + len("Language servers") + after.start()
    languages: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in lines[header_at + 1 :]:
        if not line.strip():
            continue
        name = line[:servers_at].strip()
        cell = line[servers_at:servers_end].strip()
        if "…" in name or "…" in cell:
            raise HelixReadError(f"the table is cut at this width: {line.strip()!r}")
        if name:
            if " " in name or name in languages:
                raise HelixReadError(f"unexpected language cell {name!r}")
            current = languages[name] = []
        elif current is None:
            raise HelixReadError(f"a continuation row before any language: {line.strip()!r}")
        if cell in ("", "None"):
            continue
        mark, _, server = cell.partition(" ")
        if mark not in ("✓", "✘") or not server or " " in server:
            raise HelixReadError(f"unexpected language server cell {cell!r}")
        current.append(server)
    if not languages:
        raise HelixReadError("no languages in `hx --health all-languages`")
    return {name: tuple(servers) for name, servers in languages.items()}


def version_of(hx: str) -> str:
    try:
        result = subprocess.run([hx, "--version"], capture_output=True, text=True, timeout=_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise HelixReadError(f"cannot run {hx} --version: {exc}") from exc
    if result.returncode != 0 or not result.stdout.startswith("helix "):
        said = (result.stdout + result.stderr).strip().splitlines()
        raise HelixReadError(f"{hx} is not Helix: `--version` said {said[0] if said else 'nothing'!r}")
    return result.stdout.strip()


def builtin_languages(notes: list[str] | None = None) -> HelixLanguages:
    return HelixLanguages(
        dict(helix_builtin.LANGUAGES),
        f"the built-in list of Helix {helix_builtin.HELIX_VERSION}'s defaults",
        list(notes or []),
    )


def installed_languages(hx: str | None = None) -> HelixLanguages:
    """The defaults of the Helix at `hx` (else found on PATH); the built-in list when there is none."""
    path = hx or find_hx()
    if path is None:
        return builtin_languages([f"no Helix found on PATH (looked for {', '.join(HX_NAMES)})"])
    try:
        version = version_of(path)
        languages = parse_health_table(health_table(path))
    except HelixReadError as exc:
        if hx is not None:  # asked for this Helix explicitly: say so rather than fall back
            raise
        return builtin_languages([f"{path} could not be read: {exc}"])
    return HelixLanguages(languages, f"`{path} --health` ({version})")


def _toml_string(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def languages_toml(
    found: HelixLanguages, command: str = SERVER_NAME, full_path_because: str | None = None
) -> str:
    """The snippet: the server's section, then every language with its defaults and the sidecar."""
    header = [
        "# acp-sidecar for Helix: merge this into ~/.config/helix/languages.toml.",
        "# Generated by `acp-sidecar editor-config helix` from " + found.source + ".",
        *(f"# Note: {note}" for note in found.notes),
        *(
            [f"# Note: {full_path_because}: the command is this install's, by its full path."]
            if full_path_because
            else []
        ),
        "#",
        "# Helix has no global language server, and a `language-servers` list here REPLACES",
        "# Helix's default list for that language: so each language below keeps Helix's",
        "# default servers first and adds acp-sidecar last. If you changed a language's",
        "# servers yourself, keep your list and add acp-sidecar to it. `hx --health` shows",
        "# server names only: a default that limits a server's features becomes its plain name.",
        "",
    ]
    section = SERVER_SECTION
    if command != SERVER_NAME:
        section = section.replace(f'command = "{SERVER_NAME}"', f"command = {_toml_string(command)}", 1)
    body = [section]
    for name in sorted(found.languages):
        servers = [s for s in found.languages[name] if s != SERVER_NAME] + [SERVER_NAME]
        listed = ", ".join(_toml_string(s) for s in servers)
        body.append(f"[[language]]\nname = {_toml_string(name)}\nlanguage-servers = [{listed}]\n")
    return "\n".join(header) + "\n".join(body)


def config_toml_as_comment(config_toml: str) -> str:
    """editor-configs/helix/config.toml as comments that close the languages.toml snippet.

    Commented out, so the whole output still is a languages.toml (Helix refuses unknown
    tables there); `editor-config helix --config` prints it plain.
    """
    lines = [
        "",
        "# " + "-" * 90,
        "# And in ~/.config/helix/config.toml (not languages.toml): progress text and key bindings.",
        "# `acp-sidecar editor-config helix --config` prints this part alone, uncommented.",
        "#",
    ]
    lines += [f"# {line}" if line else "#" for line in config_toml.splitlines()]
    return "\n".join(lines) + "\n"


def builtin_module_source(found: HelixLanguages, version: str) -> str:
    """helix_builtin.py for `found` (maintainers: `python -m sidecar.editor_config.helix --write-builtin`)."""

    def quoted(servers: tuple[str, ...]) -> str:
        inner = ", ".join(json.dumps(s) for s in servers)
        return f"({inner},)" if len(servers) == 1 else f"({inner})"

    rows = "\n".join(
        f"    {json.dumps(name)}: {quoted(found.languages[name])}," for name in sorted(found.languages)
    )
    return (
        f'"""The default language servers of each language of Helix {version}.\n\n'
        f"Generated from `hx --health all-languages` of Debian's hx {version} by\n"
        "`python -m sidecar.editor_config.helix --write-builtin`; do not edit by hand.\n"
        '"""\n\n'
        f"HELIX_VERSION = {json.dumps(version)}\n\n"
        f"LANGUAGES: dict[str, tuple[str, ...]] = {{\n{rows}\n}}\n"
    )


def _write_builtin(hx: str | None) -> int:
    path = hx or find_hx()
    if path is None:
        print("no Helix found on PATH")
        return 1
    version = version_of(path).removeprefix("helix ").split()[0]
    found = HelixLanguages(parse_health_table(health_table(path)), path)
    target = Path(__file__).with_name("helix_builtin.py")
    target.write_text(builtin_module_source(found, version))
    print(f"{target}: {len(found.languages)} languages of Helix {version}")
    return 0


if __name__ == "__main__":
    import sys

    if sys.argv[1:2] != ["--write-builtin"]:
        sys.exit("usage: python -m sidecar.editor_config.helix --write-builtin [HX]")
    raise SystemExit(_write_builtin(sys.argv[2] if len(sys.argv) > 2 else None))
