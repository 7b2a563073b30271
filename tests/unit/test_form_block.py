"""A form question as a block of the conversation document (features/questions/form_block.py,
features/conversation/questions.py): written, read back exactly as typed whatever the labels and values
hold, carried over a resync, replaced by its outcome. In process; the path through the sidecar
is tests/lsp/test_elicitation_form.py."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sidecar.features.conversation.api import (
    PROMPT_AREA,
    Batch,
    ConversationStore,
    carry_answers,
    questions_in,
    resync,
)
from sidecar.features.conversation.document import apply_edits, header_text
from sidecar.features.questions.form_block import block, field_prefix, outcome_line, read_answers
from sidecar.features.questions.forms import FormError, parse_form
from sidecar.features.questions.question import Elicitation

FORM = {
    "type": "object",
    "title": "Release details",
    "properties": {
        "email": {"type": "string", "title": "Your email", "format": "email"},
        "count": {"type": "integer", "title": "How many", "minimum": 1, "maximum": 10, "default": 3},
        "notify": {"type": "boolean", "title": "Notify", "default": False},
        "channel": {"type": "string", "title": "Channel", "enum": ["stable", "beta"]},
        "targets": {"type": "array", "title": "Targets", "items": {"type": "string", "enum": ["a", "b"]}},
    },
    "required": ["email", "count"],
}


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    running = asyncio.new_event_loop()
    yield running
    running.close()


def question(
    loop: asyncio.AbstractEventLoop, schema: Any, ident: str = "el-1", message: str = "Please"
) -> Elicitation:
    form = parse_form(schema)
    return Elicitation(ident, "form", message, "s", "t", None, form, None, loop.create_future())


def typed(text: str, answers: dict[str, str], elicitation: Elicitation) -> str:
    """`text` with each answer typed after its field's colon (what was there replaced)."""
    assert elicitation.form is not None
    lines = text.split("\n")
    for f in elicitation.form.fields:
        if f.name in answers:
            prefix = field_prefix(f)
            index = next(i for i, line in enumerate(lines) if line.startswith(prefix))
            lines[index] = f"{prefix} {answers[f.name]}"
    return "\n".join(lines)


def test_the_block_reads_back_its_defaults_and_what_was_typed(loop: asyncio.AbstractEventLoop) -> None:
    asked = question(loop, FORM)
    text = block(asked)
    assert text.startswith("<!-- acp-sidecar question el-1 -->\n### The agent asks: Please\n")
    assert text.endswith("\n<!-- acp-sidecar end of question el-1 -->\n")
    assert read_answers(text, asked) == {
        "email": None,
        "count": "3",
        "notify": "no",
        "channel": None,
        "targets": None,
    }
    answered = typed(text, {"email": "  me@example.com  ", "targets": "a, b", "count": ""}, asked)
    assert read_answers(answered, asked) == {
        "email": "me@example.com",
        "count": None,
        "notify": "no",
        "channel": None,
        "targets": "a, b",
    }
    # An editor that strips trailing blanks leaves the line ending at its colon: still read.
    assert read_answers(text.replace("): \n", "):\n"), asked)["email"] is None


def test_a_changed_field_line_or_a_missing_block_is_named(loop: asyncio.AbstractEventLoop) -> None:
    asked = question(loop, FORM)
    text = block(asked)
    with pytest.raises(FormError, match="How many: its line was changed or removed"):
        read_answers(text.replace("- **How many**", "- **How much**"), asked)
    with pytest.raises(FormError, match="block is not in this document"):
        read_answers(text.replace("end of question el-1", "end of question el-2"), asked)
    with pytest.raises(FormError, match="block is not in this document"):
        read_answers(block(question(loop, FORM, "el-2")), asked)


def test_problems_lists_every_field_that_does_not_fit(loop: asyncio.AbstractEventLoop) -> None:
    asked = question(loop, FORM)
    assert asked.form is not None
    answers = read_answers(typed(block(asked), {"count": "four", "channel": "gamma"}, asked), asked)
    assert asked.form.problems(answers) == [
        "Your email: an answer is required",
        "How many: a whole number",
        "Channel: choose one of stable, beta",
    ]


_TEXT = st.text(st.characters(codec="utf-8"), max_size=30)
_ONE_LINE = st.text(st.characters(codec="utf-8", exclude_characters="\r\n"), max_size=40)


