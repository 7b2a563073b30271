"""The pure parts of composing and navigating: mentions found in a prompt, the agent's commands
bounded and cleaned, files ranked for `@`, and a transcript document's outline."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sidecar.features.conversation.outline import outline
from sidecar.features.conversation.workspace_files import rank
from sidecar.kernel.mentions import find_mentions, mention_text
from sidecar.kernel.slash_commands import MAX_COMMANDS, parse_commands
from tests.unit.transcripts.helpers import agent, rendered, renderer


def paths(text: str) -> list[str]:
    return [m.path for m in find_mentions(text)]


def test_mentions_are_paths_after_whitespace_outside_code() -> None:
    text = (
        'Compare @README.md, @"docs/my notes.md" and (@src/app.py). Not @Override, me@x.com, '
        "`@a.py`, or\n```\n@fenced/file.py\n```\nbut @last.txt."
    )
    assert paths(text) == ["README.md", "docs/my notes.md", "src/app.py", "last.txt"]
    assert paths("@README.md @README.md") == ["README.md"]  # once each


def test_a_picked_file_is_written_so_that_it_reads_back() -> None:
    assert mention_text("src/app.py") == "@src/app.py"
    assert mention_text("docs/my notes.md") == '@"docs/my notes.md"'
    for path in ("src/app.py", "docs/my notes.md", "a b/c.d"):
        assert paths(f"look at {mention_text(path)} now") == [path]


@given(st.text())
def test_finding_mentions_never_fails(text: str) -> None:
    for mention in find_mentions(text):
        assert mention.path and mention.written.startswith("@")


def test_commands_are_bounded_cleaned_and_unique() -> None:
    update = {
        "availableCommands": [
            {"name": "/edit", "description": "Edit\x1b[31m a file\n", "input": {"hint": "path"}},
            {"name": "edit", "description": "again"},
            {"name": "two words"},
            {"name": 3},
            "junk",
            *({"name": f"c{i}", "description": "x" * 1000} for i in range(500)),
        ]
    }
    commands = parse_commands(update)
    assert commands[0].name == "edit" and commands[0].hint == "path"
    assert "\x1b" not in commands[0].description and "\n" not in commands[0].description
    assert len(commands) == MAX_COMMANDS
    assert all(len(c.description) <= 300 for c in commands)
    assert parse_commands({"availableCommands": None}) == ()


def test_files_rank_by_name_then_path_then_anywhere() -> None:
    files = ["docs/readme-old.txt", "README.md", "src/app.py", "src/reader.py", "xreadme"]
    found, more = rank(files, "read", 10)
    assert found == ["docs/readme-old.txt", "README.md", "src/reader.py", "xreadme"]
    assert not more
    assert rank(files, "", 2) == (files[:2], True)


def test_the_outline_names_turns_by_prompt_and_folds_diffs() -> None:
    r = renderer()
    r.prompt([{"type": "text", "text": "Fix the bug in @src/app.py"}], None)
    r.update(agent("Looking."))
    r.update(
        {
            "sessionUpdate": "tool_call",
            "toolCallId": "t1",
            "title": "Edit src/app.py",
            "kind": "edit",
            "status": "pending",
            "locations": [{"path": "/ws/src/app.py", "line": 3}],
            "content": [{"type": "diff", "path": "/ws/src/app.py", "oldText": "a\nb\n", "newText": "a\nc\n"}],
        }
    )
    r.turn_ended("end_turn")
    r.prompt([{"type": "text", "text": "second ask"}], None)
    text = rendered(r)
    lines = text.split("\n")
    shape = outline(text)
    assert [t.name for t in shape.turns] == ["Fix the bug in @src/app.py", "second ask"]
    assert [title for _, title in shape.turns[0].tools] == ["Edit src/app.py"]
    diff = next(f for f in shape.folds if not f.region)
    assert lines[diff.start].startswith("Diff of ") and lines[diff.end].startswith("```")
    where = [(p.path, p.target_line) for p in shape.paths]
    assert ("src/app.py", 3) in where and ("src/app.py", None) in where
    # A heading inside a fenced block is not a turn.
    assert len(outline("## You\n\nhi\n\n```\n## You\n```\n").turns) == 1
