"""Projects in the window: the dialog that makes or edits one (name, shared instructions,
memory across chats)."""
