"""The kernel: what every feature stands on, and no feature.

The typed event bus, the sessions and their registry, the turns and their queue, tool calls,
the configured agents and their supervisors, options, status and errors. It imports no feature
and nothing of LSP (docs/architecture.md; tests/unit/test_architecture.py holds it to that).
"""
