"""A message too long for the model's window: what the banner says of it, and the two ways
to send it anyway, cut to fit or as an attached file (the turn controller holds the message
and asks which)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from ...services.attachments import PreparedFile
from ...services.turns.chat_service import ChatService
from ...services.turns.message_fit import MessageFit
from ..occupancy.format import tokens

# a held message made ready to send: its text, the files with it, what the composer gets back
Held = tuple[str, Sequence[PreparedFile], str | None]
Prepare = Callable[[str, MessageFit], Awaitable[Held]]

# Shorter than this, a message fits any window a model has (a token is at least a character
# in practice), and the send skips counting it.
QUICK_FIT_CHARS = 1000
# A message too long for the window, sent as a file: its name, and what the message says.
AS_FILE_NAME = "message.txt"
AS_FILE_TEXT = "My message is in the attached file message.txt."
# The message's own text and the file's name and fence, within the room the window leaves.
AS_FILE_FRAMING = 48

TITLE = "Too long for this model"
ACTIONS = ("cut_to_fit", "send_as_file", "cancel")


def notice(fit: MessageFit) -> str:
    """The banner's words: the message's size, the most any message can have, the choices."""
    return (
        f"This message is {tokens(fit.tokens)} tokens. With this model a message can "
        f"have at most {tokens(fit.room)}: its {tokens(fit.window)}-token window less the "
        "reply's share, the instructions and the tools (earlier messages are summarized "
        "to make room). Cut it to fit (its start and end are kept, the cut is marked), "
        "send it as an attached file (kept whole in the chat; the model reads its start "
        "and end as far as they fit), or cancel and shorten it."
    )


def cut_to_fit(chat: ChatService) -> Prepare:
    """The message cut to the room the window leaves it."""
    async def cut(text: str, fit: MessageFit) -> Held:
        return await chat.cut_to_fit(text, fit), (), None

    return cut


def as_file(chat: ChatService) -> Prepare:
    """The message as an attached text file: kept whole in the chat, read by the model as
    far as the window's room goes (its start and end)."""
    async def attach(text: str, fit: MessageFit) -> Held:
        room = max(1, fit.room - AS_FILE_FRAMING)
        prepared = await chat.attachments.as_file(text, AS_FILE_NAME, room)
        return AS_FILE_TEXT, (prepared,), text

    return attach
