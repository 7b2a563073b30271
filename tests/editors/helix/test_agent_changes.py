"""The agent's changes after they landed, on a real Helix screen (docs/protocol.md, "Agent changes"):
the diagnostic at the agent's line after `#edit`, `space a` *Revert this agent change*, and the
buffer back as it was."""

from __future__ import annotations

from pathlib import Path

from tests.editors.helix.harness import SIDECAR_SERVER, HelixEditor

ADDED = "Edited by the acp-sidecar demo agent."
REVERT = "Revert this agent change"


def text_of(path: Path) -> str | None:
    """None while Helix's write has the file out of its place (it was seen missing for a moment)."""
    try:
        return path.read_text()
    except FileNotFoundError:
        return None


def test_an_agent_edit_is_marked_and_reverted_with_space_a(helix: HelixEditor) -> None:
    before = (helix.workspace / "README.md").read_text()
    helix.start("README.md")
    helix.wait_agent_ready()
    helix.workspace_command("acp.prompt", '"Add a line #edit"')
    helix.wait_screen(r"The agent asks permission")
    helix.send_keys("Enter")  # Allow (preselected): the agent writes README.md, open in Helix
    helix.wait_turns_ended(1)

    helix.command("open README.md")  # back from the conversation Helix was shown
    helix.wait_screen(r"README\.md", region="status")
    helix.wait_screen(ADDED)
    helix.send_keys("g", "e")  # the last line: the agent's
    # Helix shows a hint at the end of its line (end-of-line diagnostics).
    helix.wait_screen(r"added by the agent · ")
    log = helix.log()
    published = [
        d
        for m in log.of(SIDECAR_SERVER, "textDocument/publishDiagnostics", to_server=False)
        for d in m.params["diagnostics"]
    ]
    assert any(d["source"] == "acp-sidecar" and d["severity"] == 4 for d in published), published

    helix.send_keys("k")  # the agent's text line (the last line is the empty one after it)
    helix.send_keys("space", "a")
    helix.wait_screen(REVERT)
    helix.select_item(REVERT)  # the menu's order is Helix's: walk to the action
    helix.send_keys("Enter")
    helix.wait_screen_gone(ADDED)
    helix.wait_screen_gone(r"added by the agent")
    helix.command("write")
    helix.wait_until(lambda: text_of(helix.workspace / "README.md") == before, "README.md as it was")
