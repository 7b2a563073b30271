"""The README's module tree names every module of the package, and only modules that exist."""

from __future__ import annotations

import re
from pathlib import Path

import sidecar

PACKAGE = Path(sidecar.__file__).resolve().parent
README = PACKAGE.parent / "README.md"


def modules_in_readme() -> set[str]:
    text = README.read_text(encoding="utf-8")
    section = text.split("### Architecture", 1)[1]
    tree = section.split("```", 2)[1]
    named: set[str] = set()
    package = ""
    for line in tree.splitlines():
        header = re.match(r"^(sidecar/(?:\w+/)*)(\S*)", line)
        if header:
            package = header.group(1)
            if header.group(2):  # a top-level module: sidecar/cli.py
                named.add(header.group(1) + header.group(2))
            continue
        names = re.match(r"^\s+((?:\w+\.py,? ?)+)", line)
        if names:
            named.update(package + name.strip(", ") for name in names.group(1).split(","))
    return {name.strip() for name in named}


def modules_in_package() -> set[str]:
    found = set()
    for path in PACKAGE.rglob("*.py"):
        if path.name in {"__init__.py", "__main__.py"}:
            continue
        found.add(path.relative_to(PACKAGE.parent).as_posix())
    return found


def test_the_readme_tree_names_every_module() -> None:
    assert modules_in_package() - modules_in_readme() == set()


def test_the_readme_tree_names_no_module_that_is_gone() -> None:
    assert modules_in_readme() - modules_in_package() == set()
