"""The terminals feature's LSP side: `acp.terminal.kill` (docs/protocol.md, "Client terminals"),
and in a conversation document a code action to kill each of its session's live terminals."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lsprotocol import types

from sidecar.lsp.commands import command
from sidecar.lsp.features import ActionContext, Actions, LspFeature, Place
from sidecar.lsp.server import AcpLanguageServer
from sidecar.text_safety import one_line

if TYPE_CHECKING:
    from sidecar.features.terminals.terminals import Terminals
    from sidecar.kernel.kernel import Kernel
    from sidecar.lsp import arguments as a


class TerminalsLsp(LspFeature):
    def __init__(self) -> None:
        self._terminals: Terminals | None = None

    def started(self, kernel: Kernel) -> None:
        from sidecar.features.terminals.feature import ClientTerminals  # with the engine

        self._terminals = kernel.feature(ClientTerminals).terminals

    async def code_actions(self, context: ActionContext) -> Actions:
        if context.conversation is None or self._terminals is None:
            return []
        found: Actions = []
        for terminal in self._terminals.live(context.conversation[1]):
            title = f"Kill terminal: {one_line(terminal.label, 60)}"  # a `-c` script spans lines
            kill = types.Command(
                title=title, command="acp.terminal.kill", arguments=[{"terminalId": terminal.terminal_id}]
            )
            found.append(
                (Place.DOCUMENT, types.CodeAction(title=title, kind=types.CodeActionKind.Empty, command=kill))
            )
        return found


@command("acp.terminal.kill", "TerminalKill", "terminalId")
async def terminal_kill(ls: AcpLanguageServer, args: a.TerminalKill) -> Any:
    from sidecar.features.terminals.feature import ClientTerminals  # with the engine, not at start-up

    kernel = await ls.ready_kernel()
    return await kernel.feature(ClientTerminals).kill(args.terminal_id, args.session_id)
