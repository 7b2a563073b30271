"""One list of agent diffs and file texts, fixed and random, on which every implementation of
the diff rule (sidecar/features/edits/diff_apply.py, the Neovim plugin's Lua, the VS Code extension's
TypeScript) must agree with the sidecar's."""

from __future__ import annotations

import random

Case = tuple[str | None, list[dict[str, object]]]

README = "# Demo\n\nline one\nline two\n"

FIXED: list[Case] = [
    (README, [{"oldText": README, "newText": README + "added\n"}]),
    (None, [{"oldText": None, "newText": "new file\n"}]),
    (README, [{"oldText": "line two", "newText": "line 2"}]),
    (README, [{"oldText": "line one\n", "newText": ""}]),
    ("a\nb\nc\n", [{"oldText": "b\n", "newText": "b\nc\n"}]),
    (README, [{"oldText": "not there", "newText": "x"}]),
    ("x\nx\n", [{"oldText": "x", "newText": "y"}]),
    (None, [{"oldText": "old", "newText": "new"}]),
    ("", [{"oldText": "", "newText": "new"}]),
    (
        README,
        [
            {"oldText": "line one", "newText": "line 1"},
            {"oldText": "line 1\nline two", "newText": "1\n2"},
        ],
    ),
]
# What the sidecar makes of FIXED, so that a change of the rule itself is seen.
FIXED_FITS = [
    "applies",
    "applies",
    "applies",
    "applies",
    "applied",
    "conflict",
    "conflict",
    "conflict",
    "applies",
    "applies",
]


def diff_cases(count: int = 300, seed: int = 7) -> list[Case]:
    """FIXED, then `count` random cases over a tiny alphabet (so that old texts are found once,
    twice or not at all, and new texts are often already there)."""
    cases = list(FIXED)
    rng = random.Random(seed)
    for _ in range(count):
        current = "".join(rng.choice("ab\n") for _ in range(rng.randrange(12)))
        diffs: list[dict[str, object]] = [
            {
                "oldText": None
                if rng.random() < 0.1
                else "".join(rng.choice("ab\n") for _ in range(rng.randrange(4))),
                "newText": "".join(rng.choice("abc\n") for _ in range(rng.randrange(4))),
            }
            for _ in range(rng.randrange(1, 3))
        ]
        cases.append((None if rng.random() < 0.05 else current, diffs))
    return cases
