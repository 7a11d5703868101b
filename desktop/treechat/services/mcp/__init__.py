"""MCP servers as the user configures them and their tools, prompts and resources as chats use
them."""
