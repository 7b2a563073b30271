"""The composition root: the language server with every feature's LSP side registered.

Each feature's LSP module registers its commands when imported here, before the server lists
them in its `initialize` answer. (The kernel and the features' engine sides are composed in
`sidecar/engine.py` at `initialized`; issue 40 moves that here feature by feature.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sidecar.lsp.server import AcpLanguageServer, LaunchConfig


def build_server(launch: LaunchConfig) -> AcpLanguageServer:
    # Each feature's LSP module registers its commands when imported.
    from sidecar.features.questions import lsp_questions  # noqa: F401
    from sidecar.features.terminals import lsp_terminals  # noqa: F401
    from sidecar.features.titles import lsp_titles  # noqa: F401
    from sidecar.lsp.app import build_server as build_lsp_server

    return build_lsp_server(launch)
