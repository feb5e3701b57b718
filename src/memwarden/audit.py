"""Append-only, hash-chained audit log (A1, A2).

Each row's ``hash`` is HMAC(key, prev_hash || seq, ts, event, scope, session, memory, actor, details). Because the
link is keyed, someone who edits the database without the key cannot recompute the chain; ``verify`` detects an
edited field, a deleted row (a gap in ``seq`` or a broken link) and reordered rows. The head of the chain (last
seq and hash) is anchored in ``meta`` under its own keyed MAC, so deleting the newest rows is detected too.
Tombstones carry id and hash, never content; only rejected candidates (never stored anywhere else) are kept in
full (G6). Which sessions a memory reached (A2) is read from the chained rows themselves.

Reads rely only on audit evidence they verified (I5, T6): :class:`ChainCursor` walks the chain once per process
(on its first read, then only the rows appended since) and remembers where it is broken; :meth:`ChainCursor.vouch`
accepts a lifecycle row only if its own MAC verifies and no unaccepted break of the chain lies after it (a break
means rows were deleted, edited or forged there, so a newer event of any record may be missing). A break is
accepted by a later, verified ``restore_accepted`` event (``memwarden audit accept-restore``). The head of the
chain is also anchored outside the database (``anchor.py``), so a truncated tail or an older file is caught too.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from memwarden.events import Event
from memwarden.records import now_ms
from memwarden.signing import Signer
from memwarden.store.base import AUDIT_COLUMNS, AuditRow, Engine, Reads, Writes

GENESIS = "0" * 64
READ_EVENTS = ("read", "injected")
RESTORE_ACCEPTED = "restore_accepted"  # an operator accepted a restore or a broken chain (anchor.py, CLI)
LIVE_EVENTS = frozenset({"added", "updated", "held", "promoted", "merged"})
LIFECYCLE_EVENTS = (*sorted(LIVE_EVENTS), "evicted", "expired", "removed")
ROW_COLS = ", ".join(AUDIT_COLUMNS)  # the order of an audit row (store/base.py)


def append(tx: Writes, signer: Signer, event: str, *, actor: str, tenant: str | None = None,
           user: str | None = None, agent: str | None = None, session_id: str | None = None,
           memory_id: str | None = None, details: dict[str, Any] | None = None) -> Event:
    """Append one event inside the caller's write transaction and return it (publish after commit)."""
    last_seq, prev = tx.audit_head()
    seq = last_seq + 1
    ts = now_ms()
    det = details or {}
    # ASCII-escaped: a rejected candidate may hold lone surrogates, which SQLite text cannot store
    det_json = json.dumps(det, ensure_ascii=True, sort_keys=True, separators=(",", ":"))
    h = signer.audit_link(prev, (seq, ts, event, tenant, user, agent, session_id, memory_id, actor, det_json))
    tx.append_audit((seq, ts, event, tenant, user, agent, session_id, memory_id, actor, det_json, prev, h),
                    _head(signer, seq, h))
    return Event(event=event, ts=ts, seq=seq, memory_id=memory_id, session_id=session_id, tenant=tenant,
                 user=user, agent=agent, actor=actor, details=det)


def row_mac_ok(signer: Signer, row: Sequence[object]) -> bool:
    """Whether an audit row (``ROW_COLS`` order) carries the MAC memwarden computed for it: not edited, not forged."""
    return signer.audit_link(str(row[10]), row[:10]) == row[11]


def head(db: Reads) -> tuple[int, str]:
    """The newest (seq, hash) of the chain as ``db`` sees it; (0, GENESIS) when it is empty."""
    return db.audit_head()


