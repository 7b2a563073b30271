"""The session engine: sessions, turns, titles glue; knows nothing of LSP."""
