"""The message box under the chat: input, model picker, send/stop, attach chips."""
