"""The LSP layer: translates between the editor and the session engine; decides nothing."""
