"""Production agents' slash commands in the prompt area: claude-agent-acp and gemini-cli (over the
mock model) send `available_commands_update` for a new session, and `/` at the start of a
transcript's prompt area offers exactly those commands, each with its description, filtered by
what is typed; nothing is offered after the first word. A name of several words (gemini-cli's
`memory show`, a subcommand) is not offered: its first word is, as a command of its own."""

from __future__ import annotations

from typing import Any

import pytest

from tests.lsp.test_compose import complete, labels, open_transcript, type_prompt
from tests.production.harness import Setup

pytestmark = pytest.mark.production


@pytest.fixture(params=("gemini", "claude"))
def agent_name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def advertised(update: dict[str, Any], session_id: str) -> list[dict[str, Any]] | None:
    if update.get("sessionId") != session_id:
        return None
    inner = update["update"]
    if inner.get("sessionUpdate") != "available_commands_update" or not inner.get("availableCommands"):
        return None
    return list(inner["availableCommands"])


async def test_the_agents_own_commands_are_offered_after_slash(setup: Setup) -> None:
    async with setup.editor() as ed:
        session_id = (await ed.command("acp.session.new"))["sessionId"]
        note = await ed.wait_for(
            "acp/sessionUpdate", lambda u: advertised(u, session_id) is not None, timeout=60
        )
        commands = advertised(note, session_id)
        assert commands
        # The last update wins: the agent may send its list more than once.
        for later in ed.of("acp/sessionUpdate"):
            commands = advertised(later, session_id) or commands
        uri, _ = await open_transcript(ed, session_id)
        line, character = await type_prompt(ed, uri, "/")
        found = await complete(ed, uri, line, character)
        words = [c for c in commands if " " not in c["name"]]
        assert len(words) >= 3, commands
        names = ["/" + c["name"] for c in words]
        assert labels(found) == names[:100], (labels(found), names)
        assert found is not None
        by_label = {item.label: item for item in found.items}
        for command in words[:100]:
            item = by_label["/" + command["name"]]
            # The description, on one line and cut at 300 characters (a long one ends in "…").
            documentation = " ".join(str(item.documentation or "").split())
            assert " ".join(command["description"].split())[:250] in documentation, (command, item)
            assert item.text_edit is not None and item.text_edit.new_text == f"/{command['name']} "

        # Typing narrows the offer to the commands starting with what was typed.
        first = words[0]["name"]
        line, character = await type_prompt(ed, uri, "/" + first[:2])
        narrowed = labels(await complete(ed, uri, line, character))
        assert narrowed == [n for n in names if n[1:].lower().startswith(first[:2].lower())][:100], narrowed
        # Not after the first word.
        line, character = await type_prompt(ed, uri, "please /")
        assert labels(await complete(ed, uri, line, character)) == []
