"""Tools from Model Context Protocol servers, through the official `mcp` SDK."""
