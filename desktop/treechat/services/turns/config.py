"""How turns run: the steps a turn may take, the instructions every chat gets, the workspace,
how often a reply's draft is flushed, who summarizes, whether the store is let go of
while the provider is awaited, and what a one-shot command skips or lets go of."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..store_life.drafts import StoreRelease


@dataclass
class ChatConfig:
    max_steps: int = 8  # model calls per turn when tools keep being called
    global_instructions: str = ""
    workspace: Path | None = None
    draft_interval: float = 1.0
    # Who writes the summaries of folded history: "" the offline extractive summarizer,
    # "session" the session's own model, or a model id (a cheaper model of the same
    # connection, the bundled one). Each summary is made once and kept in its commit.
    summarizer: str = ""
    # Set by a command-line turn: the store is let go of while the provider is awaited (the
    # draft goes to a journal meanwhile), so other processes can open it. The window keeps it.
    release_store: StoreRelease | None = None
    # Set by a one-shot command: called once a request is counted and built, before the
    # provider is reached (`treechat send` lets go of the token tables there and starts
    # loading litellm into the memory they held).
    request_ready: Callable[[], None] | None = None
    # A one-shot command shows no ring after the reply: False ends the turn with the
    # occupancy of the request it sent (the same window) instead of counting the context
    # with the reply in it, which would load the token tables again.
    occupancy_after_reply: bool = True
    # How a reply stopped mid-stream is counted for its usage row: None counts it with the
    # token tables (the window keeps them loaded); a one-shot command that let go of them
    # passes an estimate rather than load them again as it ends (Ctrl+C in the middle of a
    # reply peaked at 359 MB, the tables loaded beside litellm).
    count_stopped_reply: Callable[[str], int] | None = None

    def set_global_instructions(self, text: str) -> None:
        """The instructions every chat gets changed (the settings service reports it)."""
        self.global_instructions = text
