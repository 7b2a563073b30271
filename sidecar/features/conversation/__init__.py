"""Conversation documents: each session's conversation as a private Markdown document with a
prompt area at its end (docs/protocol.md, "Conversation documents"). A leaf library: it knows
nothing of LSP, the ACP transport or the session engine, which call into it.

- :class:`Renderer` (one per session) turns prompts, ``session/update`` s and turn ends into
  Markdown, streaming, and hands it out in :class:`Batch` es.
- :class:`ConversationStore` writes batches to ``STATE/transcripts/AGENT/SESSION.md`` under a lock
  shared by every sidecar, bounded, crash-safe, and says what changed (:class:`DocumentChange`).
- The document functions find and clear the prompt area and keep an editor buffer equal to the
  file (:meth:`DocumentChange.mirror`, :func:`resync`, :func:`lsp_position`).
"""
