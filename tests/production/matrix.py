"""The compatibility matrix of the production agents (docs/agents.md and the README's table).

Each row is one scenario test of test_production_agents.py; each cell says what that test asserts
for the agent, from the same facts the tests branch on (harness.py), so the committed report says
exactly what a green run proves. The production tests record each outcome in a results file
(conftest.py); `python -m tools.agents_report` writes the report from it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from tests.production.harness import (
    AGENT_NAMES,
    ASKS_PERMISSION,
    CANCELLED_REPLY_IN_NEXT_TURN,
    EDITS_WITH_DIFF,
    LATE_REPLY_AFTER_CANCEL,
    LISTED_TITLE,
    LISTS_SESSIONS,
    LISTS_WITHOUT_TITLES,
    LOADS_AFTER_RESTART,
    NEVER_ASKS,
    REJECT_ABORTS_TURN,
    RENAMES_BY_METHOD,
    REVIEW_NOT_SETTLED,
    STALE_REPLY_AFTER_CANCEL,
    TEXT_AFTER_TOOL_PREFIX,
    TITLES_AFTER_THE_TURN,
    TITLES_BY_UPDATE,
    TOOL_CALLS_NEVER_END,
    TOOL_CALLS_WITHOUT_KIND,
    WHOLE_MESSAGES,
)
from tools.provision.agents import BY_NAME

MODULE = "tests/production/test_production_agents.py"
RESULTS_ENV = "ACP_SIDECAR_AGENT_RESULTS"


@dataclass(frozen=True)
class Row:
    title: str
    tests: tuple[str, ...]  # the test functions proving it (the one parametrised for the agent)


ROWS = (
    Row("initialize shown in `acp/status`", ("test_status_names_the_agent_and_lists_its_choices",)),
    Row("streamed text intact, cancel ends the turn once", ("test_text_streams_and_a_slow_turn_cancels",)),
    Row("read", ("test_read_tool_reads_the_workspace_file",)),
    Row(
        "edit: allowed once, then a rejected one",
        (
            "test_permission_by_dialog_then_by_code_action",
            "test_an_edit_lands_without_a_permission_where_the_agent_never_asks",
        ),
    ),
    Row("edit changed in review", ("test_an_edit_changed_in_review_lands_as_the_user_left_it",)),
    Row("title (list) and rename", ("test_session_list_and_rename",)),
    Row("load after a sidecar restart", ("test_load_after_a_sidecar_restart",)),
)


# Agents installed (`make setup`) that run only part of the scenario offline, and why the other
# rows cannot run; tests/production/test_partial_agents.py shows how far each goes.
PARTIAL_AGENTS = {
    "agentpool": (
        "initialize and what it advertises in `acp/status`, a new session, a text answer and a "
        "read through `fs/read_text_file` pass (test_partial_agents.py); in one trial run of the "
        "whole scenario its streamed text and cancel passed too. Not yet in the matrix: its edit "
        "rows (PRODUCTION-AGENTS.md found it writes through the client's `terminal/*`) were not "
        "settled in this round, it lists sessions but a new sidecar's `session/load` was refused, "
        "and it answers `authMethods: null`."
    ),
    "auggie": (
        "initialize and what it advertises in `acp/status`, `session/new` (with a fake "
        "`AUGMENT_SESSION_AUTH`: Auggie cannot authenticate over ACP) and `session/list` pass. "
        "Every other row needs a prompt, and its prompts go to Augment's own backend "
        "(`/chat-stream`, `/get-models`, `/settings/*`), a private protocol no mock here imitates. "
        "It answers `session/new` at once and creates the session in the background; when that "
        "fails offline (seen under load), the rejection nobody awaits ends the process (agent): "
        "the sidecar reports the exit and starts it again on the next request."
    ),
}


def expected_cell(row: Row, agent: str) -> str:
    """What the row's test asserts for `agent`, in a few words."""
    test = row.tests[0]
    if test == "test_text_streams_and_a_slow_turn_cancels" and agent in LATE_REPLY_AFTER_CANCEL:
        return "yes (after a cancel, replies come one prompt late: agent)"
    if test == "test_text_streams_and_a_slow_turn_cancels" and agent in STALE_REPLY_AFTER_CANCEL:
        return (
            "yes (after a cancel, the next turn shows the rest of the cancelled reply, "
            "and replies come one prompt late: agent)"
        )
    if test == "test_text_streams_and_a_slow_turn_cancels" and agent in CANCELLED_REPLY_IN_NEXT_TURN:
        return (
            "yes, but not streamed: each message comes whole, and a cancelled reply still comes, "
            "at the start of the next turn (agent)"
        )
    if test == "test_text_streams_and_a_slow_turn_cancels" and agent in WHOLE_MESSAGES:
        return "yes, but not streamed: each message comes whole (agent)"
    if test == "test_read_tool_reads_the_workspace_file" and agent in TOOL_CALLS_WITHOUT_KIND:
        return "yes (its tool calls carry no `kind`: agent)"
    if test == "test_read_tool_reads_the_workspace_file" and agent in TOOL_CALLS_NEVER_END:
        return "yes, but the tool call never reports its end (agent bug)"
    if test == "test_read_tool_reads_the_workspace_file" and agent in TEXT_AFTER_TOOL_PREFIX:
        return "yes (its text after a tool call starts with a blank line: agent)"
    if test == "test_permission_by_dialog_then_by_code_action":
        if agent in NEVER_ASKS:
            return "lands without asking (the agent never asks)"
        if agent in REJECT_ABORTS_TURN:
            return "yes (the rejection ends the turn)"
    if test == "test_an_edit_changed_in_review_lands_as_the_user_left_it":
        if agent not in ASKS_PERMISSION:
            return "n/a (never asks)"
        if agent in REVIEW_NOT_SETTLED:
            return f"**{REVIEW_NOT_SETTLED[agent]}**"
        if agent not in EDITS_WITH_DIFF:
            return "no diff offered (rejected instead)"
    if test == "test_session_list_and_rename":
        listed = "`session/list` title" if agent in LISTS_SESSIONS else "fallback title (no `session/list`)"
        if agent in TITLES_BY_UPDATE:
            listed = "the agent's `session_info_update` title"
        if agent in LISTS_WITHOUT_TITLES:
            listed = "fallback title (`session/list` has none: agent)"
        if agent in LISTED_TITLE:
            listed += f' ("{LISTED_TITLE[agent].strip()}…")'
        if agent in TITLES_AFTER_THE_TURN:
            listed += ", titled by the agent after its first turn (a rename before that is overtaken: agent)"
        if agent in RENAMES_BY_METHOD:
            return f"{listed}, rename confirmed by the agent (`{RENAMES_BY_METHOD[agent]}`)"
        return f"{listed}, rename kept locally"
    if test == "test_load_after_a_sidecar_restart" and agent not in LOADS_AFTER_RESTART:
        return "no: a new agent process finds no earlier session (agent), shown as an error"
    return "yes"


