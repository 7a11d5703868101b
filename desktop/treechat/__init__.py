"""Treechat: a desktop chat client where a conversation is a git-like graph."""

__version__ = "0.1.0"
