"""The store's life around the chats: opening and recovering it, backups and their schedule,
reply drafts, letting go of the store across a wait and opening it again, and its health."""
