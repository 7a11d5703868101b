"""search_chats: memory across chats, for a chat whose user allowed it. The search is the
caller's (the retrieval engine over every other chat, by words and meaning); this module
only names the tool. Each passage comes back under the chat and message it is from."""

from __future__ import annotations

from .knowledge import PassageSearchTool


class SearchChatsTool(PassageSearchTool):
    name = "search_chats"
    description = (
        "Search the user's other chats (not this one) by meaning as well as by words, for "
        "what was said or decided there. Each passage comes back with the chat and message "
        "it is from; say which chat you took it from when you use it."
    )
