"""The conversation document's library in one import: what the other modules of the feature use."""

from sidecar.features.conversation.document import (
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
from sidecar.features.conversation.follow import follow_edits
from sidecar.features.conversation.model import (
    Anchor,
    AnchoredEdit,
    Batch,
    DocumentChange,
    ReplayCursor,
    ReplayItem,
)
from sidecar.features.conversation.names import safe_name
from sidecar.features.conversation.render import Renderer
from sidecar.features.conversation.store import DEFAULT_MAX_BYTES, ConversationStore
from sidecar.kernel.pieces import Question, carry_answers, find_question, questions_in
from sidecar.kernel.prompts import context_meta, rename_title
from sidecar.kernel.prompts import rename_prompt_text as rename_prompt

__all__ = [
    "DEFAULT_MAX_BYTES",
    "MARKER",
    "PROMPT_AREA",
    "Anchor",
    "AnchoredEdit",
    "Batch",
    "ConversationStore",
    "DocumentChange",
    "PromptArea",
    "Question",
    "Renderer",
    "ReplayCursor",
    "ReplayItem",
    "TextEdit",
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
