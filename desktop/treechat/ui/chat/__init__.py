"""The conversation: the chat list (model, delegate, view), the message editor and reader."""
