"""Passages a request carried and the citations a reply makes of them. A passage is what a
search gave the model: a knowledge file's text (file, page, line), an earlier message of this
chat (`recall`, by node) or a message of another chat (memory across chats). The tools write
each passage under one header line, the same in a tool result and in the volatile tail, so
the Context tab can list them from the text the model saw; the tool node's metadata keeps
them as records, which the reply's Sources are made from."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

from .commit import ContextItem
from .model import Node

SOURCE_SCHEME = "treechat-source"
PASSAGES_KEY = "passages"  # a tool node's (or a reply's) metadata: the passages it carried
# The tools whose results are passages.
PASSAGE_TOOLS = frozenset({"search_knowledge", "recall", "search_chats"})
TAIL_HEADING = "Passages from this chat's knowledge (cite each one you use as [file, line]):"

_KNOWLEDGE = re.compile(r"^--- \[(?P<path>.+?)(?:, page (?P<page>\d+))?, line (?P<line>\d+)\] "
                        r"---$", re.MULTILINE)
_RECALL = re.compile(r"^--- node (?P<node>\S+) \((?P<what>[^)]*)\) ---$", re.MULTILINE)
_CHAT = re.compile(r"^--- chat “(?P<title>.*)”, node (?P<node>\S+) ---$", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Passage:
    kind: str  # "knowledge", "recall" or "chat"
    text: str
    path: str = ""  # knowledge: the file
    page: int = 0  # knowledge: 1-based PDF page, 0 for a file without pages
    line: int = 0  # knowledge: 1-based line the passage starts at
    node_id: str = ""  # recall and chat: the message it came from
    title: str = ""  # chat: the other chat's title; recall: what the node is
    # knowledge: the file as the model is shown it, from the folder the user added (never
    # the full local path: that names the user and their folders to the provider)
    shown: str = ""

    @property
    def source(self) -> str:
        """Where it came from, as a person reads it."""
        if self.kind == "knowledge":
            return citation(self.path, self.page, self.line)
        if self.kind == "chat":
            return f"chat “{self.title}”, node {self.node_id}"
        return f"node {self.node_id}" + (f" ({self.title})" if self.title else "")

    @property
    def short_source(self) -> str:
        if self.kind != "knowledge":
            return self.source
        return citation(self.path.replace("\\", "/").rsplit("/", 1)[-1], self.page, self.line)

    @property
    def header(self) -> str:
        """The line the passage is written under for the model."""
        if self.kind == "knowledge":
            return f"--- [{citation(self.shown or self.path, self.page, self.line)}] ---"
        if self.kind == "chat":
            return f"--- chat “{self.title}”, node {self.node_id} ---"
        return f"--- node {self.node_id} ({self.title}) ---"

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "text": self.text}
        for key in ("path", "page", "line", "node_id", "title", "shown"):
            value = getattr(self, key)
            if value:
                out[key] = value
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Passage:
        return cls(kind=str(data.get("kind") or "knowledge"), text=str(data.get("text") or ""),
                   path=str(data.get("path") or ""), page=int(data.get("page") or 0),
                   line=int(data.get("line") or 0), node_id=str(data.get("node_id") or ""),
                   title=str(data.get("title") or ""), shown=str(data.get("shown") or ""))


def citation(path: str, page: int, line: int) -> str:
    where = f", page {page}" if page else ""
    return f"{path}{where}, line {line}"


def written(passages: Sequence[Passage]) -> str:
    """The passages as the model reads them: each under its header."""
    return "\n\n".join(f"{p.header}\n{p.text.strip()}" for p in passages)


def passages_in(text: str) -> list[Passage]:
    """The passages written in `text` (a tool result, the volatile tail), in order."""
    marks: list[tuple[int, int, Passage]] = []
    for m in _KNOWLEDGE.finditer(text):
        marks.append((m.start(), m.end(), Passage("knowledge", "", path=m["path"],
                                                  page=int(m["page"] or 0),
                                                  line=int(m["line"]))))
    for m in _RECALL.finditer(text):
        marks.append((m.start(), m.end(), Passage("recall", "", node_id=m["node"],
                                                  title=m["what"])))
    for m in _CHAT.finditer(text):
        marks.append((m.start(), m.end(), Passage("chat", "", node_id=m["node"],
                                                  title=m["title"])))
    marks.sort(key=lambda t: t[0])
    out: list[Passage] = []
    for i, (_, end, p) in enumerate(marks):
        stop = marks[i + 1][0] if i + 1 < len(marks) else len(text)
        body = text[end:stop].strip()
        out.append(replace(p, text=body))
    return out


def stored_passages(metadata: Mapping[str, Any]) -> list[Passage]:
    found = metadata.get(PASSAGES_KEY)
    if not isinstance(found, list):
        return []
    return [Passage.from_dict(d) for d in found if isinstance(d, Mapping)]


class TurnSources:
    """Follows a path in order and knows, at each reply, the passages its turn retrieved:
    its tool results since the user's message, then what its request's tail quoted."""

    def __init__(self) -> None:
        self._since_user: list[Passage] = []

    def see(self, node: Node) -> None:
        if node.role == "user":
            self._since_user = []
        elif node.role == "tool" and node.name in PASSAGE_TOOLS:
            self._since_user.extend(stored_passages(node.metadata) or passages_in(node.text))

    def of(self, reply: Node) -> list[Passage]:
        own = stored_passages(reply.metadata)
        if not own and not self._since_user:
            return []
        return unique([*self._since_user, *own])


def reply_sources(path: Sequence[Node], reply: Node) -> list[Passage]:
    """The passages the turn that wrote `reply` retrieved, each once, in the order
    retrieved."""
    sources = TurnSources()
    for node in path:
        if node.id == reply.id:
            return sources.of(reply)
        sources.see(node)
    return []


def unique(passages: Iterable[Passage]) -> list[Passage]:
    seen: set[tuple[str, str, int, int, str]] = set()
    out: list[Passage] = []
    for p in passages:
        key = (p.kind, p.path, p.page, p.line, p.node_id)
        if key not in seen:
            seen.add(key)
            out.append(p)
    return out


def source_url(p: Passage) -> str:
    """The link a citation opens: the file and the place in it."""
    query = "&".join(f"{k}={v}" for k, v in (("page", p.page), ("line", p.line)) if v)
    return f"{SOURCE_SCHEME}://{quote(p.path)}" + (f"?{query}" if query else "")


def parse_source_url(url: str) -> tuple[str, int, int] | None:
    """(path, page, line) of a citation's link; None for anything else."""
    parts = urlsplit(url)
    if parts.scheme != SOURCE_SCHEME:
        return None
    path = unquote(parts.netloc + parts.path)
    if not path:
        return None
    query = parse_qs(parts.query)

    def number(key: str) -> int:
        value = query.get(key, ["0"])[0]
        return int(value) if value.isdigit() else 0

    return path, number("page"), number("line")


