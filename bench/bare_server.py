"""The start-up baseline: a pygls 2 language server that does nothing.

Same interpreter, same pygls, stdio; it answers `initialize` with pygls'
defaults and nothing else. `python bench/bare_server.py`
"""

from __future__ import annotations

from pygls.lsp.server import LanguageServer


def main() -> None:
    LanguageServer("bare", "1").start_io()


if __name__ == "__main__":
    main()
