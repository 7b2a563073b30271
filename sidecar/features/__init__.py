"""The sidecar's capabilities, one folder each: its engine side and its LSP side together.

A feature stands on the kernel and reacts to the others through the bus or a kernel port
(docs/architecture.md lists the features and the rules a test holds them to).
"""
