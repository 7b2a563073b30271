"""`python -m tools.agents_report [--check]`: the production agents' compatibility report.

Writes docs/agents.md (agent x scenario, with versions) and the README's agent table from the
outcomes the production tests recorded (tests/production/conftest.py; the file is
`$ACP_SIDECAR_AGENT_RESULTS`, else `.pytest_cache/acp-agent-results.jsonl`). A cell is what the
scenario asserts for that agent when its test passed, else the outcome in capitals. `--check`
compares instead of writing (exit 1 on a difference).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tests.production import matrix
from tests.production.harness import AGENT_NAMES
from tools.provision.agents import BY_NAME

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "agents.md"
README = ROOT / "README.md"
START = "<!-- agents-table: written by python -m tools.agents_report -->"
END = "<!-- /agents-table -->"

HEADER = """\
# Production agents proven through the sidecar

Written by `python -m tools.agents_report` from the outcomes of the production tests
(`tests/production/test_production_agents.py`): each agent, installed from npm at the pinned
version (`make setup`), runs offline against the mock model (`tests/production/mock_model.py`),
driven through the real sidecar over a real LSP pipe. Every test also shuts the sidecar down as
an editor does and checks that no process of the agent is left, including detached ones (found by
the agent's private `HOME`). A cell says what the test asserts for that agent; "(agent)" marks
the agent's own behaviour. `tests/unit/test_agents_report.py` fails when this file no longer says
what the tests assert.
"""


def package_of(agent: str) -> str:
    found = BY_NAME[agent]
    extras = "".join(f" + `{extra}`" for extra in found.extras)
    return f"`{found.package}@{found.version}`{extras}"


def render_doc(cells: dict[tuple[str, str], str]) -> str:
    lines = [HEADER, "| Scenario | " + " | ".join(AGENT_NAMES) + " |"]
    lines.append("|---" * (len(AGENT_NAMES) + 1) + "|")
    lines.append("| package | " + " | ".join(package_of(a) for a in AGENT_NAMES) + " |")
    for row in matrix.ROWS:
        lines.append(f"| {row.title} | " + " | ".join(cells[(row.title, a)] for a in AGENT_NAMES) + " |")
    lines += ["", "## Agents that run only part of the scenario offline", ""]
    lines += [f"- {agent} ({package_of(agent)}): {why}" for agent, why in matrix.PARTIAL_AGENTS.items()]
    return "\n".join(lines) + "\n"


def render_table(cells: dict[tuple[str, str], str]) -> str:
    lines = [START, "| Agent | Package | Scenarios passing |", "|---|---|---|"]
    for agent in AGENT_NAMES:
        failing = [row.title for row in matrix.ROWS if cells[(row.title, agent)].startswith("**")]
        count = f"{len(matrix.ROWS) - len(failing)} of {len(matrix.ROWS)}"
        note = f" (not: {'; '.join(failing)})" if failing else ""
        lines.append(f"| {agent} | {package_of(agent)} | {count}{note} |")
    for agent in matrix.PARTIAL_AGENTS:
        lines.append(f"| {agent} | {package_of(agent)} | partly offline: see docs/agents.md |")
    return "\n".join([*lines, END])


def with_table(readme: str, table: str) -> str:
    before, rest = readme.split(START, 1)
    return before + table + rest.split(END, 1)[1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.agents_report", description=__doc__)
    ap.add_argument("--check", action="store_true", help="compare with the committed files, write nothing")
    args = ap.parse_args(argv)
    cells = matrix.cells(matrix.read_results(matrix.results_path(ROOT)))
    wanted = {DOC: render_doc(cells), README: with_table(README.read_text(), render_table(cells))}
    stale = [path for path, text in wanted.items() if not path.is_file() or path.read_text() != text]
    if args.check:
        for path in stale:
            print(f"{path.relative_to(ROOT)} differs from the recorded results", file=sys.stderr)
        return 1 if stale else 0
    for path in stale:
        path.write_text(wanted[path])
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
