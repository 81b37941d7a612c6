"""The edge: HTTP (resolver, request guard, identity, idempotency, request/response bodies, what routes receive
through ``Depends``) and events. The adapters come from ``memmy_kb.composition`` (docs/architecture.md,
"Layers")."""
