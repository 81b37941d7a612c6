"""Teams through the real handlers (docs/teams.md)."""
