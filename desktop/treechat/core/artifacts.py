"""Claude's web markup in a reply: `<antThinking>` is the model's reasoning, kept apart from
the answer; an `<antArtifact>` (a page, a program, a document it wrote) becomes a titled card:
a bold title line and its code in a fenced block, line breaks kept, and the artifact itself
listed in the node's metadata so the window can open or save it."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

ARTIFACTS_KEY = "artifacts"

_THINKING = re.compile(r"<antThinking>(.*?)</antThinking>", re.DOTALL)
_ARTIFACT = re.compile(r"<antArtifact\b([^>]*)>(.*?)(?:</antArtifact>|\Z)", re.DOTALL)
_ATTRIBUTE = re.compile(r"([A-Za-z_][\w-]*)\s*=\s*(?:\"([^\"]*)\"|'([^']*)')")

# The artifact's type, as a language for the fence and a word for the card.
_KINDS: Mapping[str, tuple[str, str]] = {
    "text/html": ("html", "HTML page"),
    "text/markdown": ("markdown", "Document"),
    "image/svg+xml": ("svg", "SVG image"),
    "application/vnd.ant.mermaid": ("mermaid", "Diagram"),
    "application/vnd.ant.react": ("jsx", "React component"),
    "application/vnd.ant.code": ("", "Code"),
}
_SUFFIXES: Mapping[str, str] = {
    "html": ".html", "markdown": ".md", "svg": ".svg", "mermaid": ".mmd", "jsx": ".jsx",
    "python": ".py", "javascript": ".js", "typescript": ".ts", "tsx": ".tsx", "css": ".css",
    "json": ".json", "bash": ".sh", "shell": ".sh", "rust": ".rs", "go": ".go", "java": ".java",
    "c": ".c", "cpp": ".cpp", "sql": ".sql", "yaml": ".yaml", "toml": ".toml",
}


@dataclass(frozen=True, slots=True)
class Artifact:
    identifier: str
    title: str
    kind: str  # the MIME-like type Claude gives it
    language: str
    content: str

    @property
    def suffix(self) -> str:
        """A file name ending for saving it."""
        return _SUFFIXES.get(self.language.lower(), ".txt")

    @property
    def file_name(self) -> str:
        stem = re.sub(r"[^\w.-]+", "-", self.identifier or self.title).strip("-") or "artifact"
        return stem + ("" if stem.endswith(self.suffix) else self.suffix)

    def as_dict(self) -> dict[str, str]:
        return {"identifier": self.identifier, "title": self.title, "type": self.kind,
                "language": self.language, "content": self.content}


@dataclass(frozen=True, slots=True)
class SplitReply:
    text: str  # the answer, artifacts as cards
    thinking: str  # what was in <antThinking>, "" when none
    artifacts: tuple[Artifact, ...]


def has_claude_markup(text: str) -> bool:
    return "<antThinking>" in text or "<antArtifact" in text


def split_claude_markup(text: str) -> SplitReply:
    """The reply without Claude's markup: its thinking apart, each artifact a card."""
    if not has_claude_markup(text):
        return SplitReply(text, "", ())
    thoughts = [m.group(1).strip() for m in _THINKING.finditer(text)]
    text = _THINKING.sub("", text)
    found: list[Artifact] = []

    def card(match: re.Match[str]) -> str:
        artifact = _artifact(match.group(1), match.group(2))
        found.append(artifact)
        return "\n\n" + artifact_markdown(artifact) + "\n\n"

    text = _ARTIFACT.sub(card, text)
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    return SplitReply(text, "\n\n".join(t for t in thoughts if t), tuple(found))


def artifact_markdown(artifact: Artifact) -> str:
    """The card: "**Title** · HTML page", then the code fenced (longer fences when the code
    holds one)."""
    word = _KINDS.get(artifact.kind, ("", "Artifact"))[1]
    longest = max((len(m) for m in re.findall(r"`{3,}", artifact.content)), default=0)
    fence = "`" * max(3, longest + 1)
    body = artifact.content.strip("\n")
    return f"**{artifact.title or 'Artifact'}** · {word}\n\n{fence}{artifact.language}\n" \
           f"{body}\n{fence}"


def artifacts_of(metadata: Mapping[str, Any]) -> tuple[Artifact, ...]:
    """The artifacts a node's metadata lists (what `split_claude_markup` found)."""
    listed = metadata.get(ARTIFACTS_KEY)
    if not isinstance(listed, Sequence) or isinstance(listed, str):
        return ()
    out = []
    for item in listed:
        if isinstance(item, Mapping) and isinstance(item.get("content"), str):
            out.append(Artifact(str(item.get("identifier") or ""), str(item.get("title") or ""),
                                str(item.get("type") or ""), str(item.get("language") or ""),
                                str(item["content"])))
    return tuple(out)


def _artifact(attributes: str, content: str) -> Artifact:
    attrs = {m.group(1): m.group(2) if m.group(2) is not None else m.group(3)
             for m in _ATTRIBUTE.finditer(attributes)}
    kind = attrs.get("type", "")
    language = attrs.get("language") or _KINDS.get(kind, ("", ""))[0]
    return Artifact(attrs.get("identifier", ""), attrs.get("title", ""), kind, language,
                    content)
