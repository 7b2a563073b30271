"""The agent's stream live in the editor: acp/sessionUpdate (coalesced text chunks), the turn's
work-done progress, notices and compaction."""
