"""Prompt keywords that script the demo agent's behaviour (for tests and demos).

A keyword is a whitespace-separated token in the text blocks of a prompt.
Keywords combine (``#chunks=100 #slow=1``); unknown ``#words`` are plain text.
Values are checked: a bad value (``#chunks=lots``) fails the prompt with
JSON-RPC error -32602 naming the keyword.

Preludes (run first, in this order, then the turn goes on):

``#echo``
    Echo the prompt blocks back as ``user_message_chunk`` updates (as real
    agents do during a live prompt; the stored history holds them once).
``#stderr=BYTES``
    Write BYTES bytes of filler lines to stderr before replying.
``#garbage``
    Write, in order: a line of invalid JSON, ``[1,2,3]``, a response with an
    unknown id, a ``session/update`` for an unknown sessionId, and a
    ``tool_call`` update with ``title: 42``. Then the normal reply.
``#bigframe=BYTES``
    Send one ``agent_message_chunk`` whose text is BYTES characters long.
``#unknown``
    Send an update ``{"sessionUpdate": "future_kind_xyz", "someField":
    {"nested": [1, 2]}}`` and an ``agent_message_chunk`` with an extra field
    ``"futureField": true``.
``#mode``
    The agent switches its own mode to ``code`` (``current_mode_update``).
``#notice``, ``#notice=SEVERITY``, ``#notice=SEVERITY:TITLE | DESCRIPTION``
    A ``notice`` update (severity ``info``, ``warning``, ``error`` or an
    ``_extension``); the value runs to the end of its line. Sent only to a
    client that declared ``session.notices``; others get the notice as an
    agent message. An ``error`` notice does not fail the turn.
``#compact``, ``#compact=fail``
    A context compaction: ``compaction_update`` in_progress, summary chunks,
    then completed (or failed); cancelled by ``session/cancel``. Sent only to
    a client that declared ``session.compaction`` (others: silent).

Turn enders (after the preludes):

``#error``
    Answer the prompt with JSON-RPC error -32603 "demo failure".
``#crash``
    Send one chunk, then exit with code 3 mid-turn.
``#hang``
    Send one chunk, then ignore everything (cancel included) and write
    nothing more; exit only on stdin EOF or a signal.

Main body (the first that applies; default: the normal reply):

rename request
    ``_meta: {"acpSidecar": {"renameTitle": T}}`` on the prompt, or a line
    ``Rename this session to exactly: "T"`` (case, spacing, curly quotes and a
    trailing period tolerated). Replies with a short chunk, then
    ``session_info_update {title: T, updatedAt}``; env ``ACP_DEMO_RENAME``
    changes that (see the README).
``#title <text to the end of the prompt>``
    ``session_info_update`` with exactly that title (one separating space
    removed); nothing after ``#title`` is parsed as a keyword.
``#info <JSON object to the end of the prompt>``
    ``session_info_update`` whose fields are that object merged over
    ``{"sessionUpdate": "session_info_update"}``; its effect is persisted
    (``title: null`` clears, ``_meta`` merges recursively).
``#edit`` / ``#edit=<relpath>`` / ``#edit=<a>,<b>``
    An edit tool call with a diff on that file, one per file of a comma-separated
    list, in one tool call (default: the first README* in
    cwd, else a new ``demo.txt``): newText is the old text plus
    ``"\nEdited by the acp-sidecar demo agent.\n"`` (a new file gets the line
    alone). Then a permission request; allowed -> ``fs/write_text_file`` and
    the tool call completes; rejected -> it fails and a chunk says so; outcome
    ``cancelled`` -> stop reason ``cancelled``. In mode ``plan`` no edit is
    made (a chunk explains). Paths outside cwd are refused.
``#permission``
    A permission request for an ``execute`` tool call (no fs), then a chunk
    saying what was chosen.
``#chunks=N``
    Stream exactly N chunks ``"c0 "``, ``"c1 "``, ... as fast as possible
    (no read step). N may be up to 10**7.
``#answer=BYTES`` / ``#answer=BYTES #piece=BYTES``
    One message of exactly BYTES characters (``answer_text``: numbered lines,
    the last words ``END OF ANSWER``), streamed in chunks of ``#piece``
    characters (default 65536), ``#slow`` apart (default 0). With ``#para=LINES``: at most
    BYTES characters in paragraphs of LINES lines, every fifth a fenced code block with a
    blank line inside (``paragraphs_text``), ``END OF ANSWER`` the last paragraph.
``#refuse``
    One chunk, then stop reason ``refusal``.
``#terminal`` / ``#terminal=slow``
    Run a command in the client's terminal (see terminal.py): a permission
    request, ``terminal/create``, the tool call shows the terminal, then
    ``wait_for_exit``, ``output``, ``release``.

Without any of these the normal reply runs: a 3-step ``plan`` (re-sent as its
statuses change), a read tool call through ``fs/read_text_file`` (the first
existing file under cwd that the prompt names in text, ``resource`` or
``resource_link`` blocks, else README*, else no read; a dot-less word such as
``Makefile`` names a file when cwd holds a file of exactly that name), 15-30 streamed
``agent_message_chunk``s about that file (first "Context received: PATH (embedded, N lines);
PATH (linked)." when the prompt has ``resource``/``resource_link`` blocks), a ``usage_update``, and, on the
first prompt of an untitled session, a ``session_info_update`` with a title
made of the prompt's first words (keywords removed).

Modifiers:

``#slow`` / ``#slow=MS``
    Delay between streamed chunks (default 200 ms with ``#slow``; without it
    ``ACP_DEMO_CHUNK_DELAY_MS`` or 15 ms for the normal reply, 0 for #chunks).
``#late``
    About 50 ms after answering the prompt, send one more
    ``agent_message_chunk`` ("late update") for that session.

Slash commands (advertised in ``available_commands_update``): ``/help`` lists
these keywords; ``/edit [relpath]``, ``/permission`` and ``/title <text>`` are
the same as the keywords.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

MAX_CHUNKS = 10**7
MAX_BYTES = 512 * 1024 * 1024
TITLE_WORDS = 6
TITLE_CHARS = 80

_FLAGS = {"echo", "garbage", "unknown", "crash", "hang", "late", "error", "refuse", "mode"}
_INTS = {"chunks", "stderr", "bigframe", "answer", "piece", "para"}
_OPTIONAL_INTS = {"slow": 200}
_KEYWORD = re.compile(
    r"(?<!\S)#(edit|permission|slow|chunks|echo|stderr|garbage|bigframe|unknown|crash|hang"
    r"|late|error|refuse|mode|compact|terminal|elicit|answer|piece|para)(?:=(\S*))?(?!\S)"
)
# A notice's value holds spaces: it runs to the end of its line.
_NOTICE = re.compile(r"(?<!\S)#notice(?:=([^\n]*)|(?=\s|\Z))")
_SEVERITY = re.compile(r"\A(?:info|warning|error|_[A-Za-z0-9_.-]+)\Z")
_REST_KEYWORD = re.compile(r"(?<!\S)#(title|info)(?=\s|$)")
_SLASH = re.compile(r"\A\s*/(help|edit|permission|title)(?=\s|$)(.*)\Z", re.DOTALL)
_RENAME = re.compile(
    r"^[ \t>*_-]*rename\s+(?:this|the)\s+session\s+to\s+exactly\s*:?\s*"
    r"[\"\u201c\u201d](.*)[\"\u201c\u201d][ \t]*\.?[ \t]*$",
    re.IGNORECASE | re.MULTILINE,
)

SLASH_COMMANDS: list[dict[str, Any]] = [
    {"name": "help", "description": "List the demo agent's prompt keywords"},
    {
        "name": "edit",
        "description": "Propose an edit to a file (asks permission)",
        "input": {"hint": "relative path (default: README)"},
    },
    {"name": "permission", "description": "Ask for permission to run a pretend command"},
    {"name": "title", "description": "Set the session title", "input": {"hint": "new title"}},
]

HELP_TEXT = (
    "Demo agent keywords: #edit[=path] #permission #slow[=ms] #chunks=N #echo "
    "#stderr=BYTES #garbage #bigframe=BYTES #answer=BYTES[ #piece=BYTES][ #para=LINES] "
    "#unknown #crash #hang #late #error "
    "#refuse #title <text> #info <json> #mode #notice[=severity:title] "
    "#compact[=fail] #terminal[=slow] #elicit[=choice|busy|url|bad]. "
    "Slash commands: /help /edit /permission /title. See "
    "sidecar/demo_agent/README.md."
)


class ScriptError(ValueError):
    """A keyword with an invalid value."""


@dataclass(frozen=True)
class NoticeSpec:
    """What one ``#notice`` keyword asks for."""

    severity: str
    title: str
    description: str | None = None


