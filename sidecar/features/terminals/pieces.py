"""A client terminal's output as pieces of the conversation document: a heading, fenced
pieces of output, its end.

The output is untrusted: it is cleaned (no escape sequences or control characters), fenced with a
fence longer than any run of backticks inside, and a line that looks like one of the document's
markers is escaped, so nothing in it can end the block or the conversation early.
"""

from __future__ import annotations

from typing import Any

from sidecar.kernel.pieces import MARKER_PREFIX, fence_for, inline_code
from sidecar.text_safety import clean_text, one_line

__all__ = ["terminal_cut_note", "terminal_exit_line", "terminal_heading", "terminal_output_block"]


def terminal_heading(command: str, cwd: str) -> str:
    shown = inline_code(one_line(command, 300) or "?")
    return f"**Terminal:** {shown} in {inline_code(one_line(cwd, 300))}\n"


def terminal_output_block(text: str) -> str:
    body = clean_text(text).rstrip("\n")
    body = "\n".join("\\" + line if line.startswith(MARKER_PREFIX) else line for line in body.split("\n"))
    fence = fence_for(body)
    return f"{fence}text\n{body}\n{fence}\n"


def terminal_cut_note(hidden_bytes: int) -> str:
    return f"_… about {max(0, hidden_bytes)} bytes of output not shown here; its last lines: …_\n"


def terminal_exit_line(command: str, status: dict[str, Any]) -> str:
    label = inline_code(one_line(command, 60) or "?")  # short: the end must fit on a screen line
    if status.get("signal"):
        return f"**Terminal:** {label} was ended by {one_line(status['signal'], 20)}.\n"
    return f"**Terminal:** {label} exited with code {status.get('exitCode')}.\n"
