"""Sync: one history on every computer. Each device appends its own encrypted,
content-addressed segments to a target (a folder or WebDAV) and reads the others'; nodes merge
by set union and mutable state through a CRDT document."""
