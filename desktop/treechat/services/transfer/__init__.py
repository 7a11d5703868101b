"""Import and export: export files of other apps and of Treechat read into the store, and chats
written out as Markdown or Treechat JSON."""
