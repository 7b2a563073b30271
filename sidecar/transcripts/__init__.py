"""Session transcripts: each session's conversation as a private Markdown document with a prompt
area at its end. A leaf library: it knows nothing of LSP, the ACP transport or the session engine,
which call into it."""
