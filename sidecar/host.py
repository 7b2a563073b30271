"""The composition root: the language server, then each feature's LSP side, in order.

Each feature's LSP modules register their commands when imported here, before the server lists
them in its `initialize` answer; each feature's LSP side (`LspFeature`) is added once, in the
order the shell asks them for code actions and tells them what happens. The kernel and the
features' engine sides are composed in `sidecar/composition.py` at `initialized`, and each LSP side
is handed the kernel then (`LspFeature.started`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sidecar.kernel.kernel import Kernel
    from sidecar.kernel.options import EngineOptions
    from sidecar.lsp.editor_files import EditorFiles
    from sidecar.lsp.server import AcpLanguageServer, EditorEvents, LaunchConfig


def build_server(launch: LaunchConfig) -> AcpLanguageServer:
    # Each feature's LSP module registers its commands when imported.
    from sidecar.features.conversation import lsp_commands as conversation_commands  # noqa: F401
    from sidecar.features.conversation.lsp_feature import ConversationLsp
    from sidecar.features.edits import lsp_commands as edits_commands  # noqa: F401
    from sidecar.features.edits.lsp_feature import EditsLsp
    from sidecar.features.questions import lsp_questions  # noqa: F401
    from sidecar.features.questions.lsp_feature import QuestionsLsp
    from sidecar.features.terminals.lsp_terminals import TerminalsLsp
    from sidecar.features.titles import lsp_titles  # noqa: F401
    from sidecar.lsp.app import build_server as build_lsp_server

    server = build_lsp_server(launch, compose_engine, editor_events)
    # In this order: code actions are offered in it, within each place (lsp/features.py).
    server.features.add(ConversationLsp(server))
    server.features.add(EditsLsp(server))
    server.features.add(QuestionsLsp(server))
    server.features.add(TerminalsLsp())
    return server


def editor_events(server: AcpLanguageServer) -> EditorEvents:
    """The engine's listener: the stream feature's notifier, telling the other features' LSP
    sides through their hooks."""
    from sidecar.features.stream.lsp_notifier import Notifier

    return Notifier(server, server.tasks, server.status_diagnostic, server.features)


def compose_engine(options: EngineOptions, editor: EditorEvents, files: EditorFiles) -> Kernel:
    """The kernel and the features' engine sides (`sidecar/composition.py`), imported at
    `initialized`: the editor's `initialize` is answered before the engine stack loads."""
    from sidecar.composition import compose
    from sidecar.features.stream.lsp_notifier import Notifier

    assert isinstance(editor, Notifier)  # the listener editor_events made
    return compose(options, editor, files)
