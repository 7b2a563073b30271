"""Session titles: sanitizing, provenance rules, the rename flow and the SQLite cache
(`model`, `rules`, `rename`, `store`: pure logic and storage), and titling (`titling`, `writes`,
`watch`): live updates, fallback titles, reconcile with session/list, rename."""
