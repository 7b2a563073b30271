"""Which production agents use the client's terminals and questions when offered (issue 25).

The sidecar always offers `terminal: true` and `elicitation: {form, url}`. Over the mock model,
each agent is asked to run a shell command (`[mock:shell]`: its own shell tool), and codex-acp to
ask the user a question (`[mock:ask]`: its `request_user_input`). Whether the agent ran the command
in a client terminal (`terminal/create` to the sidecar, which then shows the tool call's terminal)
or itself, and whether it asked through `elicitation/create`, is recorded below as what each agent
does; either way the command's output must reach the model and the turn end once.
"""

from __future__ import annotations

import secrets
from typing import Any

import pytest

from tests.production.harness import ALLOW_TITLE, Setup
from tests.production.mock_script import ASK_REPLY, shell_reply
from tests.production.test_production_agents import ended_once_each, tool_calls

pytestmark = pytest.mark.production

# What each agent does with a shell command when the client offers terminals (found by this test).
USES_CLIENT_TERMINAL = {"gemini": False, "claude": False, "codex": False}
SHELL_AGENTS = tuple(USES_CLIENT_TERMINAL)


def terminal_contents(calls: list[dict[str, Any]]) -> list[Any]:
    return [c for call in calls for c in call.get("content") or [] if c.get("type") == "terminal"]


@pytest.mark.parametrize("agent_name", SHELL_AGENTS)
async def test_a_shell_command_runs_where_the_agent_chooses(setup: Setup) -> None:
    token = f"TOKEN-{secrets.token_hex(4)}"
    setup.mock.script.shell_command = f"echo {token}"
    async with setup.editor() as ed:
        await ed.command("acp.session.new")
        ed.permission_choice = ALLOW_TITLE[setup.name]
        admitted, end = await ed.prompt_and_wait("Run it [mock:shell]", timeout=120)
        assert end["stopReason"] == "end_turn", end
        assert ed.text_of(admitted["turnId"]) == shell_reply([token]), setup.mock.describe()
        calls = tool_calls(ed, admitted["turnId"])
        assert calls, "the command shows as a tool call"
        in_terminal = bool(terminal_contents(calls))
        assert in_terminal == USES_CLIENT_TERMINAL[setup.name], calls
        ended_once_each(ed)


@pytest.mark.parametrize("agent_name", ["codex"])
async def test_codex_cannot_ask_the_user_in_the_modes_it_offers(setup: Setup) -> None:
    """codex's one question tool, `request_user_input`, is declared to the model but refused
    outside its Plan mode, and codex-acp offers no Plan mode over ACP (its modes are approval
    presets): the question never reaches the client as `elicitation/create` (agent behaviour)."""
    async with setup.editor() as ed:
        await ed.command("acp.session.new")
        status = await ed.command("acp.status")
        assert "plan" not in " ".join(m["id"] + m["name"] for m in status["modes"]).lower(), status
        admitted, end = await ed.prompt_and_wait("Ask me [mock:ask]", timeout=120)
        assert end["stopReason"] == "end_turn", end
        assert ed.of("acp/elicitation") == [] and ed.message_requests == []
        (answered,) = [r for r in setup.mock.of("ask") if r.tool_results]
        assert "request_user_input is unavailable" in answered.tool_results[0], answered.tool_results
        assert ed.text_of(admitted["turnId"]) == f"{ASK_REPLY} {answered.tool_results[0]}"
        ended_once_each(ed)
