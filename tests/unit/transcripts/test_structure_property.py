"""Property: whatever the agent writes, the document's own structure is exactly what we wrote.

Checked with a real CommonMark parser (markdown-it-py, CommonMark and GFM-like presets): the
headings of the rendered document are ours, in order, and it ends with the prompt area.
"""

from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from sidecar.features.conversation.blocks import MarkdownEscaper
from sidecar.features.conversation.clean import TextCleaner
from sidecar.features.conversation.document import MARKER, PROMPT_AREA, header_text, separator_for
from sidecar.features.conversation.render import Renderer
from sidecar.features.conversation.store import ConversationStore

from .helpers import FIXED, assert_well_formed
from .markdown_structure import PARSERS, prompt_area_ok, structure

# Characters that matter to Markdown's block structure, plus a little of everything else.
# fmt: off
MARKDOWN_BITS = [
    "#", "##", "###### ", "`", "```", "````", "~~~", "~", "-", "---", "- ", "* ", "*", "_", "___",
    "=", "===", "+ ", ">", "> ", "1. ", "2) ", "123456789. ", "<", "<!--", "-->", "<pre>", "</pre>",
    "<div>", "<?", "<![CDATA[", "]]>", "<script>", " ", "  ", "    ", "\t", "\n", "\n\n", "\r\n", "\r",
    "\\", "a", "word", "é", "\x00", "\x1b[31m", "\x1b]0;x\x07", "\u2028", "\ud800", "|", "[x]", "]:",
    MARKER, "## Your prompt", "## You", "## Agent",
]
# fmt: on
free_text = st.lists(st.sampled_from(MARKDOWN_BITS) | st.text(max_size=3), max_size=40).map("".join)
# Whole lines built like Markdown's block structure: indentation, container markers, a line start
# that means something, then anything.
INDENTS = ["", "", " ", "  ", "   ", "    ", "\t", "     "]
CONTAINERS = ["", "", "> ", ">", "- ", "* ", "+ ", "1. ", "2) ", "-\t", "> - ", "- > ", "10. "]
# fmt: off
CORES = [
    "```", "````", "```py", "``` `x`", "~~~", "~~~~ x", "# x", "## You", "######", "#x", "---", "- - -",
    "***", "___", "===", "=", "-", "<pre>", "</pre>", "<!--", "-->", "<div>", "<?x", "text", "", "b",
    MARKER, "    code", "\\#", "> ```",
]
# fmt: on
line = st.tuples(
    st.sampled_from(INDENTS), st.sampled_from(CONTAINERS), st.sampled_from(CORES), st.text(max_size=2)
)
lines_text = st.lists(line.map("".join), max_size=12).map("\n".join)
markdown_text = st.one_of(free_text, lines_text, lines_text)


def chunked(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts} | {0, len(text)})
    return [text[a:b] for a, b in itertools.pairwise(points)]


