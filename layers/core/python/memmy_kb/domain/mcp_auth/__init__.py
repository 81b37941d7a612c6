"""The rules of the authorization server for MCP clients (docs/remote-mcp.md, "Authorization servers"):
what a client's metadata may be, and which client ID metadata documents it reads."""
