"""Sessions on a real Helix screen: list, load, the conversation's key binding, cancel, and a
sidecar that starts while the title cache knows sessions; each says the right title in the
message line (Helix drops command results: the sidecar says them there)."""

from __future__ import annotations

import re
import sys

from tests.editors.helix.harness import SIDECAR_SERVER, HelixEditor
from tests.editors.helix.lsp_log import LspLog


def prompt_and_wait(helix: HelixEditor, text: str, turns: int) -> None:
    helix.workspace_command("acp.prompt", f'"{text}"')
    helix.wait_turns_ended(turns)


def test_list_load_transcript_and_cancel_name_the_session_by_its_title(helix: HelixEditor) -> None:
    helix.start("main.py")
    helix.wait_agent_ready()
    prompt_and_wait(helix, "#chunks=2 Fix the login bug", 1)
    helix.wait_screen(r"^ACP session: Fix the login bug$", region="message")
    helix.workspace_command("acp.session.new")
    found = helix.wait_screen(r"^ACP session (demo-[0-9a-f]+) is active \(untitled\)$", region="message")
    prompt_and_wait(helix, "#chunks=2 Write the docs", 2)
    helix.wait_screen(r"^ACP session: Write the docs$", region="message")
    second = found.group(1)

    helix.workspace_command("acp.session.list")
    listed = helix.wait_screen(
        rf"^ACP sessions: \* Write the docs — {second}; Fix the login bug — (demo-[0-9a-f]+)$",
        region="message",
    )
    first = listed.group(1)

    # Load by the id the list showed: the message line names the session by its title.
    helix.workspace_command("acp.session.load", f'"{first}"')
    helix.wait_screen(r"^ACP session: Fix the login bug$", region="message")
    # space A t opens its conversation (the status line names the document).
    helix.normal_mode()
    helix.send_keys("space", "A", "t")
    helix.wait_screen(rf"/transcripts/acp-sidecar-demo/{first}-[0-9a-f]+\.md", region="status")
    helix.wait_screen(r"(?m)^\s+\d+  # Fix the login bug$")

    # Cancel (space A c): the progress ends "cancelled" under the loaded session's title.
    helix.workspace_command("acp.prompt", '"#chunks=100 #slow=200 A long answer"')
    helix.wait_screen(r"^acp-sidecar: Fix the login bug ⋅ running$", region="message")
    helix.normal_mode()
    helix.send_keys("space", "A", "c")
    helix.wait_turns_ended(3)
    helix.wait_screen(r"^acp-sidecar: Fix the login bug ⋅ cancelled$", region="message")
    helix.wait_screen(r"_Cancelled \(cancelled\) · ")


def test_a_starting_sidecar_names_no_session_that_is_not_active(helix: HelixEditor) -> None:
    helix.start("main.py")
    helix.wait_agent_ready()
    prompt_and_wait(helix, "#chunks=2 Fix auth timeout", 1)
    helix.wait_screen(r"^ACP session: Fix auth timeout$", region="message")

    # A new sidecar (as at Helix's start) with an empty title cache: agents start on first use,
    # so it starts none, lists nothing and names no session; no session is active.
    helix.command("lsp-stop")
    helix.wait_until(lambda: not helix.processes("bin/acp-sidecar"), "the sidecar to stop")
    for cache in helix.state_dir.glob("titles.sqlite3*"):
        cache.unlink()
    before = len(helix.log().messages)
    helix.command("lsp-restart")

    def restarted(log: LspLog) -> bool:
        after = LspLog(log.messages[before:])
        status = after.of(SIDECAR_SERVER, "acp/status", to_server=False)
        return bool(status) and status[-1].params.get("state") == "idle"

    helix.wait_log(restarted, "the new sidecar to be ready")
    helix.workspace_command("acp.agents")
    helix.wait_screen(r"^ACP agents: \* demo \(stopped\)$", region="message")
    after = LspLog(helix.log().messages[before:])
    assert not after.of(SIDECAR_SERVER, "acp/sessionInfo", to_server=False)
    assert not [m for m in after.show_messages(SIDECAR_SERVER) if m.startswith("ACP session")], (
        after.show_messages(SIDECAR_SERVER)
    )
    assert "Fix auth timeout" not in helix.message_line()
    helix.workspace_command("acp.status")
    # The restarted sidecar has not started its agent yet: it names it as it was called last time.
    helix.wait_screen(r"^acp-sidecar-demo · no session · idle$", region="message")
    assert re.search(r"ACP session", helix.message_line()) is None


def test_a_session_with_the_second_agent_names_it(helix: HelixEditor) -> None:
    """Issue 24: two agents in languages.toml (as the README shows them); a session of the second
    one from `:lsp-workspace-command acp.session.new {"agent": "second"}`, its name in the message
    line and in the session list."""
    store = helix.root / "second-store"
    second = f"""
[language-server.acp-sidecar.config.agents.second]
command = ["{sys.executable}", "-m", "sidecar.demo_agent"]
env = {{ ACP_DEMO_NAME = "second-agent", ACP_DEMO_AGENT_STATE_DIR = "{store}" }}
"""
    languages = helix.config_dir / "languages.toml"
    text = languages.read_text()
    assert text.count('\npermissions = "ask"\n') == 1, "the config table of the generated snippet"
    # The demo agent stays the default: the second one's sessions are named in the message line.
    text = text.replace('\npermissions = "ask"\n', '\npermissions = "ask"\ndefaultAgent = "demo"\n')
    languages.write_text(text + second)
    helix.start("main.py")
    helix.wait_agent_ready()
    helix.workspace_command("acp.agents")
    helix.wait_screen(r"^ACP agents: \* demo \(stopped\), second \(stopped\)$", region="message")
    helix.workspace_command("acp.session.new", '{"agent": "second"}')
    found = helix.wait_screen(
        r"^ACP session (demo-[0-9a-f]+) \[second\] is active \(untitled\)$", region="message"
    )
    prompt_and_wait(helix, "#chunks=2 Ask the second agent", 1)
    helix.wait_screen(r"^ACP session: Ask the second agent$", region="message")
    helix.workspace_command("acp.session.list")
    helix.wait_screen(
        rf"^ACP sessions: \* Ask the second agent \[second\] — {found.group(1)}$", region="message"
    )
