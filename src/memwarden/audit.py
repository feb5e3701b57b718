"""Append-only, hash-chained audit log (A1, A2).

Each row's ``hash`` is HMAC(key, prev_hash || seq, ts, event, scope, session, memory, actor, details). Because the
link is keyed, someone who edits the database without the key cannot recompute the chain; ``verify`` detects an
edited field, a deleted row (a gap in ``seq`` or a broken link) and reordered rows. The head of the chain (last
seq and hash) is anchored in ``meta`` under its own keyed MAC, so deleting the newest rows is detected too.
Tombstones carry id and hash, never content; only rejected candidates (never stored anywhere else) are kept in
full (G6). Which sessions a memory reached (A2) is read from the chained rows themselves.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from memwarden.events import Event
from memwarden.records import now_ms
from memwarden.signing import Signer
from memwarden.store.sqlite import SqliteBackend, Tx

GENESIS = "0" * 64
READ_EVENTS = ("read", "injected")


def append(tx: Tx, signer: Signer, event: str, *, actor: str, tenant: str | None = None,
           user: str | None = None, agent: str | None = None, session_id: str | None = None,
           memory_id: str | None = None, details: dict[str, Any] | None = None) -> Event:
    """Append one event inside the caller's write transaction and return it (publish after commit)."""
    last = tx.execute("SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1").fetchone()
    seq, prev = (last[0] + 1, last[1]) if last else (1, GENESIS)
    ts = now_ms()
    det = details or {}
    # ASCII-escaped: a rejected candidate may hold lone surrogates, which SQLite text cannot store
    det_json = json.dumps(det, ensure_ascii=True, sort_keys=True, separators=(",", ":"))
    h = signer.audit_link(prev, (seq, ts, event, tenant, user, agent, session_id, memory_id, actor, det_json))
    tx.execute(
        "INSERT INTO audit (seq, ts, event, tenant, user_id, agent, session_id, memory_id, actor, details,"
        " prev_hash, hash) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
        (seq, ts, event, tenant, user, agent, session_id, memory_id, actor, det_json, prev, h),
    )
    tx.execute("INSERT OR REPLACE INTO meta VALUES ('audit_head', ?)", (_head(signer, seq, h),))
    return Event(event=event, ts=ts, seq=seq, memory_id=memory_id, session_id=session_id, tenant=tenant,
                 user=user, agent=agent, actor=actor, details=det)


def _head(signer: Signer, seq: int, h: str) -> str:
    return f"{seq}:{h}:{signer.mac(f'audit head {seq}:{h}'.encode())}"


@dataclass(frozen=True, slots=True)
class ChainProblem:
    seq: int
    problem: str

    def __str__(self) -> str:
        return f"audit row {self.seq}: {self.problem}"


def verify(backend: SqliteBackend, signer: Signer) -> list[ChainProblem]:
    """Walk the whole chain; an empty list means intact."""
    problems: list[ChainProblem] = []
    expected_seq, prev = 1, GENESIS
    with backend.read() as conn:
        rows = conn.execute(
            "SELECT seq, ts, event, tenant, user_id, agent, session_id, memory_id, actor, details, prev_hash, hash"
            " FROM audit ORDER BY seq"
        )
        for seq, ts, event, tenant, user, agent, sid, mid, actor, det, prev_hash, h in rows:
            if seq != expected_seq:
                problems.append(ChainProblem(seq, f"sequence gap: expected {expected_seq} (rows deleted)"))
            if prev_hash != prev:
                problems.append(ChainProblem(seq, "link to the previous row is broken (row deleted or reordered)"))
            want = signer.audit_link(prev_hash, (seq, ts, event, tenant, user, agent, sid, mid, actor, det))
            if want != h:
                problems.append(ChainProblem(seq, "row content does not match its hash (edited)"))
            expected_seq, prev = seq + 1, h
        anchor = conn.execute("SELECT value FROM meta WHERE key = 'audit_head'").fetchone()
    last_seq = expected_seq - 1
    if anchor is None:
        if last_seq:
            problems.append(ChainProblem(last_seq, "the chain's head anchor is missing"))
    elif anchor[0] != _head(signer, last_seq, prev):
        claimed = str(anchor[0]).split(":", 1)[0]
        problems.append(ChainProblem(last_seq, f"the chain ends at row {last_seq} but its anchor says {claimed}"
                                               " (newest rows deleted, or the anchor edited)"))
    return problems


# The events memwarden writes (A1). ``event_names`` adds any other name found in the log, so an event added later
# is never refused as unknown once it occurs.
KNOWN_EVENTS = frozenset({
    "added", "updated", "held", "promoted", "merged", "evicted", "expired", "removed", "rejected", "injected",
    "read", "exported", "session_started", "session_ended", "integrity_failure", "promotion_refused",
    "delete_refused", "review_refused", "extraction_skipped", "embedder_failed", "rate_limited", "token_created",
    "token_revoked"})


def event_names(backend: SqliteBackend) -> list[str]:
    """Every event name memwarden writes or the log holds, sorted (to tell a mistyped ``--event`` from a quiet
    one)."""
    with backend.read() as conn:
        seen = {str(r[0]) for r in conn.execute("SELECT DISTINCT event FROM audit").fetchall()}
    return sorted(KNOWN_EVENTS | seen)


def names_memory(backend: SqliteBackend, memory_id: str) -> bool:
    """Whether any audit event names ``memory_id`` (a record that ever existed, or an attempt on one)."""
    with backend.read() as conn:
        return conn.execute("SELECT 1 FROM audit WHERE memory_id = ? LIMIT 1", (memory_id,)).fetchone() is not None


def log_rows(backend: SqliteBackend, *, limit: int = 50, event: str | None = None, memory_id: str | None = None,
             tenant: str | None = None, user: str | None = None) -> list[dict[str, Any]]:
    where, params = [], []
    for col, val in (("event", event), ("memory_id", memory_id), ("tenant", tenant), ("user_id", user)):
        if val is not None:
            where.append(f"{col} = ?")
            params.append(val)
    sql = ("SELECT seq, ts, event, tenant, user_id, agent, session_id, memory_id, actor, details FROM audit"
           + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY seq DESC LIMIT ?")
    with backend.read() as conn:
        rows = conn.execute(sql, (*params, limit)).fetchall()
    keys = ("seq", "ts", "event", "tenant", "user", "agent", "session_id", "memory_id", "actor", "details")
    out = [dict(zip(keys, r, strict=True)) for r in rows]
    for r in out:
        r["details"] = json.loads(r["details"])
    return out[::-1]


def reads_of(backend: SqliteBackend, memory_id: str) -> Iterator[dict[str, Any]]:
    """A2: every session a memory reached (through the prompt block or a tool result), oldest first."""
    rows = backend.query(
        "SELECT a.session_id, a.event, a.ts, a.seq, a.actor, a.tenant, a.user_id, a.agent"
        " FROM audit a, json_each(CASE WHEN json_valid(a.details) THEN a.details ELSE '{}' END, '$.ids') j"
        f" WHERE a.event IN ({', '.join(repr(e) for e in READ_EVENTS)}) AND j.value = ? ORDER BY a.seq",
        (memory_id,))
    for sid, ev, ts, seq, actor, tenant, user, agent in rows:
        yield {"session_id": sid, "event": ev, "ts": ts, "seq": seq, "actor": actor, "tenant": tenant,
               "user": user, "agent": agent or None}