@settings(max_examples=150, deadline=None)
@given(
    fields=st.dictionaries(
        st.text(st.characters(codec="utf-8"), min_size=1, max_size=20),
        st.tuples(_TEXT, _TEXT, st.sampled_from(["string", "integer", "boolean", "enum"]), _ONE_LINE),
        min_size=1,
        max_size=6,
    ),
    title=_TEXT,
    message=_TEXT,
)
def test_any_labels_and_values_read_back_exactly(
    loop: asyncio.AbstractEventLoop, fields: dict[str, tuple[str, str, str, str]], title: str, message: str
) -> None:
    properties: dict[str, Any] = {}
    for name, (label, about, kind, _) in fields.items():
        prop: dict[str, Any] = {"type": "string" if kind == "enum" else kind, "title": label or None}
        if about:
            prop["description"] = about
        if kind == "enum":
            prop["enum"] = [label or "x", "y" + label]
        properties[name] = {k: v for k, v in prop.items() if v is not None}
    asked = question(
        loop, {"type": "object", "title": title or None, "properties": properties}, message=message
    )
    # Around the block: a conversation above, the prompt area below it.
    document = header_text("T", "agent", "s") + "## Agent\n\nhi\n\n" + block(asked) + "\n" + PROMPT_AREA
    answers = {name: value for name, (_, _, _, value) in fields.items()}
    filled = typed(document, answers, asked)
    assert [q.ident for q in questions_in(filled)] == ["el-1"]
    assert read_answers(filled, asked) == {name: value.strip() or None for name, value in answers.items()}


def test_typed_answers_are_carried_over_a_resync_until_the_block_is_gone(
    loop: asyncio.AbstractEventLoop,
) -> None:
    asked = question(loop, FORM)
    head = header_text("T", "agent", "s") + "## Agent\n\n"
    file_text = head + block(asked) + "\n" + PROMPT_AREA
    buffer = typed(file_text, {"email": "me@example.com"}, asked) + "my next prompt\n"
    grown = head + block(asked) + "\nmore from the agent\n\n" + PROMPT_AREA
    assert carry_answers(buffer, grown).count("me@example.com") == 1
    after = apply_edits(buffer, resync(buffer, grown))
    assert "- **Your email** (`email`; text, an email address; required): me@example.com" in after
    assert after.endswith("more from the agent\n\n" + PROMPT_AREA + "my next prompt\n")
    answered = head + "_The agent asked: Please — declined_\n\nmore from the agent\n\n" + PROMPT_AREA
    after = apply_edits(buffer, resync(buffer, answered))
    assert after == answered + "my next prompt\n"


@pytest.mark.parametrize(
    ("answer", "timed_out", "line"),
    [
        (
            {
                "action": "accept",
                "content": {"email": "a_b@c.de", "count": 4, "notify": True, "targets": ["a", "b"]},
            },
            False,
            r"_The agent asked: Please — you answered: email = a\_b@c.de, count = 4, notify = yes, "
            "targets = a, b_",
        ),
        ({"action": "accept", "content": {}}, False, "_The agent asked: Please — you answered (no values)_"),
        ({"action": "decline"}, False, "_The agent asked: Please — declined_"),
        ({"action": "cancel"}, False, "_The agent asked: Please — cancelled_"),
        ({"action": "cancel"}, True, "_The agent asked: Please — not answered in time (cancelled)_"),
    ],
)
def test_the_outcome_line(
    loop: asyncio.AbstractEventLoop, answer: dict[str, Any], timed_out: bool, line: str
) -> None:
    asked = question(loop, FORM)
    asked.timed_out = timed_out
    assert outcome_line(asked, answer) == line + "\n"


def test_the_store_replaces_the_block_and_an_editor_buffer_follows(
    loop: asyncio.AbstractEventLoop, tmp_path: Path
) -> None:
    asked = question(loop, FORM)
    store = ConversationStore(tmp_path, durable=False)
    store.append("agent", "s", Batch(text="## Agent\n\n" + block(asked)))
    store.append("agent", "s", Batch(text="\nafter the question\n"))
    before = store.read("agent", "s")
    assert before is not None and "acp-sidecar question el-1" in before
    buffer = typed(before, {"email": "me@example.com"}, asked)
    change = store.replace_question("agent", "s", "el-1", "_The agent asked: Please — declined_\n")
    assert change is not None
    after = store.read("agent", "s")
    assert after is not None
    assert (
        "acp-sidecar question" not in after
        and "_The agent asked: Please — declined_\n\nafter the question\n" in after
    )
    edits = change.mirror(buffer)
    assert edits is not None and apply_edits(buffer, edits) == after
    # Nothing to replace any more: no change, and the next append goes on as before.
    assert store.replace_question("agent", "s", "el-1", "x\n") is None
    store.append("agent", "s", Batch(text="\nlast\n"))
    final = store.read("agent", "s")
    assert final is not None and final.index("after the question") < final.index("last")
