"""The agent's questions (elicitation): forms, URL mode, dialogs, and the form block of the
conversation document."""
