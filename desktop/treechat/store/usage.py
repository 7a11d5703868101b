"""The usage ledger: one row per provider request in the `usage` table, totals per model, and
the last measurement a session's occupancy is read from. Runs on the store's worker thread."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .repository import Repository

USAGE_COLUMNS = (
    "id, session_id, head, commit_id, model, phase, input_tokens, cache_read, cache_write, "
    "output_tokens, estimated_tokens, calibration, cost_usd, priced, basis, created_at"
)


@dataclass(frozen=True, slots=True)
class UsageRecord:
    """One provider request. `input_tokens` is the whole prompt, cached tokens included;
    `cache_read`/`cache_write` are parts of it. `priced` is False when no price was known
    (cost 0 then means "unknown", not "free")."""

    id: str
    session_id: str
    model: str
    created_at: float
    input_tokens: int = 0
    cache_read: int = 0
    cache_write: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    priced: bool = True
    estimated_tokens: int = 0
    calibration: float | None = None
    basis: str = "measured"
    phase: str = "chat"
    head: str | None = None
    commit_id: str | None = None


@dataclass(frozen=True, slots=True)
class LedgerRow:
    """Totals for one model: tokens, cache reads and writes, and cost."""

    model: str
    requests: int
    input_tokens: int
    cache_read: int
    cache_write: int
    output_tokens: int
    cost_usd: float
    unpriced_requests: int

    @property
    def cache_hit_rate(self) -> float:
        return self.cache_read / self.input_tokens if self.input_tokens else 0.0


def _record_from_row(row: Sequence[Any]) -> UsageRecord:
    return UsageRecord(
        id=row[0],
        session_id=row[1],
        head=row[2],
        commit_id=row[3],
        model=row[4],
        phase=row[5],
        input_tokens=int(row[6]),
        cache_read=int(row[7]),
        cache_write=int(row[8]),
        output_tokens=int(row[9]),
        estimated_tokens=int(row[10]),
        calibration=None if row[11] is None else float(row[11]),
        cost_usd=float(row[12]),
        priced=bool(row[13]),
        basis=row[14],
        created_at=float(row[15]),
    )


def record_usage(repo: Repository, record: UsageRecord) -> UsageRecord:
    """Append one request's row. Cache details are clamped to the prompt total and nothing is
    negative, so a provider's over-report cannot corrupt the totals."""
    total = max(record.input_tokens, 0)
    read = min(max(record.cache_read, 0), total)
    write = min(max(record.cache_write, 0), total - read)
    repo.con.execute(
        f"INSERT INTO usage ({USAGE_COLUMNS}) VALUES ({', '.join('?' * 16)})",
        [
            record.id,
            record.session_id,
            record.head,
            record.commit_id,
            record.model,
            record.phase,
            total,
            read,
            write,
            max(record.output_tokens, 0),
            max(record.estimated_tokens, 0),
            record.calibration,
            max(record.cost_usd, 0.0) if record.priced else 0.0,
            record.priced,
            record.basis,
            record.created_at,
        ],
    )
    return record


def ledger(repo: Repository, session_id: str | None = None) -> tuple[LedgerRow, ...]:
    """Per-model totals over every request (of one session, or all), costliest first."""
    where = "WHERE session_id = ?" if session_id is not None else ""
    params: list[Any] = [session_id] if session_id is not None else []
    rows = repo.con.execute(
        "SELECT model, count(*), sum(input_tokens), sum(cache_read), sum(cache_write), "
        "sum(output_tokens), sum(cost_usd), count(*) FILTER (WHERE NOT priced) "
        f"FROM usage {where} GROUP BY model ORDER BY sum(cost_usd) DESC, model",
        params,
    ).fetchall()
    return tuple(
        LedgerRow(
            model=r[0],
            requests=int(r[1]),
            input_tokens=int(r[2] or 0),
            cache_read=int(r[3] or 0),
            cache_write=int(r[4] or 0),
            output_tokens=int(r[5] or 0),
            cost_usd=float(r[6] or 0.0),
            unpriced_requests=int(r[7] or 0),
        )
        for r in rows
    )


def last_measurement(
    repo: Repository, session_id: str, *, head: str | None = None, model: str | None = None,
) -> UsageRecord | None:
    """The session's most recent measured request (of that head and that model, when given):
    what occupancy reports. Never a sum over a turn, and a request that reported no usage
    does not replace it. Another branch's or another model's request is not this one's."""
    where = ["session_id = ?", "basis = 'measured'", "input_tokens > 0"]
    params: list[Any] = [session_id]
    if head is not None:
        where.append("head = ?")
        params.append(head)
    if model is not None:
        where.append("model = ?")
        params.append(model)
    row = repo.con.execute(
        f"SELECT {USAGE_COLUMNS} FROM usage WHERE {' AND '.join(where)} "
        "ORDER BY created_at DESC, rowid DESC LIMIT 1",
        params,
    ).fetchone()
    return _record_from_row(row) if row else None


