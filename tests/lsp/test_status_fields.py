"""`acp/status` as docs/protocol.md's Status shows it (issue 13 items 8 to 10): the agent by its
`agentInfo.name` with its title apart, the modes and models on offer with their ids, the last
`usage_update` and the context share in `text`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sidecar import __version__
from tests.lsp.editor import open_editor

MODES = [{"id": "ask", "name": "Ask"}, {"id": "code", "name": "Code"}, {"id": "plan", "name": "Plan"}]
MODELS = [{"id": "demo-fast", "name": "Demo Fast"}, {"id": "demo-smart", "name": "Demo Smart"}]
COMMANDS = [
    {"name": "help", "description": "List the demo agent's prompt keywords", "hint": None},
    {
        "name": "edit",
        "description": "Propose an edit to a file (asks permission)",
        "hint": "relative path (default: README)",
    },
    {"name": "permission", "description": "Ask for permission to run a pretend command", "hint": None},
    {"name": "title", "description": "Set the session title", "hint": "new title"},
]
KEYS = {
    "sessionId",
    "title",
    "state",
    "agent",
    "mode",
    "modeId",
    "modes",
    "model",
    "modelId",
    "models",
    "commands",
    "usage",
    "text",
}


def share(usage: dict[str, Any]) -> str:
    percent = 100 * usage["used"] / usage["size"]
    return "<1% context" if 0 < percent < 1 else f"{percent:.0f}% context"


async def test_status_names_the_agent_lists_choices_and_shows_usage(workspace: Path, state_dir: Path) -> None:
    async with open_editor("vscode", workspace, state_dir) as ed:
        status: dict[str, Any] = await ed.command("acp.status")
        # transcriptUri is the transcript work's (issue 12): present or not, the rest is exact.
        assert KEYS <= set(status) <= KEYS | {"transcriptUri"}, status
        # Not started yet (agents start on first use): named as configured.
        assert status["agent"] == {"name": "demo", "title": None, "version": None, "configured": "demo"}
        assert (status["modes"], status["models"], status["usage"], status["modeId"], status["commands"]) == (
            None,
            None,
            None,
            None,
            None,
        )
        assert status["text"] == "demo · no session · idle"
        await ed.command("acp.session.new")
        status = await ed.command("acp.status")
        assert status["agent"] == {
            "name": "acp-sidecar-demo",
            "title": "acp-sidecar demo agent",
            "version": __version__,
            "configured": "demo",
        }
        assert (status["modes"], status["modeId"], status["mode"]) == (MODES, "ask", "Ask")
        assert (status["models"], status["modelId"], status["model"]) == (MODELS, "demo-fast", "Demo Fast")
        assert status["usage"] is None and "context" not in status["text"]
        # The agent's `/` commands, from its available_commands_update (as completion offers them).
        status = await ed.wait_for("acp/status", lambda s: bool(s["commands"]))
        assert status["commands"] == COMMANDS, status["commands"]
        # A long prompt fills more of the context, so the share is a whole percentage.
        await ed.prompt_and_wait("word " * 1200 + "\n#title Fix auth timeout")
        status = await ed.wait_for("acp/status", lambda s: s["usage"] is not None and s["state"] == "idle")
        usage = status["usage"]
        assert usage["size"] == 128000 and usage["used"] > 0, usage
        assert usage["cost"]["currency"] == "USD" and usage["cost"]["amount"] > 0, usage
        assert status["text"].endswith(f"· {share(usage)}"), status["text"]
        await ed.command("acp.session.setMode", "code")
        await ed.command("acp.session.setModel", "demo-smart")
        await ed.prompt_and_wait("#chunks=1 once more")
        status = await ed.wait_for(
            "acp/status", lambda s: (s["usage"] or {}).get("size") == 200000 and s["state"] == "idle"
        )
        assert (status["modeId"], status["mode"], status["modelId"], status["model"]) == (
            "code",
            "Code",
            "demo-smart",
            "Demo Smart",
        )
        final = await ed.command("acp.status")
        assert final == status == ed.of("acp/status")[-1]
    # The Status example reported for docs/protocol.md (seen with -s).
    print("\nStatus:", json.dumps(final, indent=1))
    assert final["text"] == (
        f"acp-sidecar demo agent · Fix auth timeout · idle · mode Code · Demo Smart · {share(final['usage'])}"
    )


@pytest.mark.parametrize("caps", ["legacy-model,no-cost"])
async def test_status_with_legacy_models_and_no_cost(caps: str, workspace: Path, state_dir: Path) -> None:
    async with open_editor("helix", workspace, state_dir, env={"ACP_DEMO_CAPS": caps}) as ed:
        await ed.command("acp.session.new")
        status = await ed.command("acp.status")
        assert (status["models"], status["modelId"]) == (MODELS, "demo-fast")
        await ed.command("acp.session.setModel", "demo-smart")
        await ed.prompt_and_wait("#chunks=1 hi")
        status = await ed.wait_for(
            "acp/status", lambda s: s["usage"] is not None and s["modelId"] == "demo-smart"
        )
        assert set(status["usage"]) == {"used", "size"}, "no cost sent, none shown"
        assert status["usage"]["size"] == 200000
