"""The remote MCP endpoint's rules (docs/architecture.md, "The remote MCP endpoint"): the access token's
claims, the connections, the stored hits, and the tools on the recall domain."""