class ChainCursor:
    """What this process has verified of the audit chain (I5): walked through ``seq`` (whose hash is ``hash``),
    the rows at which the chain breaks, the newest verified ``restore_accepted`` event, and — built from verified
    rows only — each live record's newest lifecycle event (``live``: id → (seq, version, content hash)). Reads
    compare a record with ``live``, not with whatever the audit table says now, so an audit row edited, deleted or
    forged after the walk cannot vouch for a rolled-back record either.

    Only committed rows are walked (``advance`` is given a read snapshot); lifecycle rows newer than the cursor
    (a write transaction still open) are checked by :meth:`vouch` on the caller's connection, link by link."""

    def __init__(self, signer: Signer) -> None:
        self._signer = signer
        self._lock = threading.Lock()
        self.seq = 0
        self.hash = GENESIS
        self.breaks: list[int] = []  # seq of each row whose link or MAC failed
        self.accepted_through = 0  # breaks before this restore_accepted row are accepted
        self.diverged: str | None = None  # rows this process verified were later changed or removed
        self.live: dict[str, tuple[int, int, str]] = {}
        self.forged: dict[str, int] = {}  # id named by a row whose MAC fails → that row's seq

    def advance(self, db: Reads) -> None:
        """Walk the rows appended since the last call (all of them the first time). A snapshot older than what
        was walked already (another thread's read began earlier) has nothing new and is left alone."""
        with self._lock:
            if self.diverged is not None or head(db)[0] < self.seq:
                return
            if self.seq and db.audit_hash(self.seq) != self.hash:
                self.diverged = (f"audit row {self.seq} was changed or removed after this process verified it"
                                 " (the audit log was edited or the database replaced while in use)")
                return
            for row in db.audit_rows(after=self.seq):
                seq = int(row[0])
                mac_ok = row_mac_ok(self._signer, row)
                if not (mac_ok and seq == self.seq + 1 and row[10] == self.hash):
                    self.breaks.append(seq)
                if mac_ok:
                    self._note(row)
                elif row[7] is not None:
                    self.forged[str(row[7])] = seq
                self.seq, self.hash = seq, str(row[11])

    def _note(self, row: Sequence[object]) -> None:
        event, mid = row[2], row[7]
        if event == RESTORE_ACCEPTED:
            self.accepted_through = int(row[0])  # type: ignore[call-overload]
        elif mid is None or event not in LIFECYCLE_EVENTS:
            return
        elif event in LIVE_EVENTS:
            det = details_of(row)
            self.live[str(mid)] = (int(row[0]), det.get("version"), det.get("content_hash"))  # type: ignore
        else:
            self.live.pop(str(mid), None)

    @property
    def last_break(self) -> int:
        """The newest break no later ``restore_accepted`` event covers (0: none)."""
        return max((b for b in self.breaks if b > self.accepted_through), default=0)

    def vouch(self, db: Reads, records: Sequence[tuple[str, int, str]]) -> dict[str, str]:
        """For each (id, version, content hash) read through ``db`` that the verified evidence does not vouch
        for, why not. Call :meth:`advance` first.

        The evidence is the ``live`` entry the walk built. Two cases read the table instead, each row checked by
        its own MAC: a lifecycle row newer than the cursor (``db`` is a write transaction still open: its rows
        must also link into the verified chain), and a snapshot older than the cursor (another thread committed
        since it began: its record is judged by the newest event that snapshot holds)."""
        if self.diverged is not None:
            return {mid: self.diverged for mid, _v, _h in records}
        snapshot = head(db)[0]
        # The table's newest events are only asked for when the cursor is not exactly at the snapshot's head: an
        # event read through ``db`` is at most ``snapshot``, so with ``cursor == snapshot`` neither case below
        # can apply (the usual search: ``advance`` just walked this very snapshot). Read at most once, lazily.
        latest: dict[str, AuditRow] | None = None
        last_break = self.last_break
        out: dict[str, str] = {}
        for mid, version, chash in records:
            cursor = self.seq
            if cursor != snapshot and latest is None:
                latest = db.audit_latest([m for m, _v, _h in records], LIFECYCLE_EVENTS)
            ev = None if cursor == snapshot or latest is None else latest.get(mid)
            entry = self.live.get(mid)
            seq: int
            if ev is not None and (int(ev[0]) > cursor  # type: ignore[call-overload]
                                   or (snapshot < cursor and (entry is None or entry[0] > snapshot))):
                if not row_mac_ok(self._signer, ev):
                    out[mid] = "its newest audit event fails verification (a forged or edited audit row)"
                    continue
                seq = int(ev[0])  # type: ignore[call-overload]
                if seq > self.seq and not self._segment_ok(db, seq):
                    out[mid] = "its newest audit event is not linked into the verified audit chain"
                    continue
                if ev[2] not in LIVE_EVENTS:
                    out[mid] = "its newest audit event says it was deleted (a deleted row put back)"
                    continue
                det = details_of(ev)
                want = (det.get("version"), det.get("content_hash"))
            elif entry is not None:
                seq, want = entry[0], (entry[1], entry[2])
            else:
                out[mid] = ("no verified audit event says it is live (a deleted row put back, or a row memwarden "
                            "never wrote)")
                continue
            if self.forged.get(mid, -1) > seq:
                out[mid] = ("an audit row about it fails verification (forged or edited), newer than its last "
                            "verified event")
            elif seq < last_break:
                out[mid] = (f"the audit chain is broken at row {last_break}, after its newest audit event (rows "
                            "deleted, edited or forged there): run `memwarden audit verify`")
            elif want != (version, chash):
                out[mid] = "record does not match its audit history (rolled back to an older version)"
        return out

    def _segment_ok(self, db: Reads, upto: int) -> bool:
        """Rows after the cursor up to ``upto`` (e.g. of the caller's open transaction) link and verify."""
        prev_seq, prev = self.seq, self.hash
        for row in db.audit_rows(after=prev_seq, upto=upto):
            if not (row_mac_ok(self._signer, row) and int(row[0]) == prev_seq + 1 and row[10] == prev):
                return False
            prev_seq, prev = int(row[0]), str(row[11])
        return prev_seq == upto


