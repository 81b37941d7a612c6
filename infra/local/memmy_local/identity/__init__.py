"""The dev identity provider: OpenID Connect on loopback for the desktop (docs/architecture.md, "Local stack")."""
