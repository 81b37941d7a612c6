"""The edge: HTTP (resolver, identity, idempotency, request/response bodies) and events, plus the
composition root that wires adapters to ports (docs/architecture.md, "Layers")."""
