"""acp-sidecar: a language server that bridges LSP editors and ACP agents."""

__version__ = "0.1.0"
