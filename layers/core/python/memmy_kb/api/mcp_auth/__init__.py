"""The service's own OAuth authorization server for MCP clients on Lambda (docs/remote-mcp.md, "Authorization
servers"): Authlib's server over the HTTP API's events, federating the sign-in to the login
provider."""
