"""The terminals feature's command: `acp.terminal.kill` (docs/protocol.md, "Client terminals")."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sidecar.lsp.commands import command
from sidecar.lsp.server import AcpLanguageServer

if TYPE_CHECKING:
    from sidecar.lsp import arguments as a


@command("acp.terminal.kill", "TerminalKill", "terminalId")
async def terminal_kill(ls: AcpLanguageServer, args: a.TerminalKill) -> Any:
    from sidecar.features.terminals.feature import ClientTerminals  # with the engine, not at start-up

    kernel = await ls.ready_kernel()
    return await kernel.feature(ClientTerminals).kill(args.terminal_id, args.session_id)
