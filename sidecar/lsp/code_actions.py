"""Code actions: the shell's own (ask about a selection, fix a diagnostic), then every feature's
(`LspFeature.code_actions`), sorted by where they go (`Place`): at the cursor, the document's own,
the agent's pending requests. In a conversation document only the features offer actions (context
from it would be the conversation itself)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lsprotocol import types

from sidecar.lsp.features import ActionContext, Actions, Place

if TYPE_CHECKING:
    from sidecar.lsp.features import LspFeatures
    from sidecar.lsp.ports import CodeActionPort

JsonObj = dict[str, Any]
MAX_DIAGNOSTIC_TITLE = 80
# The diagnostic code the edits feature marks the agent's landed changes with (docs/protocol.md).
AGENT_CHANGE = "agent-change"


def _range_json(rng: types.Range) -> dict[str, Any]:
    return {
        "start": {"line": rng.start.line, "character": rng.start.character},
        "end": {"line": rng.end.line, "character": rng.end.character},
    }


async def code_actions(
    ls: CodeActionPort, features: LspFeatures, params: types.CodeActionParams, buffer: str | None
) -> list[types.CodeAction]:
    uri = params.text_document.uri
    conversation = features.identity(uri) or await features.identify(uri)
    context = ActionContext(params, conversation, buffer if conversation is not None else None)
    found: Actions = []
    if conversation is None:
        found += [(Place.DOCUMENT, action) for action in _shell_actions(ls, params)]
    for feature in features.all:
        found += await feature.code_actions(context)
    found.sort(key=lambda placed: placed[0])  # stable: each place keeps the features' order
    return [action for _, action in found]


def _shell_actions(ls: CodeActionPort, params: types.CodeActionParams) -> list[types.CodeAction]:
    uri = params.text_document.uri
    rng = params.range
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
    return actions
