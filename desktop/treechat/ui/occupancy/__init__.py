"""How full the context window is: the ring, the usage bar and their wording."""
