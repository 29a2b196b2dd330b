"""MCP both ways (DESIGN §17): the desktop as a client of MCP servers (``client``,
``tools``, ``confine``) and as a server for other MCP clients (``server*``)."""
