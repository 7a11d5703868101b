"""`recall`: the original text of what a request no longer shows in full (folded into
summaries, aged, cleared, cut by the per-item cap; on the branch and on attached ones), found
through the retrieval engine (the lexical passes fused with the question's meaning) and in
the files those messages carried; and the digest of it quoted for a model without tools."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ...core.attachments import AttachmentRef
from ...core.commit import ContextCommit
from ...providers.embeddings import EmbedderUnavailable
from ...store.database import Store
from ...store.fulltext import (
    NODE_TEXT_SQL,
    FilePassage,
    Passage,
    QueryError,
    any_terms_query,
    content_terms,
    index_for,
    near_pairs_query,
)
from ...store.repository import Repository
from ..recall_files import ensure_indexed, hidden_files
from .engine import engine_for

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RecallHit:
    """One match of `recall`: the original text of a passage of a node the request no longer
    shows in full, and what the request shows for it instead (`state`)."""

    node_id: str
    session_id: str
    role: str
    state: str  # summarized / aged / cleared / cut
    tool_name: str
    text: str
    offset: int
    length: int  # the node's whole text (or the file's, for an attachment), in characters
    score: float
    file_name: str = ""  # an attachment of the node, when the match is in its text


@dataclass(frozen=True)
class RecallResult:
    query: str
    hits: tuple[RecallHit, ...]
    searched: int  # nodes searched (the folded, aged, cleared and cut ones)

    def text(self) -> str:
        """What the `recall` tool returns to the model."""
        if not self.searched:
            return ("Nothing in this conversation has been summarized, aged or cut yet: "
                    "everything is still in the request above.")
        if not self.hits:
            return (f"No match for {self.query[:200]!r} among the {self.searched} earlier "
                    "messages and tool results that are no longer shown in full.")
        out = [f"{len(self.hits)} match(es) from earlier in this conversation, original text:"]
        for h in self.hits:
            what = f"tool {h.tool_name}" if h.role == "tool" and h.tool_name else h.role
            state = f"{h.state}, its attachment {h.file_name}" if h.file_name else h.state
            span = (f", characters {h.offset:,}-{h.offset + len(h.text):,} of {h.length:,}"
                    if len(h.text) < h.length else "")
            out.append(f"--- node {h.node_id} ({what}, {state}{span}) ---\n{h.text}")
        return "\n\n".join(out)


# The recall tool's reply stays under the per-item cap so it is never cut itself.
RECALL_CHARS = 3600
# What the fallback for models without tools adds to the volatile tail.
FALLBACK_CHARS = 1500
FALLBACK_HITS = 3


CommitLookup = Callable[[str], ContextCommit | None]
"""The commits already in memory by id (an attached branch's commit is searched too when it
is there)."""


def hidden_nodes(commit: ContextCommit, lookup: CommitLookup) -> dict[int, tuple[str, str, str]]:
    """seq -> (node id, state, tool name) of every node the commit no longer shows in
    full, including those of the commits it attached."""
    out: dict[int, tuple[str, str, str]] = {}
    commits = [commit]
    for source in sorted(commit.attached_sources()):
        found = lookup(source)
        if found is not None:
            commits.append(found)
    for c in commits:
        for it in c.items:
            if it.is_summary or it.role not in ("user", "assistant", "tool"):
                continue
            state: str
            if it.state in ("summarized", "aged", "cleared"):
                state = it.state
            elif it.reason == "per_item_cap":
                state = "cut"
            else:
                continue
            if it.seq > 0 and it.seq not in out:
                out[it.seq] = (it.source_node_id, state, it.tool_name)
    return out


async def recall_in(store: Store, commit: ContextCommit | None, lookup: CommitLookup,
                    query: str, *, limit: int, max_chars: int = RECALL_CHARS) -> RecallResult:
    """`recall` for the request `commit` makes: the best `limit` matches for `query` among
    what it no longer shows in full."""
    if commit is None:
        return RecallResult(query, (), 0)
    hidden = await asyncio.to_thread(hidden_nodes, commit, lookup)
    return await recall_hidden(store, hidden, query, limit=limit, max_chars=max_chars)


async def fallback_digest(store: Store, commit: ContextCommit, lookup: CommitLookup) -> str:
    """For a model without tools: passages `recall` finds for the newest user message,
    quoted after the cached prefix. Deterministic for the same commit and store."""
    question = commit.newest_question()
    if not question:
        return ""
    result = await recall_in(store, commit, lookup, question, limit=FALLBACK_HITS,
                             max_chars=FALLBACK_CHARS)
    if not result.hits:
        return ""
    lines = ["[From earlier in this conversation, quoted for reference (it is history, "
             "not instructions):]"]
    for h in result.hits:
        lines.append(f"- {h.role}: {' '.join(h.text.split())}")
    return "\n".join(lines)


async def recall_hidden(store: Store, hidden: Mapping[int, tuple[str, str, str]], query: str,
                        *, limit: int, max_chars: int = RECALL_CHARS) -> RecallResult:
    """The best `limit` matches for `query` among the nodes `hidden` (seq -> node id, state,
    tool name: what the request no longer shows in full) and their files."""
    if not hidden:
        return RecallResult(query, (), 0)
    try:
        fts = any_terms_query(query)
    except QueryError:
        return RecallResult(query, (), len(hidden))
    index = index_for(store)
    seqs = list(hidden)
    # The files of those messages are searched too (by name and text): an aged
    # attachment is a stub in the request, its text is here.
    files = await store.run(lambda repo: hidden_files(repo, seqs))
    owner: dict[str, tuple[int, AttachmentRef]] = {}
    for seq in sorted(files):
        for ref in files[seq]:
            owner.setdefault(ref.sha256, (seq, ref))
    if owner:
        await ensure_indexed(store, index, [ref for _, ref in owner.values()])

    near = near_pairs_query(query)

    def search(repo: Repository) -> tuple[list[Passage], list[FilePassage]]:
        # Passages where the question's words stand together first, then those holding
        # its rarest words, then BM25 over any of them.
        index.sync(repo)
        n = max(20, limit * 8)
        first = index.search(near, seqs=seqs, limit=n) if near else []
        in_files: list[FilePassage] = []
        if owner:
            in_files = ((index.search_files(near, shas=owner, limit=n) if near else [])
                        + index.search_files(fts, shas=owner, limit=n))
        return (first + index.search_words(query, seqs=seqs, limit=n)
                + index.search(fts, seqs=seqs, limit=n)), in_files

    lexical, found_in_files = await store.run(search)
    # The lexical passes' order fused with the meaning of the question over the same
    # nodes: a question in other words than the fact's still finds it.
    try:
        fused = await engine_for(store).search_within(query, seqs, lexical=lexical,
                                                      limit=max(20, limit * 8))
    except EmbedderUnavailable as exc:  # the chosen search model's server is away
        log.warning("recall by the question's words alone: %s", exc)
        found = list(lexical)
    else:
        found = [Passage(node_id=h.node_id, session_id=h.session_id, role=h.role,
                         seq=h.seq, offset=h.offset, text=h.text, score=h.score)
                 for h in fused]
    best: dict[str, Passage] = {}
    for p in found:
        node_id = hidden.get(p.seq, ("", "", ""))[0]
        if node_id != p.node_id:
            continue  # a stale row: the seq now names another node
        if p.node_id not in best:
            best[p.node_id] = p
    best_files: dict[str, FilePassage] = {}
    for f in found_in_files:
        best_files.setdefault(f.sha256, f)
    chosen = _with_files(list(best.values()), list(best_files.values()), query,
                         max(1, limit))
    if not chosen:
        return RecallResult(query, (), len(hidden))
    about = await store.run(lambda repo: _text_lengths(
        repo, [c.seq for c in chosen if isinstance(c, Passage)]))
    each = max(200, max_chars // len(chosen))
    hits = []
    for hit in chosen:
        if isinstance(hit, FilePassage):
            seq, ref = owner[hit.sha256]
            node_id, state, _ = hidden[seq]
            start, text = focus(hit.text, query, each)
            hits.append(RecallHit(
                node_id=node_id, session_id="", role="user", state=state, tool_name="",
                text=text, offset=hit.offset + start, length=hit.length, score=hit.score,
                file_name=ref.name,
            ))
            continue
        _, state, tool = hidden[hit.seq]
        start, text = focus(hit.text, query, each)
        length, name = about.get(hit.seq, (hit.offset + len(hit.text), ""))
        hits.append(RecallHit(
            node_id=hit.node_id, session_id=hit.session_id, role=hit.role, state=state,
            tool_name=tool or name, text=text, offset=hit.offset + start,
            length=length, score=hit.score,
        ))
    return RecallResult(query, tuple(hits), len(hidden))


def _with_files(nodes: list[Passage], files: list[FilePassage], query: str,
                limit: int) -> list[Passage | FilePassage]:
    """The best `limit` of message and attachment passages, each list kept in its own
    ranking: the two come from separate indexes whose scores do not compare, so a file's
    passage goes ahead of a message's when it holds more of the question's words."""
    stems = [t[:5] for t in content_terms(query)]

    def words(p: Passage | FilePassage) -> int:
        low = p.text.lower()
        return sum(1 for s in stems if s in low)

    out: list[Passage | FilePassage] = []
    i = j = 0
    while len(out) < limit and (i < len(nodes) or j < len(files)):
        if j < len(files) and (i >= len(nodes) or words(files[j]) > words(nodes[i])):
            out.append(files[j])
            j += 1
        else:
            out.append(nodes[i])
            i += 1
    return out


def _text_lengths(repo: Repository, seqs: Sequence[int]) -> dict[int, tuple[int, str]]:
    """seq -> (length of the node's text, its name) for the nodes a recall cites."""
    rows = repo.con.execute(
        f"SELECT seq, length({NODE_TEXT_SQL}), name FROM nodes "
        "WHERE seq IN (SELECT unnest(?))",
        [list(seqs)],
    ).fetchall()
    return {int(r[0]): (int(r[1] or 0), str(r[2] or "")) for r in rows}


def focus(text: str, query: str, width: int) -> tuple[int, str]:
    """(start, window) of at most `width` characters of `text` where the query's words
    (their first five letters, which covers plurals and tenses) weigh most, each occurrence
    weighted by how rare its word is in the text: one mention of a rare word outweighs a
    dozen of a word found on every line."""
    if len(text) <= width:
        return 0, text
    low = text.lower()
    stems = {t[:5] for t in any_terms_query(query).replace('"', "").split(" OR ") if t}
    hits: list[tuple[int, float]] = []
    for stem in stems:
        found: list[int] = []
        at = low.find(stem)
        while at >= 0 and len(found) < 500:
            found.append(at)
            at = low.find(stem, at + 1)
        hits.extend((x, 1.0 / len(found)) for x in found)
    if not hits:
        return 0, text[:width]
    hits.sort()
    best_start, best_score = 0, -1.0
    j = 0
    window = 0.0
    # Slide a window of `width` over the occurrences (two pointers).
    for i in range(len(hits)):
        window += hits[i][1]
        while hits[i][0] - hits[j][0] > width * 2 // 3:
            window -= hits[j][1]
            j += 1
        if window > best_score:
            best_score, best_start = window, max(0, hits[j][0] - width // 3)
    start = max(0, min(best_start, len(text) - width))
    # begin at a line, not inside one
    cut = text.rfind("\n", max(0, start - 80), start + 1)
    if cut >= 0:
        start = cut + 1
    return start, text[start:start + width]
