"""docs/agents.md and the README's agent table say what the production scenarios assert.

A green production run records every (scenario, agent) as passed; the committed report must be
exactly what tools/agents_report writes from such a run, so changing what a scenario asserts for
an agent (harness.py), adding an agent, or pinning another version fails here until the report
is written again.
"""

from __future__ import annotations

from tests.production import matrix
from tests.production.harness import AGENT_NAMES
from tools import agents_report


def test_the_committed_report_is_what_a_green_run_writes() -> None:
    cells = matrix.cells(matrix.expected_results())
    assert agents_report.DOC.read_text() == agents_report.render_doc(cells)


def test_the_readme_table_is_what_a_green_run_writes() -> None:
    cells = matrix.cells(matrix.expected_results())
    readme = agents_report.README.read_text()
    assert agents_report.with_table(readme, agents_report.render_table(cells)) == readme


def test_every_agent_has_one_test_per_row() -> None:
    expected = matrix.expected_results()
    not_applying = sum(matrix.test_of(row, a) is None for row in matrix.ROWS for a in AGENT_NAMES)
    assert len(expected) == len(matrix.ROWS) * len(AGENT_NAMES) - not_applying
    assert {agent for _, agent in expected} == set(AGENT_NAMES)


def test_a_failed_scenario_shows_in_its_cell() -> None:
    results = matrix.expected_results()
    results[("test_read_tool_reads_the_workspace_file", "qwen")] = "failed"
    cells = matrix.cells(results)
    assert cells[("read", "qwen")] == "**FAILED**"
    assert "6 of 7 (not: read)" in agents_report.render_table(cells)


def test_every_row_names_scenario_tests_that_exist() -> None:
    from tests.production import test_production_agents

    for row in matrix.ROWS:
        assert all(callable(getattr(test_production_agents, test, None)) for test in row.tests), row
