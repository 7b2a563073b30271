"""Code actions: ask about a selection, fix a diagnostic, apply an agent edit, answer a permission;
in a transcript document, send its prompt area, cancel its session's turn, or answer the agent's
question in its block."""

from __future__ import annotations

import os
from bisect import bisect_right
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.uris import to_fs_path

from sidecar.features.edits.diff_apply import by_path
from sidecar.features.edits.lsp_change_diagnostics import CODE as AGENT_CHANGE
from sidecar.features.stream.lsp_progress import tool_label
from sidecar.lsp.lsp_lines import line_starts
from sidecar.text_safety import one_line

if TYPE_CHECKING:
    from sidecar.engine import Engine
    from sidecar.features.conversation.lsp_documents import TranscriptDocs
    from sidecar.lsp.editor_files import EditorFiles
    from sidecar.lsp.ports import CodeActionPort

JsonObj = dict[str, Any]
MAX_DIAGNOSTIC_TITLE = 80


def _range_json(rng: types.Range) -> dict[str, Any]:
    return {
        "start": {"line": rng.start.line, "character": rng.start.character},
        "end": {"line": rng.end.line, "character": rng.end.character},
    }


async def code_actions(
    ls: CodeActionPort,
    files: EditorFiles,
    engine: Engine,
    params: types.CodeActionParams,
    transcripts: TranscriptDocs,
) -> list[types.CodeAction]:
    uri = params.text_document.uri
    rng = params.range
    identity = transcripts.identity(uri) or await transcripts.identify(uri)
    if identity is not None:
        # A transcript: its own actions (context from it would be the conversation itself).
        at_question = _question_actions(engine, uri, transcripts.buffer(uri), rng.start.line)
        answered_here = {ident for ident, _ in at_question}
        return [
            *(action for _, action in at_question),
            *_transcript_actions(engine, uri, identity[1]),
            *_permission_actions(ls, engine),
            *_elicitation_actions(ls, engine, skip=answered_here),
        ]
    actions: list[types.CodeAction] = []
    if (rng.start.line, rng.start.character) != (rng.end.line, rng.end.character):
        actions.append(
            types.CodeAction(
                title="Ask agent about selection",
                kind=types.CodeActionKind.Empty,
                command=types.Command(
                    title="Ask agent about selection",
                    command="acp.prompt",
                    arguments=[{"text": "Explain the selected code.", "uri": uri, "range": _range_json(rng)}],
                ),
            )
        )
    for diagnostic in params.context.diagnostics:
        if diagnostic.code == AGENT_CHANGE and diagnostic.source == ls.options.changes.source:
            continue  # the sidecar's own mark of an agent change: revert or keep it, nothing to fix
        message = ls.clean(diagnostic.message, MAX_DIAGNOSTIC_TITLE)
        actions.append(
            types.CodeAction(
                title=f"Ask agent to fix: {message}",
                kind=types.CodeActionKind.QuickFix,
                diagnostics=[diagnostic],
                command=types.Command(
                    title=f"Ask agent to fix: {message}",
                    command="acp.prompt",
                    arguments=[
                        {
                            "text": f"Fix this problem: {diagnostic.message}",
                            "uri": uri,
                            "range": _range_json(diagnostic.range),
                        }
                    ],
                ),
            )
        )
    actions.extend(await _edit_actions(ls, files, engine, uri))
    actions.extend(_permission_actions(ls, engine))
    actions.extend(_elicitation_actions(ls, engine))
    return actions


def _edits_touching(engine: Engine, uri: str) -> list[tuple[str, str, JsonObj, list[JsonObj]]]:
    """Pending tool-call diffs that touch `uri`'s file: (sessionId, toolCallId, call, diffs)."""
    path = to_fs_path(uri)
    if not path:
        return []
    real = os.path.realpath(path)
    found = []
    for session, call_id, call, diffs in engine.fs.pending_edits():
        if any(os.path.realpath(str(d.get("path"))) == real for d in diffs):
            found.append((session.session_id, call_id, call, diffs))
    return found


async def _edit_actions(
    ls: CodeActionPort, files: EditorFiles, engine: Engine, uri: str
) -> list[types.CodeAction]:
    actions: list[types.CodeAction] = []
    for session_id, call_id, call, diffs in _edits_touching(engine, uri):
        name = call.get("name")
        label = tool_label(str(call.get("title") or call_id), name if isinstance(name, str) else None)
        title = ls.clean(label, 80)
        preview = None
        caps = ls.caps
        files_changed = by_path(diffs)
        if caps.code_action_literals and len(files_changed) == 1:
            [(path, group)] = files_changed.items()
            preview = (await files.diff_edit(path, group))[1]
        actions.append(
            types.CodeAction(
                title=f"Apply agent edit: {title}",
                kind=types.CodeActionKind.QuickFix,
                edit=preview,
                command=types.Command(
                    title=f"Apply agent edit: {title}",
                    command="acp.edit.apply",
                    arguments=[{"sessionId": session_id, "toolCallId": call_id}],
                ),
            )
        )
    return actions


