"""The structure a CommonMark parser sees in a transcript document (test helper)."""

from __future__ import annotations

from dataclasses import dataclass

from markdown_it import MarkdownIt

from sidecar.features.conversation.document import MARKER

PARSERS = {"commonmark": MarkdownIt("commonmark"), "gfm-like": MarkdownIt("gfm-like", {"linkify": False})}


@dataclass(frozen=True)
class Structure:
    headings: list[tuple[str, str]]  # (tag, inline text) of every heading, at any depth
    comments: list[str]  # every HTML block, stripped
    last_top_level: list[str]  # the types of the last top-level tokens
    hr_count: int


def structure(document: str, parser: str = "commonmark") -> Structure:
    tokens = PARSERS[parser].parse(document)
    headings = []
    for index, token in enumerate(tokens):
        if token.type == "heading_open":
            headings.append((token.tag, tokens[index + 1].content))
    comments = [t.content.strip() for t in tokens if t.type == "html_block"]
    top = [t.type for t in tokens if t.level == 0]
    hrs = sum(1 for t in tokens if t.type == "hr")
    return Structure(headings, comments, top[-4:], hrs)


def prompt_area_ok(document: str, parser: str = "commonmark") -> bool:
    """The document ends with the prompt area as a parser sees it: a break, the heading, the marker."""
    found = structure(document, parser)
    return found.last_top_level == ["hr", "heading_open", "heading_close", "html_block"] and (
        found.comments[-1:] == [MARKER]
    )