def newest_lifecycle_event(db: Reads, memory_id: str) -> str | None:
    """The name of the newest lifecycle event the audit log holds for ``memory_id`` (None: it names none); a
    restore refuses an id this store once had (D3: a deleted memory does not come back through an import)."""
    row = db.audit_latest([memory_id], LIFECYCLE_EVENTS).get(memory_id)
    return None if row is None else str(row[2])


def details_of(row: Sequence[object]) -> dict[str, Any]:
    """The parsed details of an audit row in ``ROW_COLS`` order (``{}`` when malformed)."""
    return _parse_details(row[9])


def _parse_details(text: object) -> dict[str, Any]:
    try:
        parsed = json.loads(str(text))
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _head(signer: Signer, seq: int, h: str) -> str:
    return f"{seq}:{h}:{signer.mac(f'audit head {seq}:{h}'.encode())}"


@dataclass(frozen=True, slots=True)
class ChainProblem:
    seq: int
    problem: str

    def __str__(self) -> str:
        return f"audit row {self.seq}: {self.problem}"


def verify(backend: Engine, signer: Signer) -> list[ChainProblem]:
    """Walk the whole chain; an empty list means intact."""
    problems: list[ChainProblem] = []
    expected_seq, prev = 1, GENESIS
    with backend.read() as db:
        for seq, ts, event, tenant, user, agent, sid, mid, actor, det, prev_hash, h in db.audit_rows():
            if seq != expected_seq:
                problems.append(ChainProblem(seq, f"sequence gap: expected {expected_seq} (rows deleted)"))
            if prev_hash != prev:
                problems.append(ChainProblem(seq, "link to the previous row is broken (row deleted or reordered)"))
            want = signer.audit_link(prev_hash, (seq, ts, event, tenant, user, agent, sid, mid, actor, det))
            if want != h:
                problems.append(ChainProblem(seq, "row content does not match its hash (edited)"))
            expected_seq, prev = seq + 1, h
        anchor = db.meta(["audit_head"]).get("audit_head")
    last_seq = expected_seq - 1
    if anchor is None:
        if last_seq:
            problems.append(ChainProblem(last_seq, "the chain's head anchor is missing"))
    elif anchor != _head(signer, last_seq, prev):
        claimed = anchor.split(":", 1)[0]
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


def event_names(backend: Engine) -> list[str]:
    """Every event name memwarden writes or the log holds, sorted (to tell a mistyped ``--event`` from a quiet
    one)."""
    with backend.read() as db:
        seen = db.audit_event_names()
    return sorted(KNOWN_EVENTS | seen)