def _transcript_actions(engine: Engine, uri: str, session_id: str) -> list[types.CodeAction]:
    send = types.Command(title="Send to agent", command="acp.prompt", arguments=[{"uri": uri}])
    actions = [types.CodeAction(title="Send to agent", kind=types.CodeActionKind.Empty, command=send)]
    session = engine.registry.by_id.get(session_id)
    if session is not None and (session.current is not None or session.queue):
        cancel = types.Command(
            title="Cancel the running turn", command="acp.cancel", arguments=[{"sessionId": session_id}]
        )
        actions.append(
            types.CodeAction(title="Cancel the running turn", kind=types.CodeActionKind.Empty, command=cancel)
        )
    if engine.kernel.actions.can_fork(session_id):
        title = "Fork this session"
        target = [{"sessionId": session_id, "show": True}]  # shown: Helix has no other view of it
        fork = types.Command(title=title, command="acp.session.fork", arguments=target)
        actions.append(types.CodeAction(title=title, kind=types.CodeActionKind.Empty, command=fork))
    for terminal in engine.terminals.live(session_id):
        title = f"Kill terminal: {one_line(terminal.label, 60)}"  # a `-c` script spans lines
        target = [{"terminalId": terminal.terminal_id}]
        kill = types.Command(title=title, command="acp.terminal.kill", arguments=target)
        actions.append(types.CodeAction(title=title, kind=types.CodeActionKind.Empty, command=kill))
    return actions


def _question_actions(
    engine: Engine, uri: str, buffer: str | None, line: int
) -> list[tuple[str, types.CodeAction]]:
    """On the block of a pending form question in a transcript: answer it with what the user
    typed there, or decline it. (elicitationId, action) pairs."""
    if buffer is None:
        return []
    from sidecar.kernel.pieces import locate_prompt_area, questions_in  # with the engine

    pending = {e.elicitation_id for e in engine.elicitations.pending() if e.form is not None}
    area = locate_prompt_area(buffer)
    starts = line_starts(buffer)
    found: list[tuple[str, types.CodeAction]] = []
    for question in questions_in(buffer, area.start if area is not None else None):
        first = bisect_right(starts, question.start) - 1
        last = bisect_right(starts, max(question.start, question.end - 1)) - 1
        if question.ident not in pending or not first <= line <= last:
            continue
        answer = types.Command(
            title="Answer the agent",
            command="acp.elicitation.answer",
            arguments=[{"uri": uri, "elicitationId": question.ident}],
        )
        decline = types.Command(
            title="Decline",
            command="acp.elicitation.respond",
            arguments=[{"elicitationId": question.ident, "action": "decline"}],
        )
        for command in (answer, decline):
            action = types.CodeAction(title=command.title, kind=types.CodeActionKind.Empty, command=command)
            found.append((question.ident, action))
    return found


def _permission_actions(ls: CodeActionPort, engine: Engine) -> list[types.CodeAction]:
    actions: list[types.CodeAction] = []
    for request in engine.permissions.pending():
        what = ls.clean(request.title, 60)
        for option in request.options:
            name = ls.clean(str(option.get("name") or option.get("optionId")), 40)
            actions.append(
                types.CodeAction(
                    title=f"Agent permission: {name} — {what}",
                    kind=types.CodeActionKind.QuickFix,
                    command=types.Command(
                        title=f"{name}: {what}",
                        command="acp.permission.respond",
                        arguments=[{"requestId": request.request_id, "optionId": option.get("optionId")}],
                    ),
                )
            )
    return actions


def _elicitation_actions(
    ls: CodeActionPort, engine: Engine, skip: set[str] | frozenset[str] = frozenset()
) -> list[types.CodeAction]:
    """The agent's open questions (but those in `skip`, offered by their block): each can be
    declined from any document; a single choice or yes/no question can be answered here too."""
    actions: list[types.CodeAction] = []
    for elicitation in engine.elicitations.pending():
        if elicitation.elicitation_id in skip:
            continue
        what = ls.clean(elicitation.message, 60)
        ident = elicitation.elicitation_id
        answers: list[tuple[str, JsonObj]] = []
        form = elicitation.form
        if form is not None and len(form.fields) == 1 and form.fields[0].kind in ("enum", "boolean"):
            field = form.fields[0]
            choices: list[tuple[str, object]] = [(o.title, o.value) for o in field.options]
            choices = choices or [("Yes", True), ("No", False)]
            for title, value in choices:
                answers.append((ls.clean(title, 40), {"action": "accept", "content": {field.name: value}}))
        answers.append(("Decline", {"action": "decline"}))
        for title, answer in answers:
            actions.append(
                types.CodeAction(
                    title=f"Agent question: {title} — {what}",
                    kind=types.CodeActionKind.QuickFix,
                    command=types.Command(
                        title=f"{title}: {what}",
                        command="acp.elicitation.respond",
                        arguments=[{"elicitationId": ident, **answer}],
                    ),
                )
            )
    return actions
