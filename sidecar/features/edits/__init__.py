"""The agent's file access and edits: fs/* requests, permissions, reviewed edits, proposals,
the agent's changes after they landed, and the editor following the agent."""
