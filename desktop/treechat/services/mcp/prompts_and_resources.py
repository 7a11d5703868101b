"""What a chat takes from an MCP server besides its tools: prompts offered as `/` commands in
the composer, and resources read as quoted text for a message."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...tools.mcp.runtime import PromptInfo


@dataclass(frozen=True, slots=True)
class PromptCommand:
    """An MCP prompt offered as a `/` command in the composer."""

    command: str  # "/server:prompt"
    server: str
    prompt: PromptInfo


@dataclass(frozen=True, slots=True)
class ResourceText:
    """A resource read for attaching to a message."""

    server: str
    uri: str
    label: str
    text: str

    def as_message_block(self) -> str:
        """The resource as it goes into a message: named, and fenced as quoted material."""
        longest = max((len(run) for run in re.findall(r"`+", self.text)), default=0)
        fence = "`" * max(3, longest + 1)
        return (
            f"[Resource {self.label} ({self.uri}), quoted from the {self.server} MCP server]\n"
            f"{fence}\n{self.text.rstrip()}\n{fence}"
        )
