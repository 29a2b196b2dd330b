"""MCP both ways (DESIGN §17): the desktop as a client of MCP servers, and as a server."""
