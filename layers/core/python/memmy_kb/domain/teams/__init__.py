"""Teams: create, invite, accept, decline, remove, leave, roles, transfer, delete (docs/teams.md)."""
