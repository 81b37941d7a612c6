"""What the agents run: the hooks before each turn, the MCP server they call, and their installs
(docs/architecture.md, "Client"). Imports nothing: the hook loads this package before every turn."""
