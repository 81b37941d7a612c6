"""The rules of the authorization server for MCP clients (docs/remote-mcp.md, "The authorization
server"): what a client's metadata may be, and the life of sign-ins, codes and refresh tokens."""
