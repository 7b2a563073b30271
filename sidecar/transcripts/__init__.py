"""Session transcripts: each session's conversation as a private Markdown document with a prompt
area at its end (docs/protocol.md, "Transcript documents"). A leaf library: it knows nothing of
LSP, the ACP transport or the session engine, which call into it.

- :class:`Renderer` (one per session) turns prompts, ``session/update`` s and turn ends into
  Markdown, streaming, and hands it out in :class:`Batch` es.
- :class:`TranscriptStore` writes batches to ``STATE/transcripts/AGENT/SESSION.md`` under a lock
  shared by every sidecar, bounded, crash-safe, and says what changed (:class:`DocumentChange`).
- The document functions find and clear the prompt area and keep an editor buffer equal to the
  file (:meth:`DocumentChange.mirror`, :func:`resync`, :func:`lsp_position`).
"""

from .document import (
    MARKER,
    PROMPT_AREA,
    PromptArea,
    TextEdit,
    apply_edits,
    clear_prompt,
    locate_prompt_area,
    lsp_position,
    lsp_positions,
    prompt_text,
    replace_edit,
    resync,
)
from .elements import context_meta, rename_prompt, rename_title
from .follow import follow_edits
from .model import Anchor, AnchoredEdit, Batch, DocumentChange, ReplayCursor, ReplayItem
from .names import safe_name
from .questions import Question, carry_answers, find_question, questions_in
from .render import Renderer
from .store import DEFAULT_MAX_BYTES, TranscriptStore

__all__ = [
    "DEFAULT_MAX_BYTES",
    "MARKER",
    "PROMPT_AREA",
    "Anchor",
    "AnchoredEdit",
    "Batch",
    "DocumentChange",
    "PromptArea",
    "Question",
    "Renderer",
    "ReplayCursor",
    "ReplayItem",
    "TextEdit",
    "TranscriptStore",
    "apply_edits",
    "carry_answers",
    "clear_prompt",
    "context_meta",
    "find_question",
    "follow_edits",
    "locate_prompt_area",
    "lsp_position",
    "lsp_positions",
    "prompt_text",
    "questions_in",
    "rename_prompt",
    "rename_title",
    "replace_edit",
    "resync",
    "safe_name",
]
