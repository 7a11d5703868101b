"""A chat as readable Markdown: the active path (what the user sees at HEAD), optionally
followed by every other branch from the point where it leaves what was already written."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from datetime import UTC, datetime

from ..dag import Graph, active_path, descendants, version_of
from ..model import Node, Session
from ..reply import reasoning_of

_BACKTICKS = re.compile(r"`{3,}")


def render_markdown(
    session: Session,
    graph: Graph,
    *,
    all_branches: bool = False,
    hidden: Iterable[str] = (),
) -> str:
    """Markdown for `session` over `graph`. Branches under a hidden node are left out."""
    head = session.head if session.head in graph else None
    lines = [f"# {session.title or 'Untitled'}", ""]
    facts = []
    if session.model:
        facts.append(f"Model: `{session.model}`")
    facts.append(f"Started: {_when(session.created_at)}")
    facts.append(f"Chat: `{session.id}`")
    lines.extend([" · ".join(facts), ""])

    path = active_path(graph, head)
    written: set[str] = set()
    for node in path:
        lines.extend(_node(graph, node))
        written.add(node.id)
    if not path:
        lines.extend(["_This chat has no messages yet._", ""])

    if all_branches:
        blocked: set[str] = set()
        for hid in hidden:
            if hid in graph:
                blocked.add(hid)
                blocked.update(n.id for n in descendants(graph, hid))
        others = [t for t in _tips(graph) if t.id not in written and t.id not in blocked]
        if others:
            lines.extend(["---", "", "## Other branches", ""])
        for number, tip in enumerate(others, start=2):
            branch = active_path(graph, tip.id)
            fresh = [n for n in branch if n.id not in written]
            if not fresh:
                continue
            fork = _fork_point(branch, written)
            where = f" — after “{_snippet(fork)}”" if fork is not None else " — a separate start"
            lines.extend([f"### Branch {number}{where}", ""])
            for node in fresh:
                lines.extend(_node(graph, node))
                written.add(node.id)
    return "\n".join(lines).rstrip() + "\n"


def _tips(graph: Graph) -> list[Node]:
    """Ends of conversation branches, oldest first (tool results belong to their caller)."""
    return [
        n for n in graph
        if not (n.role == "tool" and n.caller is not None)
        and not graph.conversation_children(n.id)
    ]


def _fork_point(branch: tuple[Node, ...], written: set[str]) -> Node | None:
    last = None
    for node in branch:
        if node.id not in written:
            break
        last = node
    return last


def _node(graph: Graph, node: Node) -> list[str]:
    if node.metadata.get("hidden"):
        return []
    label = _label(node)
    extras = []
    if node.role in ("user", "assistant") and node.parent is not None:
        index, total = version_of(graph, node.id)
        if total > 1:
            extras.append(f"version {index} of {total}")
    if node.interrupted:
        extras.append("interrupted")
    header = f"**{label}** · {_when(node.created_at)}"
    if extras:
        header += f" · _{', '.join(extras)}_"
    out = [header, ""]
    if node.role == "tool":
        body = node.text
        out.extend(_fenced(body) if body else ["_(empty result)_"])
        out.append("")
        return out
    if node.role == "system":
        text = node.input if isinstance(node.input, str) else node.text
        out.extend([_quote(text or ""), ""])
        return out
    thinking = reasoning_of(node)
    if thinking:
        out.extend(["_Thinking:_", "", _quote(thinking), ""])
    text = node.text
    if text.strip():
        out.extend([text.rstrip(), ""])
    files = _files(node)
    if files:
        out.extend([f"_Files: {files}_", ""])
    for call in node.metadata.get("tool_calls") or ():
        if isinstance(call, dict):
            name = call.get("name") or "tool"
            args = call.get("arguments")
            shown = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
            if shown and shown != text:
                out.append(f"_Calls `{name}`:_")
                out.extend(_fenced(shown))
                out.append("")
            else:
                out.extend([f"_Calls `{name}`._", ""])
    return out


def _files(node: Node) -> str:
    """The files a message carries, by name (the window shows them as cards, not as text);
    one the import could only name is marked so."""
    names = []
    for entry in node.metadata.get("attachments") or ():
        if isinstance(entry, dict) and entry.get("name"):
            name = str(entry["name"]).replace("`", "'")
            names.append(f"`{name}` (not in the export)" if entry.get("placeholder")
                         else f"`{name}`")
    return ", ".join(names)


def _label(node: Node) -> str:
    if node.role == "user":
        return "User"
    if node.role == "assistant":
        # The model's one display name, recorded with the reply ("Ollama · llama3.2:3b").
        shown = node.metadata.get("model_label") or node.name
        return f"Assistant ({shown})" if shown else "Assistant"
    if node.role == "tool":
        return f"Tool `{node.name}`" if node.name else "Tool"
    if node.role == "system":
        return "System"
    return node.name.capitalize() if node.name else "Note"


def _fenced(text: str) -> list[str]:
    longest = max((len(m.group(0)) for m in _BACKTICKS.finditer(text)), default=2)
    fence = "`" * (longest + 1)
    return [fence, text.rstrip("\n"), fence]


def _quote(text: str) -> str:
    return "\n".join(f"> {line}" if line else ">" for line in text.rstrip().splitlines())


def _snippet(node: Node, limit: int = 50) -> str:
    text = " ".join((node.text or node.role).split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _when(timestamp: float) -> str:
    try:
        moment = datetime.fromtimestamp(timestamp, UTC)
    except (OverflowError, OSError, ValueError):
        return "unknown time"
    return moment.strftime("%Y-%m-%d %H:%M UTC")
