"""The titles feature's LSP side: `acp.session.rename` (docs/protocol.md, "Rename")."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sidecar.lsp.commands import command
from sidecar.lsp.server import AcpLanguageServer

if TYPE_CHECKING:
    from sidecar.lsp import arguments as a


@command("acp.session.rename", "Rename", "title")
async def rename(ls: AcpLanguageServer, args: a.Rename) -> Any:
    from sidecar.features.titles.feature import Titles  # with the engine, not at start-up

    kernel = await ls.ready_kernel()
    return await kernel.feature(Titles).rename(args.title, args.session_id)
