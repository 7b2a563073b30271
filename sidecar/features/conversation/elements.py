"""The transcript's own elements as Markdown: prompts' context, tool calls, diffs, plans, notices.

Every value here comes from the agent or the editor and is untrusted: one-line fields go through
:func:`~.clean.one_line` and sit inside our own lines (a line we start cannot become a heading or a
fence), multi-line text goes through the block escaper, code goes in a fence longer than any
backtick run inside it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import unquote, urlparse

from sidecar.features.conversation.clean import clean_text, inline_code, one_line
from sidecar.kernel.bounded_diff import BoundedMatcher, OutOfTime, coarse_block, cpu_clock
from sidecar.kernel.pieces import MARKER_PREFIX, fence_for

JsonObj = dict[str, Any]

HEADINGS = {"you": "## You", "agent": "## Agent"}

# The prompt engine.rename sends; kept here so the transcript recognises it when it comes back.
# kernel/prompts.py _context_blocks: a resource_link then "Context from NAME (LABEL):" and the text fenced.
_CONTEXT_TEXT = re.compile(r"\AContext from (?P<name>[^\n]*?)(?: \((?P<label>[^()\n]*)\))?:\n")

MAX_DIFF_INPUT = 512 * 1024  # characters of old + new text we diff at all
MAX_DIFF_LINES = 4000
MAX_DIFF_OUTPUT = 64 * 1024
# Seconds of difflib for one diff, and for all the diffs of one update (in the conversation's
# thread, which writes every session's document): past them a diff is shown as one change from
# its first changed line to its last. A 4000-line diff takes 10-110 ms; difflib's worst case
# (every other line changed) about 0.3 s.
DIFF_TIME = 0.25
DIFFS_TIME = 1.0
MAX_LOCATIONS = 10
MAX_PLAN_ENTRIES = 50
NO_ANSWER = "No answer: the agent ended the turn without a reply"
STOP_WORDS = {
    "end_turn": "Turn ended",
    "max_tokens": "Stopped at the token limit",
    "max_turn_requests": "Stopped at the request limit",
    "refusal": "The agent refused",
    "cancelled": "Cancelled",
}


# One encoder for every digest: `json.dumps` with these options builds a new one per call, a
# quarter of a tool call's rendering in a long replay. The keys are on disk: same output as before.
_DIGEST_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str)
_json_string: Callable[[str], str] = json.encoder.encode_basestring  # type: ignore[attr-defined]


def digest(*parts: object) -> str:
    return _digest_json(_key_json(parts))


def _digest_json(data: str) -> str:
    return hashlib.sha256(data.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def _key_json(parts: tuple[object, ...]) -> str:
    """`parts` as the digest's encoder writes them; only strings (most keys) by the encoder's C
    string function, without its Python-level walk (it refuses anything else with TypeError)."""
    try:
        return "[" + ",".join(map(_json_string, parts)) + "]"  # type: ignore[arg-type]
    except TypeError:
        return _DIGEST_JSON.encode(parts)


def inline(text: str) -> str:
    """A clean one-line value for inside our own lines: no inline HTML."""
    return text.replace("<", "\\<")


def rename_line(title: str) -> str:
    return f"_Renamed to “{inline(one_line(title, 500))}”_\n"


# ---------------------------------------------------------------- prompts and their context


@dataclass(frozen=True)
class ContextRef:
    """Something attached to a prompt: shown by name (and range), never by content."""

    uri: str
    label: str | None = None


@dataclass
class PromptParts:
    """A user message as the transcript sees it: its text and what was attached."""

    text: str
    contexts: list[ContextRef]
    others: list[str]  # images, audio: shown as a word

    @property
    def key(self) -> str:
        """`digest(text, uris, others)`, its JSON written here: a user message's parts are of
        known types, and `digest` would find that out by a TypeError, every prompt of a replay."""
        uris = ",".join([_json_string(c.uri) for c in self.contexts])
        others = ",".join(map(_json_string, self.others))
        return "u:" + _digest_json(f"[{_json_string(self.text.strip())},[{uris}],[{others}]]")


def verbatim_block(text: str) -> str:
    """The user's own words as an indented code block: shown exactly as typed, and nothing in it
    (a heading, a fence, a break, an HTML comment, the marker line) is structure. It needs a
    blank line before it and no list or quote open, which holds after our heading and our own
    lines; every line of it is indented, so it cannot end before its last line."""
    return "".join(f"    {line}\n" if line else "\n" for line in text.split("\n"))


def split_prompt(blocks: Iterable[object], labels: dict[str, str] | None = None) -> PromptParts:
    """Text, context and other blocks of a prompt or a replayed user message.

    Context comes as an embedded `resource`, or as a `resource_link` followed by a text block
    "Context from NAME (LABEL):" with the text fenced (what engine._prompt_blocks sends to agents
    without embedded context): both become a :class:`ContextRef`."""
    texts: list[str] = []
    contexts: list[ContextRef] = []
    others: list[str] = []
    last_link: ContextRef | None = None
    for block in blocks:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            text = str(block["text"])
            found = _CONTEXT_TEXT.match(text)
            if found is not None and last_link is not None:
                if found.group("label") and last_link.label is None:
                    contexts[-1] = last_link = ContextRef(last_link.uri, found.group("label"))
                continue
            last_link = None
            texts.append(text)
            continue
        last_link = None
        if kind == "resource" and isinstance(block.get("resource"), dict):
            resource = block["resource"]
            uri = resource.get("uri")
            if isinstance(uri, str):
                label = (labels or {}).get(uri) or _meta_label(block)
                if label is None and isinstance(resource.get("text"), str):
                    lines = len(_lines(resource["text"]))
                    label = f"{lines} line{'s' if lines != 1 else ''}"
                contexts.append(ContextRef(uri, label))
        elif kind == "resource_link" and isinstance(block.get("uri"), str):
            last_link = ContextRef(str(block["uri"]), (labels or {}).get(str(block["uri"])))
            contexts.append(last_link)
        elif kind in ("image", "audio"):
            others.append(f"{kind} ({one_line(block.get('mimeType'), 60) or 'unknown type'})")
    return PromptParts("".join(texts), contexts, others)


def _meta_label(block: JsonObj) -> str | None:
    meta = block.get("_meta")
    ours = meta.get("acpSidecar") if isinstance(meta, dict) else None
    label = ours.get("label") if isinstance(ours, dict) else None
    return label if isinstance(label, str) and label else None


def _lines(text: str) -> list[str]:
    """Lines split at \\n only (a final newline ends the last line, it does not start one)."""
    if not text:
        return []
    return text.removesuffix("\n").split("\n")


@functools.lru_cache(maxsize=1024)  # a session names the same files again and again
def display_path(uri_or_path: str, cwd: str | None) -> str:
    """A file URI or path as a short path (relative to `cwd` when inside it); other URIs as given."""
    path = uri_or_path
    if uri_or_path.startswith("file:"):
        path = unquote(urlparse(uri_or_path).path)
    elif "://" in uri_or_path:
        return one_line(uri_or_path, 300)
    if cwd:
        try:
            relative = PurePosixPath(path).relative_to(PurePosixPath(cwd))
            path = str(relative)
        except ValueError:
            pass
    return one_line(path, 300)


def context_line(parts: PromptParts, cwd: str | None) -> str:
    named = []
    for ref in parts.contexts:
        entry = inline_code(display_path(ref.uri, cwd) or "?")
        if ref.label:
            entry += f" ({inline(one_line(ref.label, 80))})"
        named.append(entry)
    named.extend(inline(o) for o in parts.others)
    return "Context: " + ", ".join(named) + "\n" if named else ""


# ---------------------------------------------------------------- tool calls


def _status(value: object) -> str:
    return one_line(value, 40) or "pending"


def locations(call: JsonObj, cwd: str | None) -> list[str]:
    found = call.get("locations")
    if not isinstance(found, list):
        return []
    shown = []
    for location in found:
        if not isinstance(location, dict) or not isinstance(location.get("path"), str):
            continue
        where = display_path(location["path"], cwd)
        line = location.get("line")
        if isinstance(line, int) and not isinstance(line, bool):
            where += f":{line}"
        shown.append(where)
    return shown


def tool_call_line(call: JsonObj, cwd: str | None) -> str:
    title = inline(one_line(call.get("title"), 200)) or "Tool call"
    details = []
    name = one_line(call.get("name"), 100)
    if name:
        details.append(inline_code(name))
    kind = one_line(call.get("kind"), 40)
    if kind:
        details.append(inline(kind))
    details.append(inline(_status(call.get("status"))))
    line = f"**Tool:** {title} ({' · '.join(details)})"
    places = locations(call, cwd)
    if places:
        shown = ", ".join(inline_code(p) for p in places[:MAX_LOCATIONS])
        more = f" and {len(places) - MAX_LOCATIONS} more" if len(places) > MAX_LOCATIONS else ""
        line += f" — {shown}{more}"
    return line + "\n"


def tool_status_line(title: str, status: str) -> str:
    return f"**Tool:** {inline(title)} — {inline(status)}\n"


def diffs_of(content: object) -> list[JsonObj]:
    if not isinstance(content, list):
        return []
    return [
        c
        for c in content
        if isinstance(c, dict) and c.get("type") == "diff" and isinstance(c.get("newText"), str)
    ]


def diff_key(call_id: str, diff: JsonObj) -> str:
    return "td:" + digest(call_id, diff.get("path"), diff.get("oldText"), diff.get("newText"))


def diff_block(diff: JsonObj, cwd: str | None, budget: float = DIFF_TIME) -> str:
    """A tool call's diff as a fenced ```diff block (unified diff of oldText and newText); past
    `budget` seconds of difflib, one change from the first changed line to the last."""
    raw_path = diff.get("path") if isinstance(diff.get("path"), str) else "?"
    path = display_path(str(raw_path), cwd) or "?"
    old = diff.get("oldText") if isinstance(diff.get("oldText"), str) else None
    new = str(diff.get("newText"))
    label = inline_code(path)
    if len(new) + len(old or "") > MAX_DIFF_INPUT:
        return f"Diff of {label}: too large to show.\n"
    old_lines = _lines(clean_text(old)) if old else []
    new_lines = _lines(clean_text(new))
    if len(old_lines) + len(new_lines) > MAX_DIFF_LINES:
        return f"Diff of {label}: too large to show ({len(old_lines)} → {len(new_lines)} lines).\n"
    fromfile = "/dev/null" if old is None else f"a/{path}"
    lines, coarse = unified_diff(old_lines, new_lines, fromfile, f"b/{path}", budget)
    body = "\n".join(lines)
    if not body:
        return f"Diff of {label}: no changes.\n"
    if len(body) > MAX_DIFF_OUTPUT:
        body = body[:MAX_DIFF_OUTPUT].rsplit("\n", 1)[0] + "\n… (diff cut)"
    body = "\n".join("\\" + line if line.startswith(MARKER_PREFIX) else line for line in body.split("\n"))
    fence = fence_for(body)
    how = " (one change from the first changed line to the last: it took too long to diff)" if coarse else ""
    return f"Diff of {label}{how}:\n\n{fence}diff\n{body}\n{fence}\n"


Opcode = tuple[str, int, int, int, int]


def unified_diff(
    old: list[str], new: list[str], fromfile: str, tofile: str, budget: float, context: int = 3
) -> tuple[list[str], bool]:
    """`difflib.unified_diff(old, new, fromfile, tofile, lineterm="")` as a list, given at most
    `budget` seconds of difflib; past them the hunks of one change from the first line that
    differs to the last (True: that coarse diff)."""
    try:
        groups = list(BoundedMatcher(old, new, cpu_clock() + budget).get_grouped_opcodes(context))
        coarse = False
    except OutOfTime:
        groups, coarse = _coarse_groups(old, new, context), True
    lines: list[str] = []
    for group in groups:
        if not lines:
            lines += [f"--- {fromfile}", f"+++ {tofile}"]
        first, last = group[0], group[-1]
        lines.append(f"@@ -{_unified_range(first[1], last[2])} +{_unified_range(first[3], last[4])} @@")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                lines += [" " + line for line in old[i1:i2]]
                continue
            if tag in ("replace", "delete"):
                lines += ["-" + line for line in old[i1:i2]]
            if tag in ("replace", "insert"):
                lines += ["+" + line for line in new[j1:j2]]
    return lines, coarse


def _coarse_groups(old: list[str], new: list[str], context: int) -> list[list[Opcode]]:
    if old == new:
        return []
    start, i2, _, j2 = coarse_block(old, new)
    tag = "replace" if i2 > start and j2 > start else "delete" if i2 > start else "insert"
    before, after = min(context, start), min(context, len(old) - i2)
    group: list[Opcode] = [("equal", start - before, start, start - before, start)] if before else []
    group.append((tag, start, i2, start, j2))
    if after:
        group.append(("equal", i2, i2 + after, j2, j2 + after))
    return [group]


def _unified_range(start: int, stop: int) -> str:
    """A hunk's range as `difflib.unified_diff` writes it."""
    beginning, length = start + 1, stop - start
    if length == 1:
        return f"{beginning}"
    if not length:
        beginning -= 1
    return f"{beginning},{length}"


