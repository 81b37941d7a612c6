"""The stand-in for API Gateway's HTTP API: the template's routes, its JWT authorizer, payload 2.0 (docs/architecture.md, "Local stack")."""
