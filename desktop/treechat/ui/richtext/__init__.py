"""Markdown and code rendered into text documents, highlighted, cached and measured."""