def test_of(row: Row, agent: str) -> str | None:
    """The one test of `row` that runs for `agent` (None: the row does not apply to it)."""
    if agent in NEVER_ASKS and row.tests[0] == "test_permission_by_dialog_then_by_code_action":
        return row.tests[1]
    if row.tests[0] == "test_an_edit_changed_in_review_lands_as_the_user_left_it" and (
        agent in NEVER_ASKS or agent in REVIEW_NOT_SETTLED
    ):
        return None
    return row.tests[0]


def expected_results() -> dict[tuple[str, str], str]:
    """Every (test, agent) of the matrix, passed: what a green run records."""
    return {
        (test, agent): "passed"
        for row in ROWS
        for agent in AGENT_NAMES
        if (test := test_of(row, agent)) is not None
    }


def results_path(root: Path) -> Path:
    explicit = os.environ.get(RESULTS_ENV)
    return Path(explicit) if explicit else root / ".pytest_cache" / "acp-agent-results.jsonl"


def read_results(path: Path) -> dict[tuple[str, str], str]:
    """The latest outcome recorded for each (test, agent); a test of a different agent version is ignored."""
    found: dict[tuple[str, str], str] = {}
    for line in path.read_text().splitlines() if path.is_file() else []:
        record = json.loads(line)
        agent = BY_NAME.get(record["agent"])
        if agent is not None and record["version"] == agent.version:
            found[(record["test"], record["agent"])] = record["outcome"]
    return found


def cells(results: dict[tuple[str, str], str]) -> dict[tuple[str, str], str]:
    """(row title, agent) -> the cell: the expected text when the test passed, else its outcome."""
    table: dict[tuple[str, str], str] = {}
    for row in ROWS:
        for agent in AGENT_NAMES:
            test = test_of(row, agent)
            outcome = "passed" if test is None else results.get((test, agent), "not run")
            table[(row.title, agent)] = (
                expected_cell(row, agent) if outcome == "passed" else f"**{outcome.upper()}**"
            )
    return table
