"""The remote MCP endpoint's request path on Lambda (docs/architecture.md, "The remote MCP endpoint"):
the HTTP API event, the Origin, the bearer token, the connection, then the protocol layer
(``memmy_kb.api.mcp``) with the tools bound to the caller."""
