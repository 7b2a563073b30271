"""An agent's form question as a block of its session's conversation document, the user's
answers read back from that block, and the one line that records how the question ended
(docs/protocol.md, "Answering in the document").

Each field is one line the sidecar writes, `- **LABEL** (`NAME`; WHAT IT TAKES; required):`,
and the user's answer is whatever follows that colon on the same line. Reading the answers back
looks for exactly the lines this module writes for the question's form, in order, so nothing the
user types after a colon (colons, stars, another field's label) can be mistaken for structure;
a field line the user changed is reported by its label, not guessed at.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sidecar.features.questions.forms import Field, FormError
from sidecar.kernel.pieces import find_question, inline_code, question_end, question_start
from sidecar.text_safety import one_line

if TYPE_CHECKING:
    from sidecar.features.questions.question import Elicitation

JsonObj = dict[str, Any]

HINT = (
    "_Type each answer after its colon, on the same line, then run the code action "
    '"Answer the agent" here (or "Decline")._'
)
MAX_LABEL = 200
MAX_MESSAGE = 500
MAX_OPTIONS_SHOWN = 30
MAX_VALUE_SHOWN = 200
MAX_OUTCOME = 2000
FORMAT_WORDS = {
    "email": "an email address",
    "uri": "a URI",
    "date": "a date, YYYY-MM-DD",
    "date-time": "a date and time, YYYY-MM-DDTHH:MM:SS",
}
_LINE_BREAK = re.compile(r"\r\n|\r|\n")  # as LSP splits lines (str.splitlines splits at more)
# Markdown punctuation in untrusted text shown literally (the text sits inside our own lines).
_PUNCTUATION = re.compile(r"([\\`*_\[\]<>])")


def plain(text: object, limit: int) -> str:
    """Untrusted text as literal Markdown on one line."""
    return _PUNCTUATION.sub(r"\\\1", one_line(text, limit))


def block(elicitation: Elicitation) -> str:
    """The question's block, with each field's default after its colon."""
    form = elicitation.form
    assert form is not None
    lines = [
        question_start(elicitation.elicitation_id),
        f"### The agent asks: {plain(elicitation.message, MAX_MESSAGE) or '(no message)'}",
        "",
    ]
    about = [f"**{plain(form.title, MAX_LABEL)}**"] if form.title else []
    if form.description:
        about.append(plain(form.description, MAX_MESSAGE))
    if about:
        lines += [" — ".join(about), ""]
    for f in form.fields:
        default = value_text(f, f.default) if f.default is not None else ""
        lines.append(f"{field_prefix(f)} {default}")  # (a space to type after, without a default)
    lines += ["", HINT, question_end(elicitation.elicitation_id)]
    return "\n".join(lines) + "\n"


def field_prefix(f: Field) -> str:
    """A field's line up to and including the colon after which the user types."""
    need = "required" if f.required else "optional"
    about = f" — {plain(f.description, MAX_LABEL)}" if f.description else ""
    name = inline_code(one_line(f.name, 200))
    return f"- **{plain(f.title, MAX_LABEL)}** ({name}; {_takes(f)}; {need}){about}:"


def read_answers(document: str, elicitation: Elicitation, limit: int | None = None) -> JsonObj:
    """What the user typed for each field in the question's block of `document[:limit]`, as text
    (None where nothing was typed), for `Form.answer` to check and convert. FormError when the
    block, or a field's line, is not there."""
    form = elicitation.form
    assert form is not None
    found = find_question(document, elicitation.elicitation_id, limit)
    if found is None:
        raise FormError("the question's block is not in this document (answered, or removed)")
    lines = _LINE_BREAK.split(document[found.start : found.end])
    typed: JsonObj = {}
    position = 0
    for f in form.fields:
        prefix = field_prefix(f)
        line = next((i for i in range(position, len(lines)) if lines[i].startswith(prefix)), None)
        if line is None:
            raise FormError(
                f"{f.title}: its line was changed or removed; type only after its colon "
                "(undo the change, or decline)"
            )
        value = lines[line][len(prefix) :].strip()
        typed[f.name] = value or None
        position = line + 1
    return typed


def outcome_line(elicitation: Elicitation, answer: Mapping[str, Any]) -> str:
    """The line that stands where the block was, once the question is answered by any route."""
    asked = f"The agent asked: {plain(elicitation.message, MAX_MESSAGE) or '(no message)'}"
    action = answer.get("action")
    if action == "accept":
        content = answer.get("content")
        fields = elicitation.form.fields if elicitation.form is not None else ()
        shown = [
            f"{plain(f.name, MAX_LABEL)} = {plain(value_text(f, content[f.name]), MAX_VALUE_SHOWN)}"
            for f in fields
            if isinstance(content, Mapping) and f.name in content
        ]
        what = f"you answered: {', '.join(shown)}" if shown else "you answered (no values)"
    elif action == "decline":
        what = "declined"
    elif elicitation.timed_out:
        what = "not answered in time (cancelled)"
    else:
        what = "cancelled"
    line = f"{asked} — {what}"
    if len(line) > MAX_OUTCOME:
        line = line[:MAX_OUTCOME].rstrip("\\") + "…"
    return f"_{line}_\n"


def value_text(f: Field, value: Any) -> str:
    """An answer as the user would type it."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return one_line(str(value), 100_000)


def _takes(f: Field) -> str:
    if f.kind == "boolean":
        return "yes or no"
    if f.kind == "enum":
        return f"one of {_options(f)}"
    if f.kind == "multiselect":
        counts = _bounds(f.min_items, f.max_items, "")
        return f"any of {_options(f)}, separated by commas{', choose ' + counts if counts else ''}"
    if f.kind in ("number", "integer"):
        what = "a whole number" if f.kind == "integer" else "a number"
        low, high = f.minimum, f.maximum
        if low is not None and high is not None:
            return f"{what} from {_number(low)} to {_number(high)}"
        if low is not None:
            return f"{what}, at least {_number(low)}"
        if high is not None:
            return f"{what}, at most {_number(high)}"
        return what
    parts = ["text"]
    if f.format is not None:
        parts.append(FORMAT_WORDS.get(f.format, f.format))
    length = _bounds(f.min_length, f.max_length, "characters")
    if length:
        parts.append(length)
    if f.pattern is not None:
        parts.append(f"matching {inline_code(one_line(f.pattern, 200))}")
    return ", ".join(parts)


def _options(f: Field) -> str:
    shown = [
        inline_code(one_line(o.value, MAX_LABEL))
        + ("" if o.title == o.value else f" ({plain(o.title, MAX_LABEL)})")
        for o in f.options[:MAX_OPTIONS_SHOWN]
    ]
    more = len(f.options) - MAX_OPTIONS_SHOWN
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def _bounds(low: int | None, high: int | None, unit: str) -> str:
    if low is not None and high is not None:
        return f"{low} to {high} {unit}".rstrip()
    if low is not None:
        return f"at least {low} {unit}".rstrip()
    if high is not None:
        return f"at most {high} {unit}".rstrip()
    return ""


def _number(value: float) -> str:
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return str(int(value))
    return f"{value:g}"