def session_usage(repo: Repository, session_id: str) -> tuple[UsageRecord, ...]:
    """Every request of a session in the order they were made."""
    rows = repo.con.execute(
        f"SELECT {USAGE_COLUMNS} FROM usage WHERE session_id = ? ORDER BY created_at, rowid",
        [session_id],
    ).fetchall()
    return tuple(_record_from_row(r) for r in rows)


# --- spend: per reply, per chat, by day / model / chat -----------------------------------


@dataclass(frozen=True, slots=True)
class SpendRow:
    """Totals for one group of requests (a day "YYYY-MM-DD", a model id or a session id)."""

    key: str
    requests: int
    input_tokens: int
    cache_read: int
    cache_write: int
    output_tokens: int
    cost_usd: float
    unpriced_requests: int
    first_at: float
    last_at: float
    label: str = ""  # what to show: the chat's title for a session, else the key
    # requests to models on this computer: free, and not among `unpriced_requests` (filled
    # when the caller says which models are local)
    free_requests: int = 0

    @property
    def priced(self) -> bool:
        """False when some request had no known price (its cost counts as 0)."""
        return self.unpriced_requests == 0


def usage_for_heads(repo: Repository, heads: Sequence[str]) -> dict[str, tuple[UsageRecord, ...]]:
    """The ledger rows measured at each of `heads` (a reply node: the request that wrote it),
    in the order they were made."""
    if not heads:
        return {}
    rows = repo.con.execute(
        f"SELECT {USAGE_COLUMNS} FROM usage WHERE list_contains(?, head) "
        "ORDER BY created_at, rowid",
        [list(heads)],
    ).fetchall()
    out: dict[str, list[UsageRecord]] = {}
    for row in rows:
        record = _record_from_row(row)
        if record.head is not None:
            out.setdefault(record.head, []).append(record)
    return {k: tuple(v) for k, v in out.items()}


def usage_by_id(repo: Repository, ids: Sequence[str]) -> tuple[UsageRecord, ...]:
    """The ledger rows with these ids (those that exist), in the order they were made."""
    if not ids:
        return ()
    rows = repo.con.execute(
        f"SELECT {USAGE_COLUMNS} FROM usage WHERE list_contains(?, id) "
        "ORDER BY created_at, rowid",
        [list(ids)],
    ).fetchall()
    return tuple(_record_from_row(r) for r in rows)


def usage_rows(
    repo: Repository, session_id: str | None = None, since: float | None = None
) -> tuple[UsageRecord, ...]:
    """Every request (of one session, and/or since a time), oldest first."""
    where: list[str] = []
    params: list[Any] = []
    if session_id is not None:
        where.append("session_id = ?")
        params.append(session_id)
    if since is not None:
        where.append("created_at >= ?")
        params.append(since)
    clause = f"WHERE {' AND '.join(where)}" if where else ""
    rows = repo.con.execute(
        f"SELECT {USAGE_COLUMNS} FROM usage {clause} ORDER BY created_at, rowid", params
    ).fetchall()
    return tuple(_record_from_row(r) for r in rows)


def spend_by(repo: Repository, by: str) -> tuple[SpendRow, ...]:
    """Totals grouped by "model" or "session", costliest first. Grouping by day needs the
    local calendar, so it is done by the caller over `usage_rows`."""
    if by not in ("model", "session"):
        raise ValueError(f"cannot group usage by {by!r}")
    column = "u.model" if by == "model" else "u.session_id"
    label = "u.model" if by == "model" else "coalesce(any_value(s.title), u.session_id)"
    rows = repo.con.execute(
        f"SELECT {column}, count(*), sum(u.input_tokens), sum(u.cache_read), "
        "sum(u.cache_write), sum(u.output_tokens), sum(u.cost_usd), "
        "count(*) FILTER (WHERE NOT u.priced), min(u.created_at), max(u.created_at), "
        f"{label} FROM usage u LEFT JOIN sessions s ON s.id = u.session_id "
        f"GROUP BY {column} ORDER BY sum(u.cost_usd) DESC, {column}"
    ).fetchall()
    return tuple(
        SpendRow(
            key=str(r[0]),
            requests=int(r[1]),
            input_tokens=int(r[2] or 0),
            cache_read=int(r[3] or 0),
            cache_write=int(r[4] or 0),
            output_tokens=int(r[5] or 0),
            cost_usd=float(r[6] or 0.0),
            unpriced_requests=int(r[7] or 0),
            first_at=float(r[8] or 0.0),
            last_at=float(r[9] or 0.0),
            label=str(r[10]),
        )
        for r in rows
    )
