"""The local stack: the whole service on one machine, no AWS account, no Docker (docs/architecture.md,
"Local stack", maps its packages)."""