def render_document(agent_texts: list[str], cuts: list[int], user_text: str = "Question") -> str:
    renderer = Renderer(cwd="/ws")
    renderer.prompt([{"type": "text", "text": user_text}])
    for index, text in enumerate(agent_texts):
        for piece in chunked(text, cuts):
            renderer.update(
                {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": piece}}
            )
        if index % 2 == 0:
            renderer.update(
                {
                    "sessionUpdate": "tool_call",
                    "toolCallId": f"t{index}",
                    "title": text[:30],
                    "status": "pending",
                }
            )
        else:
            renderer.update(
                {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": text}}
            )
    renderer.turn_ended("end_turn")
    batch = renderer.take()
    assert batch is not None
    body = batch.text
    return header_text("Title", "agent", "session") + body + separator_for(body) + PROMPT_AREA


def expected_headings(user_text: str = "Question") -> list[tuple[str, str]]:
    return [("h1", "Title"), ("h2", "You"), ("h2", "Agent"), ("h2", "Your prompt")]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(markdown_text, min_size=1, max_size=3), st.lists(st.integers(0, 500), max_size=8))
@example(["- a\n\n  ```\ncode at col 0\n```\n# x"], [])
@example(["> ```\n# inside?\n```"], [3])
@example(["> a\nb\n  ```\n```\n# x"], [])
@example(["<pre>\n\n# x"], [])
@example([" ```##"], [450])
@example(["foo\n---"], [4])
@example(["```\n" + MARKER + "\n"], [])
@example(["1. a\n   ```\n   # in code\n   ```\nb\n```\n# h"], [7, 8, 9])
def test_agent_text_cannot_forge_structure(agent_texts: list[str], cuts: list[int]) -> None:
    document = render_document(agent_texts, cuts)
    for parser in PARSERS:
        found = structure(document, parser)
        assert found.headings == expected_headings(), (parser, document)
        assert prompt_area_ok(document, parser), (parser, document)
        assert found.comments.count(MARKER) == 1, (parser, document)


@settings(max_examples=200, deadline=None)
@given(markdown_text, st.lists(st.integers(0, 500), max_size=8))
def test_user_text_cannot_forge_structure(user_text: str, cuts: list[int]) -> None:
    document = render_document(["answer"], cuts, user_text=user_text)
    for parser in PARSERS:
        assert structure(document, parser).headings == expected_headings(), (parser, document)
        assert prompt_area_ok(document, parser), (parser, document)


@settings(max_examples=300, deadline=None)
@given(markdown_text, st.lists(st.integers(0, 500), max_size=10))
# A chunk ending in an open escape and a lone high surrogate (found by this test in a full run).
@example("#########0\x9b\ud800#", [12])
@example("##########0\x9b\ud800##", [14])
def test_chunking_does_not_change_the_output(text: str, cuts: list[int]) -> None:
    def run(pieces: list[str]) -> str:
        cleaner, escaper = TextCleaner(), MarkdownEscaper()
        out = [escaper.feed(cleaner.feed(p)) for p in pieces]
        out.append(escaper.feed(cleaner.finish()))
        return "".join(out) + escaper.close()

    assert run(chunked(text, cuts)) == run([text])


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(st.lists(markdown_text, min_size=1, max_size=3), st.lists(st.integers(0, 500), max_size=6))
@example(["x\n```py\nstill code"], [5, 9])
def test_the_file_is_well_formed_after_every_append(
    tmp_path_factory: pytest.TempPathFactory, agent_texts: list[str], cuts: list[int]
) -> None:
    """Also while an agent streams: the prompt area is never inside an unfinished code block."""
    store = ConversationStore(tmp_path_factory.mktemp("state"), durable=False)
    renderer = Renderer()
    renderer.prompt([{"type": "text", "text": "go"}])
    for index, text in enumerate(agent_texts):
        for piece in chunked(text, cuts):
            renderer.update(
                {
                    "sessionUpdate": "agent_message_chunk",
                    "messageId": f"m{index}",
                    "content": {"type": "text", "text": piece},
                }
            )
            batch = renderer.take()
            if batch is not None:
                store.append("agent", "session", batch)
                document = store.read("agent", "session")
                assert document is not None
                assert_well_formed(document)
    renderer.turn_ended("end_turn")
    batch = renderer.take()
    assert batch is not None
    store.append("agent", "session", batch)
    document = store.read("agent", "session")
    assert document is not None
    assert_well_formed(document)


@settings(max_examples=80, deadline=None)
@given(
    markdown_text,
    st.lists(st.integers(0, 500), max_size=8),
    st.sampled_from(["agent_message_chunk", "agent_thought_chunk"]),
)
@example("x\n```py\n    code\n# not a heading", [3, 4, 9, 12], "agent_message_chunk")
def test_a_message_renders_the_same_however_its_text_is_split(text: str, cuts: list[int], kind: str) -> None:
    """The sidecar joins consecutive text chunks before rendering them
    (features/conversation/conversations.py):
    that is only right because the output depends on the text, not on its chunks."""

    def render(pieces: list[str]) -> str:
        renderer = Renderer(clock=lambda: FIXED)
        renderer.prompt([{"type": "text", "text": "go"}])
        for piece in pieces:
            renderer.update(
                {"sessionUpdate": kind, "messageId": "m", "content": {"type": "text", "text": piece}}
            )
        renderer.turn_ended("end_turn")
        batch = renderer.take()
        assert batch is not None
        return batch.lead + batch.text

    assert render(chunked(text, cuts) or [text]) == render([text])


def trim_end(text: str) -> str:
    """Without the blank (or whitespace) lines at its ends, which no code block keeps."""
    return re.sub(r"\A(?:[ \t]*\n)*", "", re.sub(r"(?:\n[ \t]*)*\n?\Z", "", text))


def code_blocks(document: str) -> list[str]:
    return [t.content for t in PARSERS["commonmark"].parse(document) if t.type == "code_block"]


HOSTILE_PROMPT = "\n".join(
    [
        "#edit add a line",
        "```",
        "~~~",
        "---",
        "## Agent",
        MARKER,
        "<!-- a comment that never ends",
        "    indented",
        "> quoted",
        "- listed",
        "",
        "\tlast line",
    ]
)


@settings(max_examples=200, deadline=None)
@given(markdown_text)
@example(HOSTILE_PROMPT)
def test_the_users_prompt_reads_as_typed(user_text: str) -> None:
    from sidecar.features.conversation.clean import clean_text
    from sidecar.features.conversation.layout import parse_layout

    document = render_document(["answer"], [], user_text=user_text)
    typed = clean_text(user_text).strip("\n")
    if typed.strip():
        # The raw document holds each line as typed (indented), and a parser sees it verbatim.
        section = document.split("## You\n\n", 1)[1].split("\n\n## Agent\n", 1)[0]
        assert section == "\n".join(f"    {line}" if line else "" for line in typed.split("\n"))
        assert trim_end(code_blocks(document)[0]) == trim_end(typed)
    # Read back (after a restart, or to go on from it) it is the same document.
    layout = parse_layout(document, "agent", "session", "Title")
    assert not layout.repaired and layout.text() == document and layout.prompt == ""


def test_a_hostile_prompt_forges_nothing_and_shows_as_typed() -> None:
    document = render_document(["answer"], [], user_text=HOSTILE_PROMPT)
    assert "    #edit add a line\n    ```\n    ~~~\n    ---\n    ## Agent\n    " + MARKER in document
    assert "\\" not in document.split("## Agent\n", 1)[0]  # no escapes in the user's words
    for parser in PARSERS:
        found = structure(document, parser)
        assert found.headings == expected_headings(), (parser, document)
        assert prompt_area_ok(document, parser) and found.comments.count(MARKER) == 1
