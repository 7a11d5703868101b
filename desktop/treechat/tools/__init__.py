"""Built-in tools the agent loop can call."""
