"""The template's functions run in this process as on Lambda: warm containers, event runners (docs/architecture.md, "Local stack")."""