# ---------------------------------------------------------------- plans, modes, notices, turns


def plan_block(entries: list[JsonObj]) -> str:
    lines = ["**Plan:**", ""]
    for entry in entries[:MAX_PLAN_ENTRIES]:
        status = entry.get("status")
        box = "x" if status == "completed" else " "
        text = inline(one_line(entry.get("content"), 200)) or "(empty)"
        note = " _(in progress)_" if status == "in_progress" else ""
        lines.append(f"- [{box}] {text}{note}")
    if len(entries) > MAX_PLAN_ENTRIES:
        lines.append(f"- … and {len(entries) - MAX_PLAN_ENTRIES} more")
    return "\n".join(lines) + "\n"


def plan_entries(update: JsonObj) -> list[JsonObj]:
    entries = update.get("entries")
    return [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []


def setting_line(what: str, value: str) -> str:
    return f"_{what}: {inline(one_line(value, 200)) or '?'}_\n"


def notice_line(update: JsonObj) -> str:
    severity = one_line(update.get("severity"), 20) or "info"
    title = inline(one_line(update.get("title"), 300)) or "(no title)"
    description = inline(one_line(update.get("description"), 1000))
    tail = f" — {description}" if description else ""
    return f"> **{severity.capitalize()}:** {title}{tail}\n"


def compaction_line(status: str, error: object) -> str:
    if status == "completed":
        return "_Context compacted._\n"
    why = inline(one_line(error, 300)) if isinstance(error, str) else ""
    return f"_Context compaction {inline(one_line(status, 20))}{': ' + why if why else ''}._\n"


def fork_line(parent_title: str, now: datetime) -> str:
    when = now.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return f"_Forked from “{inline(one_line(parent_title, 500))}” at {when}._\n"


def local_time(now: datetime) -> str:
    return now.astimezone().strftime("%Y-%m-%d %H:%M:%S")


def turn_end_line(
    stop_reason: str | None, error: JsonObj | None, now: datetime, no_answer: bool = False
) -> str:
    when = local_time(now)
    if error is not None:
        message = inline(one_line(error.get("message"), 500)) or "unknown error"
        return f"_Turn failed · {when}_ **Error:** {message}\n"
    reason = one_line(stop_reason, 40) or "end_turn"
    words = NO_ANSWER if no_answer else STOP_WORDS.get(reason, "Turn ended")
    return f"_{words} ({inline(reason)}) · {when}_\n"


def model_choice(options: object) -> tuple[str, str] | None:
    """(value, display name) of the config option of category "model", if there is one."""
    if not isinstance(options, list):
        return None
    for option in options:
        if not isinstance(option, dict) or option.get("category") != "model":
            continue
        value = option.get("currentValue")
        if not isinstance(value, str):
            return None
        return value, _choice_name(option.get("options"), value) or value
    return None


def _choice_name(choices: object, value: str) -> str | None:
    if not isinstance(choices, list):
        return None
    for choice in choices:
        if not isinstance(choice, dict):
            continue
        if choice.get("value") == value and isinstance(choice.get("name"), str):
            return str(choice["name"])
        nested = _choice_name(choice.get("options"), value)  # grouped options
        if nested is not None:
            return nested
    return None
