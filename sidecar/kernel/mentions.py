"""`@path` mentions in a prompt: which files go along as context (docs/protocol.md, "Mentions").

A mention is `@` at the start of the text or after whitespace or an opening bracket, followed by
a quoted path (`@"docs/my notes.md"`) or by a path without spaces that contains `/` or `.`
(`@README.md`, `@src/app.py`), so `@Override` or `@user` stay words. Text inside backquotes
(inline code, fenced blocks) holds no mentions. Trailing punctuation of a bare path
(`see @README.md.`) is not part of it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_MENTIONS = 20

_CODE = re.compile(r"(?ms)^(`{3,}|~{3,})[^\n]*\n.*?^\1[`~]*[ \t]*$|`+[^`\n]*`+")
_MENTION = re.compile(r'(?:(?<=\s)|(?<=^)|(?<=[(\[{]))@(?:"([^"\n]+)"|([^\s"]+))')
_TRAILING = ",;:!?)]}'."


@dataclass(frozen=True)
class Mention:
    path: str  # as written (relative to the session's folder, or absolute)
    written: str  # the mention as it appears in the text, for messages


def find_mentions(text: str) -> list[Mention]:
    """The distinct mentions in `text`, in order."""
    # Blank out code so a mention inside it is not seen (offsets stay the same).
    visible = _CODE.sub(lambda m: " " * len(m.group(0)), text)
    found: dict[str, Mention] = {}
    for match in _MENTION.finditer(visible):
        quoted, bare = match.group(1), match.group(2)
        if quoted is not None:
            path, written = quoted, match.group(0)
        else:
            path = bare.rstrip(_TRAILING)
            if not path or ("/" not in path and "." not in path.strip(".")):
                continue
            written = "@" + path
        found.setdefault(path, Mention(path, written))
    return list(found.values())


def mention_text(path: str) -> str:
    """How a picked file is written in a prompt: quoted when it has whitespace or a quote."""
    if re.search(r'[\s"]', path) or not path:
        return '@"' + path.replace('"', "") + '"'
    return "@" + path