@dataclass
class Script:
    edit: bool = False
    edit_path: str | None = None
    permission: bool = False
    slow_ms: int | None = None
    chunks: int | None = None
    echo: bool = False
    stderr: int = 0
    garbage: bool = False
    bigframe: int | None = None
    answer: int | None = None
    piece: int | None = None
    para: int | None = None
    unknown: bool = False
    crash: bool = False
    hang: bool = False
    late: bool = False
    error: bool = False
    refuse: bool = False
    mode: bool = False
    help: bool = False
    title: str | None = None
    info: str | None = None
    rename: str | None = None
    notices: list[NoticeSpec] = field(default_factory=list)
    # "completed" or "failed": how a #compact compaction ends.
    compact: str | None = None
    # "short" or "slow": a command run in the client's terminal (#terminal).
    terminal: str | None = None
    # "form", "choice", "busy", "url" or "bad": a question asked through the client (#elicit).
    elicit: str | None = None
    # The prompt text without any keyword tokens (for titles and the answer).
    text: str = ""


def _int_value(name: str, raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise ScriptError(f"invalid keyword #{name}={raw}: expected an integer") from None
    limit = MAX_CHUNKS if name == "chunks" else MAX_BYTES
    if not 0 <= value <= limit:
        raise ScriptError(f"invalid keyword #{name}={raw}: expected 0..{limit}")
    return value


def _apply(script: Script, name: str, value: str | None) -> None:
    if name in _FLAGS:
        if value is not None:
            raise ScriptError(f"keyword #{name} takes no value")
        setattr(script, name, True)
    elif name in _INTS:
        if value is None:
            raise ScriptError(f"keyword #{name} needs a value: #{name}=N")
        setattr(script, name, _int_value(name, value))
    elif name == "slow":
        script.slow_ms = _OPTIONAL_INTS["slow"] if value is None else _int_value(name, value)
    elif name == "edit":
        script.edit = True
        if value:
            script.edit_path = value
    elif name == "permission":
        if value is not None:
            raise ScriptError("keyword #permission takes no value")
        script.permission = True
    elif name == "terminal":
        if value not in (None, "slow"):
            raise ScriptError(f"invalid keyword #terminal={value}: expected #terminal or #terminal=slow")
        script.terminal = value or "short"
    elif name == "elicit":
        if value not in (None, "choice", "busy", "url", "bad"):
            raise ScriptError(
                f"invalid keyword #elicit={value}: expected #elicit, #elicit=choice, busy, url or bad"
            )
        script.elicit = value or "form"
    elif name == "compact":
        if value not in (None, "fail"):
            raise ScriptError(f"invalid keyword #compact={value}: expected #compact or #compact=fail")
        script.compact = "failed" if value == "fail" else "completed"


def _notice(value: str | None) -> NoticeSpec:
    """``#notice[=SEVERITY[:TITLE[ | DESCRIPTION]]]``."""
    severity, _, rest = (value or "info").partition(":")
    severity = severity.strip() or "info"
    if not _SEVERITY.match(severity):
        raise ScriptError(
            f"invalid keyword #notice={value}: severity must be info, warning, error or _extension"
        )
    title, _, description = rest.partition("|")
    return NoticeSpec(
        severity=severity,
        title=title.strip() or f"Demo {severity} notice",
        description=description.strip() or None,
    )


def parse(text: str, meta: Any = None) -> Script:
    """Read the keywords of a prompt's text (its text blocks joined by newlines)."""
    script = Script()
    slash = _SLASH.match(text)
    if slash:
        command, rest = slash.group(1), slash.group(2)
        if command == "help":
            script.help = True
        elif command == "edit":
            script.edit = True
            words = rest.split()
            script.edit_path = words[0] if words else None
        elif command == "permission":
            script.permission = True
        else:
            script.title = rest[1:] if rest[:1].isspace() else rest
        script.text = rest.strip()
        return script

    head = text
    rest_kw = _REST_KEYWORD.search(text)
    if rest_kw:
        head = text[: rest_kw.start()]
        arg = text[rest_kw.end() :]
        arg = arg[1:] if arg[:1].isspace() else arg
        if rest_kw.group(1) == "title":
            script.title = arg
        else:
            script.info = arg
    script.notices = [_notice(match.group(1)) for match in _NOTICE.finditer(head)]
    for match in _KEYWORD.finditer(_NOTICE.sub(" ", head)):
        _apply(script, match.group(1), match.group(2))
    script.text = strip_keywords(text)
    script.rename = rename_request(text, meta)
    return script


def strip_keywords(text: str) -> str:
    """The text without anything :func:`parse` reads as a keyword (nor what ``#title``/``#info`` take)."""
    rest = _REST_KEYWORD.search(text)
    head = text[: rest.start()] if rest else text
    return _KEYWORD.sub(" ", _NOTICE.sub(" ", head))


def rename_request(text: str, meta: Any) -> str | None:
    """The title a rename prompt asks for: from ``_meta`` first, else the prose."""
    if isinstance(meta, dict):
        ours = meta.get("acpSidecar")
        if isinstance(ours, dict) and isinstance(ours.get("renameTitle"), str):
            return str(ours["renameTitle"])
    match = _RENAME.search(text)
    return match.group(1) if match else None


def derive_title(text: str) -> str:
    """An automatic title: the first few words that are no keywords, control characters removed."""
    clean = "".join(
        " " if unicodedata.category(ch).startswith(("C", "Z")) else ch for ch in strip_keywords(text)
    )
    title = " ".join(clean.split()[:TITLE_WORDS])
    if len(title) > TITLE_CHARS:
        title = title[:TITLE_CHARS].rstrip()
    return title
