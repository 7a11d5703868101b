"""Retrieval: one engine (lexical and semantic, fused, by passage) over the conversations and
the user's knowledge folders; it serves search, `recall`, knowledge and memory."""