def names_memory(backend: Engine, memory_id: str, *, tenant: str | None = None, user: str | None = None) -> bool:
    """Whether any audit event names ``memory_id`` (a record that ever existed, or an attempt on one) — among
    the events of ``tenant`` (and ``user``) when given, so an operator is not told about another tenant's ids."""
    with backend.read() as db:
        return bool(db.audit_log(memory_id=memory_id, tenant=tenant, user=user, limit=1))


_LOG_KEYS = ("seq", "ts", "event", "tenant", "user", "agent", "session_id", "memory_id", "actor", "details")


def log_rows(backend: Engine, *, limit: int = 50, event: str | None = None, memory_id: str | None = None,
             tenant: str | None = None, user: str | None = None) -> list[dict[str, Any]]:
    with backend.read() as db:
        rows = db.audit_log(events=None if event is None else (event,), memory_id=memory_id, tenant=tenant,
                            user=user, limit=limit)
    out = [dict(zip(_LOG_KEYS, r[:10], strict=True)) for r in rows]
    for r in out:
        r["details"] = json.loads(r["details"])
    return out[::-1]


def reads_of(backend: Engine, memory_id: str) -> Iterator[dict[str, Any]]:
    """A2: every session a memory reached (through the prompt block or a tool result), oldest first."""
    with backend.read() as db:
        rows = db.audit_reads(READ_EVENTS, memory_id=memory_id)
    for seq, ts, ev, tenant, user, agent, sid, _mid, actor, *_rest in rows:
        yield {"session_id": sid, "event": ev, "ts": ts, "seq": seq, "actor": actor, "tenant": tenant,
               "user": user, "agent": agent or None}


def reads(backend: Engine, *, tenant: str, user: str | None = None, memory_id: str | None = None,
          after: int = 0, limit: int = 100) -> list[dict[str, Any]]:
    """A2 for one tenant (and user): the read events after audit row ``after``, oldest first, at most ``limit`` —
    which session (and actor) read which memories, through a prompt block (``injected``) or a tool result
    (``read``); with ``memory_id`` only the reads that reached it. Tenant and user are query parameters (S3)."""
    with backend.read() as db:
        rows = db.audit_reads(READ_EVENTS, memory_id=memory_id, tenant=tenant, user=user, after=after, limit=limit)
    out = []
    for seq, ts, ev, ten, usr, agent, sid, _mid, actor, det, *_rest in rows:
        ids = _parse_details(det).get("ids")
        out.append({"seq": seq, "ts": ts, "event": ev, "session_id": sid, "actor": actor, "tenant": ten,
                    "user": usr, "agent": agent or None,
                    "ids": [i for i in ids if isinstance(i, str)] if isinstance(ids, list) else []})
    return out


def tail(backend: Engine, signer: Signer, after: int, *, tenant: str, user: str | None = None,
         events: Sequence[str] = (), limit: int = 500) -> tuple[list[dict[str, Any]], int]:
    """The events of ``tenant`` (and ``user``; only ``events`` if given) committed after audit row ``after``,
    oldest first, at most ``limit``, each as :func:`log_rows` returns it plus ``verified`` (the row's own MAC
    holds: not edited, not forged); and the audit row the scan reached, to pass as ``after`` next time (past
    other tenants' rows, so they are not scanned again). Tenant, user and event are query parameters (S3)."""
    with backend.read() as db:
        top = head(db)[0]
        rows = db.audit_log(events=tuple(events) or None, tenant=tenant, user=user, after=after, upto=top,
                            limit=limit, newest_first=False)
    reached = int(rows[-1][0]) if len(rows) >= limit else top
    out = []
    for r in rows:
        item = dict(zip(_LOG_KEYS, r[:10], strict=True))
        item["details"] = details_of(r)
        item["verified"] = row_mac_ok(signer, r)
        out.append(item)
    return out, reached


def newest_seq(backend: Engine) -> int:
    """The newest audit row's seq (0: none): where a live stream that replays nothing starts."""
    with backend.read() as db:
        return head(db)[0]