# A citation as a model writes one: [file], [file, line N], [file, lines N-M], [file, page P]
# or [file, page P, line N], in any case, and not already a link.
_CITED = re.compile(r"\[(?P<file>[^\[\]\n,]+?)(?:,\s*(?:page|p\.)\s*(?P<page>\d+))?"
                    r"(?:,\s*lines?\s*(?P<line>\d+)(?:\s*[-\u2013]\s*\d+)?)?\](?!\()",
                    re.IGNORECASE)


def _file_name(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1]


def cited_passage(files: Sequence[Passage], name: str, page: int, line: int) -> Passage | None:
    """The retrieved passage a citation points into: the file by its path or its name, the
    page when one is given, and the passage whose lines hold the cited line (a citation of
    line 4 is of the passage that starts at line 1 and runs to line 5)."""
    wanted = name.strip().casefold()
    same = [p for p in files
            if wanted in (p.path.casefold(), _file_name(p.path).casefold(),
                          p.shown.casefold())
            and (not page or p.page == page)]
    if not line:
        return same[0] if same else None
    for p in same:
        if p.line <= line <= p.line + p.text.strip().count("\n"):
            return p
    return None


def with_sources(text: str, sources: Sequence[Passage]) -> str:
    """The reply's Markdown with each citation of a knowledge file it makes turned into a
    link to the place it names, and under it the passages it cited as Sources (or, when it
    cites none, the passages its turn retrieved)."""
    files = [p for p in sources if p.kind == "knowledge" and p.path]
    if not files or not text.strip():  # a step that only called tools says nothing
        return text
    cited: list[Passage] = []

    def link(m: re.Match[str]) -> str:
        line = int(m["line"] or 0)
        found = cited_passage(files, m["file"], int(m["page"] or 0), line)
        if found is None:
            return m[0]
        cited.append(found)
        place = replace(found, line=line) if line else found  # opens at the line cited
        return f"{m[0]}({source_url(place)})"

    text = _CITED.sub(link, text)
    shown = unique(cited) or files
    heading = "Sources" if cited else "Passages retrieved (none cited)"
    items = "\n".join(f"{n}. [{p.short_source}]({source_url(p)})"
                      for n, p in enumerate(shown, start=1))
    return f"{text.rstrip()}\n\n**{heading}**\n\n{items}"


@dataclass(frozen=True, slots=True)
class Carried:
    """A passage a request carries: from which tool call (its node), and how that result is
    shown now ("full", or "aged" / "cleared" / "summarized": only `recall` brings it back)."""

    passage: Passage
    node_id: str
    state: str


def carried_passages(items: Sequence[ContextItem]) -> list[Carried]:
    """The passages in a commit's items, in render order: each search result the model got
    (knowledge, `recall`, other chats), read from what the request shows of it."""
    out: list[Carried] = []
    for item in items:
        if item.role != "tool" or item.tool_name not in PASSAGE_TOOLS or item.is_summary:
            continue
        node = item.source_node_id.split("#", 1)[0]
        out.extend(Carried(p, node, item.state) for p in passages_in(item.rendered))
    return out
