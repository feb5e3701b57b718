"""The memory service: the one write path and the verified, scoped read path.

Every interface (library session, CLI, tool dispatcher, import, later REST/MCP/consolidation) persists content
only through :meth:`MemoryService.write`, which runs **gate → taint → sign → store → audit** in that order and
in one transaction. Reads build their scope filter into SQL (S3), verify each row's signature before serving it
(I1, T6), and log what they served (A2).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memwarden import audit
from memwarden.errors import (
    CapacityError,
    HeldForReview,
    IntegrityError,
    InvalidInput,
    KeyError_,
    NotFound,
    VersionConflict,
)
from memwarden.events import Event, EventBus
from memwarden.gate import REJECT, REVIEW, Candidate, Gate, Verdict
from memwarden.ids import new_id
from memwarden.keys import fingerprint, load_key
from memwarden.policy import Policy
from memwarden.records import (
    Kind,
    Provenance,
    Record,
    SourceType,
    Status,
    Trust,
    content_hash,
    now_ms,
    sensitivity_level,
)
from memwarden.scope import Scope
from memwarden.signing import Signer
from memwarden.store.sqlite import SELECT_COLS, SqliteBackend, Tx, open_backend, row_to_record, scope_clause

if TYPE_CHECKING:
    from memwarden.session import Session

DAY_MS = 86_400_000
MAX_REJECTED_KEPT = 16 * 1024  # characters of a rejected candidate kept in the audit log
_SOURCE_TYPES = frozenset(s.value for s in SourceType)


@dataclass(frozen=True, slots=True)
class Context:
    """Who is acting: set by the application/session, never by the model (S2, R2)."""

    scope: Scope
    session_id: str
    source_type: str = SourceType.MODEL
    actor: str = "agent"
    sources: tuple[str, ...] = ()
    trust: str = Trust.TRUSTED
    clearance: int = 1
    read_shared: bool = False


@dataclass(frozen=True, slots=True)
class WriteResult:
    status: str  # accepted | review | rejected
    id: str | None
    version: int | None
    verdict: Verdict
    message: str
    record: Record | None = field(default=None, repr=False)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"status": self.status, "id": self.id, "version": self.version,
                               "rules": self.verdict.rules, "message": self.message}
        if self.status == "rejected":
            out["hits"] = [h.to_dict() for h in self.verdict.hits]
        return out


class MemoryService:
    """What :func:`memwarden.open` returns: the store, its gate, audit log, event bus and provider registry."""

    def __init__(self, backend: SqliteBackend, key: bytes, policy: Policy | None = None,
                 gate: Gate | None = None) -> None:
        self.backend = backend
        self.policy = policy or Policy()
        self.gate = gate or Gate(self.policy)
        self.signer = Signer(key)
        self.events = EventBus()
        from memwarden.providers import ProviderRegistry

        self.providers = ProviderRegistry()
        self._check_key(key)

    # --- lifecycle ---------------------------------------------------------------------------------------------

    def _check_key(self, key: bytes) -> None:
        fp = fingerprint(key)
        with self.backend.write() as tx:
            row = tx.execute("SELECT value FROM meta WHERE key = 'key_fingerprint'").fetchone()
            if row is None:
                tx.execute("INSERT INTO meta VALUES ('key_fingerprint', ?)", (fp,))
            elif row[0] != fp:
                raise KeyError_(
                    f"{self.backend.path} was signed with a different key (fingerprint {row[0][:12]}…); "
                    "set $MEMWARDEN_KEY or $MEMWARDEN_KEY_FILE to the key it was created with"
                )

    @property
    def path(self) -> Path:
        return self.backend.path

    def close(self) -> None:
        self.backend.close()

    def __enter__(self) -> MemoryService:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def session(self, scope: Scope, workspace: Sequence[str | os.PathLike[str]] = (), *,
                clearance: str | int | None = None, read_shared: bool | None = None,
                source_type: str = SourceType.MODEL) -> Session:
        """Start a session: takes the prompt snapshot now (P1). Use as a context manager or call ``close()``."""
        from memwarden.session import Session

        return Session(self, scope, workspace=workspace,
                       clearance=sensitivity_level(clearance if clearance is not None
                                                   else self.policy.default_clearance),
                       read_shared=self.policy.read_shared if read_shared is None else read_shared,
                       source_type=source_type)

    def register_provider(self, provider: Any) -> None:
        """P5: at most one external memory provider; a second is refused here, at registration."""
        self.providers.register(provider)

    def _commit_events(self, events: Iterable[Event]) -> None:
        self.events.publish(events)

    # --- the one write path ------------------------------------------------------------------------------------

    def write(self, ctx: Context, content: Any, *, kind: Any = Kind.FACT, confidence: Any = 1.0,
              sensitivity: str | int | None = None, ttl_days: int | None = None, due_at: int | None = None,
              metadata: Any = None, derived_from: Sequence[str] = (), update_id: str | None = None,
              expected_version: int | None = None) -> WriteResult:
        """gate → taint → sign → store → audit, in one transaction. Saves a new record, or (with ``update_id``
        and ``expected_version``) a new version of an existing one."""
        if ctx.source_type not in _SOURCE_TYPES:
            raise InvalidInput(f"unknown source type {ctx.source_type!r}")
        sens = sensitivity_level(sensitivity if sensitivity is not None else self.policy.default_sensitivity)
        if update_id is not None and (isinstance(expected_version, bool)
                                      or not isinstance(expected_version, int)):
            raise InvalidInput("an update needs expected_version: the version you last read (I2)")
        if due_at is not None and (isinstance(due_at, bool) or not isinstance(due_at, int)):
            raise InvalidInput("due_at must be a unix time in milliseconds")
        if kind == Kind.REMINDER and due_at is None and update_id is None:
            raise InvalidInput("a reminder needs a due date (due_at)")
        if isinstance(kind, str) and kind in Kind.__members__.values():
            days = self.policy.retention_days(kind, ttl_days)
        else:
            days = self.policy.retention_days(Kind.FACT, ttl_days)

        # 1. gate (G1, G6)
        verdict = self.gate.check(Candidate(content, kind, ctx.source_type, metadata, confidence))
        if verdict.verdict == REJECT:
            return self._reject(ctx, content, verdict, update_id)

        # 2. taint (T2): the record inherits the session's trust; untrusted or gate-"review" content is held.
        trust = ctx.trust
        status = Status.REVIEW if (verdict.verdict == REVIEW or trust == Trust.UNTRUSTED) else Status.ACTIVE
        now = now_ms()
        prov = Provenance(tenant=ctx.scope.tenant, user=ctx.scope.user, agent=ctx.scope.agent_key,
                          session_id=ctx.session_id, source_type=ctx.source_type, sources=tuple(ctx.sources),
                          trust=trust, approval="none")
        size = len(content.encode("utf-8"))
        with self.backend.write() as tx:
            if update_id is None:
                derived = self._check_derived(tx, ctx, derived_from)
                self._check_capacity(tx, ctx, kind, size)
                record = Record(
                    id=new_id(), version=1, kind=kind, content=content, content_hash=content_hash(content),
                    metadata=metadata or {}, confidence=float(confidence), sensitivity=sens, created_at=now,
                    updated_at=now, expires_at=now + days * DAY_MS, due_at=due_at, status=status,
                    derived_from=derived, provenance=prov,
                )
            else:
                old = self._current_for_update(tx, ctx, update_id, expected_version)  # type: ignore[arg-type]
                if old.kind != kind:
                    raise InvalidInput(f"memory {update_id} is a {old.kind}; an update cannot change its kind")
                self._check_capacity(tx, ctx, kind, size - old.size_bytes, adding=False)
                least = Trust.UNTRUSTED if Trust.UNTRUSTED in (trust, old.provenance.trust) else Trust.TRUSTED
                record = replace(
                    old, version=old.version + 1, content=content, content_hash=content_hash(content),
                    metadata=metadata if metadata is not None else old.metadata, confidence=float(confidence),
                    sensitivity=sens if sensitivity is not None else old.sensitivity, updated_at=now,
                    expires_at=now + days * DAY_MS, due_at=due_at if due_at is not None else old.due_at,
                    status=Status.REVIEW if least == Trust.UNTRUSTED or status == Status.REVIEW
                    else Status.ACTIVE,
                    provenance=replace(prov, trust=least),
                )
            # 3. sign (I1)
            record = replace(record, signature=self.signer.sign_record(record))
            # 4. store
            if update_id is None:
                self.backend.insert(tx, record)
            else:
                self.backend.replace(tx, record, now)
            # 5. audit (A1): id + hash, never content
            name = ("held" if record.status == Status.REVIEW else "updated" if update_id else "added")
            ev = self._audit(tx, ctx, name, record.id,
                             {"version": record.version, "kind": record.kind, "content_hash": record.content_hash,
                              "bytes": record.size_bytes, "trust": record.provenance.trust,
                              "source_type": ctx.source_type, "rules": verdict.rules})
        self._commit_events([ev])
        if record.status == Status.REVIEW:
            why = verdict.reason() if verdict.verdict == REVIEW else "this session ingested untrusted content"
            return WriteResult("review", record.id, record.version, verdict,
                               f"held for operator review ({why}); it will not be recalled until approved",
                               record)
        return WriteResult("accepted", record.id, record.version, verdict, "saved", record)

    def _reject(self, ctx: Context, content: Any, verdict: Verdict, memory_id: str | None) -> WriteResult:
        shown = content if isinstance(content, str) else repr(content)
        with self.backend.write() as tx:
            ev = self._audit(tx, ctx, "rejected", memory_id, {
                "rules": verdict.rules, "kind": verdict.kind, "source_type": ctx.source_type,
                "candidate": shown[:MAX_REJECTED_KEPT], "truncated": len(shown) > MAX_REJECTED_KEPT,
                "hits": [h.to_dict() for h in verdict.hits]})
        self._commit_events([ev])
        return WriteResult("rejected", None, None, verdict, f"not saved: {verdict.reason()}")

    def _audit(self, tx: Tx, ctx: Context, event: str, memory_id: str | None, details: dict[str, Any],
               read_ids: Iterable[str] = ()) -> Event:
        s = ctx.scope
        return audit.append(tx, self.signer, event, actor=ctx.actor, tenant=s.tenant, user=s.user,
                            agent=s.agent_key, session_id=ctx.session_id, memory_id=memory_id, details=details,
                            read_ids=read_ids)

    def _check_derived(self, tx: Tx, ctx: Context, ids: Sequence[str]) -> tuple[str, ...]:
        if not ids:
            return ()
        where, params = scope_clause(ctx.scope, ctx.read_shared)
        found = {r[0] for r in tx.execute(
            f"SELECT m.id FROM memories m WHERE {where} AND m.id IN ({','.join('?' * len(ids))})",
            (*params, *ids))}
        missing = [i for i in ids if i not in found]
        if missing:
            raise InvalidInput(f"derived_from names records not in this scope: {', '.join(missing)}")
        return tuple(dict.fromkeys(ids))

    def _check_capacity(self, tx: Tx, ctx: Context, kind: str, extra_bytes: int, adding: bool = True) -> None:
        lim = self.policy.limits_for(kind)
        key = (ctx.scope.tenant, ctx.scope.user, ctx.scope.agent_key, kind)
        usage_sql = "SELECT entries, bytes FROM scope_usage WHERE tenant=? AND user_id=? AND agent=? AND kind=?"
        for attempt in range(2):
            row = tx.execute(usage_sql, key).fetchone() or (0, 0)
            entries, used = row[0] + (1 if adding else 0), row[1] + extra_bytes
            if entries <= lim.max_entries and used <= lim.max_bytes:
                return
            if attempt == 0 and not self._purge_expired(tx, ctx, key):
                break  # nothing expired to make room
        limit = (f"at most {lim.max_entries} entries" if entries > lim.max_entries
                 else f"at most {lim.max_bytes} bytes")
        rows = tx.execute(
            "SELECT id, size_bytes, content, status FROM memories"
            " WHERE tenant=? AND user_id=? AND agent=? AND kind=? ORDER BY updated_at, id", key).fetchall()
        entries_out = []
        for mid, size, content, status in rows:
            flat = " ".join(str(content).split())
            preview = ("(held for operator review)" if status == Status.REVIEW
                       else flat if len(flat) <= 80 else flat[:79] + "…")
            entries_out.append({"id": mid, "bytes": size, "preview": preview})
        raise CapacityError(kind, limit, entries_out)

    def _purge_expired(self, tx: Tx, ctx: Context, key: tuple[str, str, str, str]) -> int:
        now = now_ms()
        ids = [r[0] for r in tx.execute(
            "SELECT id FROM memories WHERE tenant=? AND user_id=? AND agent=? AND kind=? AND expires_at <= ?",
            (*key, now))]
        for mid in ids:
            self._delete_tx(tx, ctx, mid, "expired", [])
        return len(ids)

    def _current_for_update(self, tx: Tx, ctx: Context, memory_id: str, expected: int) -> Record:
        where, params = scope_clause(ctx.scope, read_shared=False)
        row = tx.execute(f"SELECT {SELECT_COLS} FROM memories m WHERE m.id = ? AND {where} AND m.expires_at > ?",
                         (memory_id, *params, now_ms())).fetchone()
        if row is None:
            raise NotFound(f"no memory {memory_id} in this scope")
        rec = row_to_record(row)
        if not self.signer.verify_record(rec):
            raise IntegrityError(f"memory {memory_id} failed signature verification; it cannot be updated")
        if rec.status == Status.REVIEW and not ctx.actor.startswith("operator"):
            raise HeldForReview(f"memory {memory_id} is held for operator review and cannot be updated")
        if rec.version != expected:
            raise VersionConflict(memory_id, expected, rec.version)
        return rec

    # --- deletion (D3, S4) -------------------------------------------------------------------------------------

    def _delete_tx(self, tx: Tx, ctx: Context, memory_id: str, event: str, out: list[Event],
                   reason: str = "") -> list[str]:
        """Delete a record and everything derived from it, leaving tombstones in the audit log."""
        row = tx.execute("SELECT content_hash, tenant, user_id, agent FROM memories WHERE id = ?",
                         (memory_id,)).fetchone()
        derived = self.backend.derived_from(tx, memory_id)
        self.backend.delete(tx, memory_id)
        tx.execute("DELETE FROM memory_links WHERE source_id = ?", (memory_id,))
        details: dict[str, Any] = {"content_hash": row[0] if row else None, "tombstone": True}
        if reason:
            details["reason"] = reason
        if row:
            owner = Scope(row[1], row[2], row[3] or None)
            ev = audit.append(tx, self.signer, event, actor=ctx.actor, tenant=owner.tenant, user=owner.user,
                              agent=owner.agent_key, session_id=ctx.session_id, memory_id=memory_id,
                              details=details)
            out.append(ev)
        removed = [memory_id]
        for d in derived:
            removed += self._delete_tx(tx, ctx, d, "removed", out, reason=f"derived from {memory_id}")
        return removed

    def remove(self, ctx: Context, memory_id: str, *, include_held: bool = False) -> list[str]:
        """Delete one record in the caller's own scope (S4); returns every id removed (derived ones too)."""
        where, params = scope_clause(ctx.scope, read_shared=False)
        events: list[Event] = []
        with self.backend.write() as tx:
            row = tx.execute(f"SELECT m.status FROM memories m WHERE m.id = ? AND {where}",
                             (memory_id, *params)).fetchone()
            if row is None:
                raise NotFound(f"no memory {memory_id} in this scope")
            if row[0] == Status.REVIEW and not include_held:
                raise HeldForReview(f"memory {memory_id} is held for operator review; only an operator can "
                                    "reject it")
            removed = self._delete_tx(tx, ctx, memory_id, "removed", events)
        self._commit_events(events)
        return removed

    def clear(self, ctx: Context, kind: str | None = None, *, include_held: bool = False) -> list[str]:
        """Delete every record of exactly the caller's scope (optionally one kind). Never another scope (S4)."""
        if kind is not None and kind not in Kind.__members__.values():
            raise InvalidInput(f"unknown kind {kind!r}")
        where, params = scope_clause(ctx.scope, read_shared=False)
        sql = f"SELECT m.id FROM memories m WHERE {where}"
        if kind:
            sql += " AND m.kind = ?"
            params.append(kind)
        if not include_held:
            sql += " AND m.status = 'active'"
        events: list[Event] = []
        removed: list[str] = []
        with self.backend.write() as tx:
            for (mid,) in tx.execute(sql, params).fetchall():
                if mid not in removed:
                    removed += self._delete_tx(tx, ctx, mid, "removed", events, reason="clear")
        self._commit_events(events)
        return removed

    def gc(self, actor: str = "operator:gc") -> list[str]:
        """D2: purge expired records everywhere (they were already invisible to every read)."""
        events: list[Event] = []
        removed: list[str] = []
        with self.backend.write() as tx:
            rows = tx.execute("SELECT id, tenant, user_id, agent FROM memories WHERE expires_at <= ?",
                              (now_ms(),)).fetchall()
            for mid, tenant, user, agent in rows:
                if mid in removed:
                    continue
                ctx = Context(Scope(tenant, user, agent or None), session_id="gc", actor=actor,
                              source_type=SourceType.OPERATOR)
                removed += self._delete_tx(tx, ctx, mid, "expired", events)
        self._commit_events(events)
        return removed

    # --- verified, scoped reads --------------------------------------------------------------------------------

    def _visible(self, ctx: Context) -> tuple[str, list[object]]:
        """Scope + status + expiry + clearance, all inside the SQL ``WHERE`` (S3, D2)."""
        where, params = scope_clause(ctx.scope, ctx.read_shared)
        return (f"{where} AND m.status = 'active' AND m.expires_at > ? AND m.sensitivity <= ?",
                [*params, now_ms(), ctx.clearance])

    def _verified(self, ctx: Context, rows: Iterable[Sequence[object]]) -> list[Record]:
        """Drop (and report) every row whose signature fails: it is never served (I1, T6)."""
        good, bad = [], []
        for row in rows:
            rec = row_to_record(row)
            (good if self.signer.verify_record(rec) else bad).append(rec)
        if bad:
            self._integrity_events(ctx, bad)
        return good

    def _integrity_events(self, ctx: Context, bad: Sequence[Record]) -> None:
        with self.backend.write() as tx:
            evs = [self._audit(tx, ctx, "integrity_failure", r.id,
                               {"problem": "signature mismatch: row edited outside memwarden",
                                "stored_hash": r.content_hash}) for r in bad]
        self._commit_events(evs)

    def log_reads(self, ctx: Context, event: str, records: Sequence[Record], details: dict[str, Any]) -> Event:
        """A2: record which memories reached this session, with how."""
        ids = [r.id for r in records]
        with self.backend.write() as tx:
            ev = self._audit(tx, ctx, event, None, {**details, "ids": ids}, read_ids=ids)
        self._commit_events([ev])
        return ev

    def get(self, ctx: Context, memory_id: str) -> Record:
        """One record in scope, served only if it verifies; held records are refused (T2)."""
        where, params = scope_clause(ctx.scope, ctx.read_shared)
        rows = self.backend.query(
            f"SELECT {SELECT_COLS} FROM memories m WHERE m.id = ? AND {where} AND m.expires_at > ?"
            " AND m.sensitivity <= ?", (memory_id, *params, now_ms(), ctx.clearance))
        if not rows:
            raise NotFound(f"no memory {memory_id} in this scope")
        rec = row_to_record(rows[0])
        if not self.signer.verify_record(rec):
            self._integrity_events(ctx, [rec])
            raise IntegrityError(f"memory {memory_id} failed signature verification and is not served; "
                                 "an operator should run `memwarden doctor`")
        if rec.status == Status.REVIEW:
            raise HeldForReview(f"memory {memory_id} is held for review; ask an operator to review it "
                                "(`memwarden review show {memory_id}`)")
        return rec

    def list(self, ctx: Context, kind: str | None = None, limit: int = 100) -> list[Record]:
        where, params = self._visible(ctx)
        if kind is not None:
            where += " AND m.kind = ?"
            params.append(kind)
        with self.backend.read() as conn:
            rows = conn.execute(f"SELECT {SELECT_COLS} FROM memories m WHERE {where}"
                                " ORDER BY m.updated_at DESC, m.id DESC LIMIT ?", (*params, limit)).fetchall()
        return self._verified(ctx, rows)

    def count(self, ctx: Context, kinds: Sequence[str]) -> int:
        where, params = self._visible(ctx)
        with self.backend.read() as conn:
            return int(conn.execute(
                f"SELECT count(*) FROM memories m WHERE {where} AND m.kind IN ({','.join('?' * len(kinds))})",
                (*params, *kinds)).fetchone()[0])

    def block_records(self, ctx: Context) -> tuple[list[Record], int]:
        """P3: the newest entries of the block kinds in priority order, and how many such entries exist."""
        kinds = self.policy.block_kinds
        where, params = self._visible(ctx)
        order = " ".join(f"WHEN '{k}' THEN {i}" for i, k in enumerate(kinds))
        want = self.policy.block_entries
        with self.backend.read() as conn:
            total = int(conn.execute(
                f"SELECT count(*) FROM memories m WHERE {where} AND m.kind IN ({','.join('?' * len(kinds))})",
                (*params, *kinds)).fetchone()[0])
            sql = (f"SELECT {SELECT_COLS} FROM memories m WHERE {where}"
                   f" AND m.kind IN ({','.join('?' * len(kinds))})"
                   f" ORDER BY CASE m.kind {order} END, m.updated_at DESC, m.id DESC LIMIT ? OFFSET ?")
            good: list[Record] = []
            bad: list[Record] = []
            offset = 0
            while len(good) < want:  # a row that fails verification is skipped; keep filling the block
                rows = conn.execute(sql, (*params, *kinds, want - len(good), offset)).fetchall()
                if not rows:
                    break
                offset += len(rows)
                for row in rows:
                    rec = row_to_record(row)
                    (good if self.signer.verify_record(rec) else bad).append(rec)
        if bad:
            self._integrity_events(ctx, bad)
        return good, total - len(bad)

    def due_reminders(self, ctx: Context, now: int | None = None) -> list[Record]:
        """P4: reminders due from 1.5 days back to 3 days forward, soonest first."""
        now = now_ms() if now is None else now
        lo = now - int(self.policy.reminder_window_back_hours * 3_600_000)
        hi = now + int(self.policy.reminder_window_forward_hours * 3_600_000)
        where, params = self._visible(ctx)
        with self.backend.read() as conn:
            rows = conn.execute(
                f"SELECT {SELECT_COLS} FROM memories m WHERE {where} AND m.kind = 'reminder'"
                " AND m.due_at BETWEEN ? AND ? ORDER BY m.due_at, m.id", (*params, lo, hi)).fetchall()
        return self._verified(ctx, rows)

    def search(self, ctx: Context, query: str, k: int = 5, kind: str | None = None) -> list[Record]:
        """Lexical (FTS5/BM25) search inside the caller's scope; filters are part of the query (S3, Q1)."""
        if not isinstance(query, str):
            raise InvalidInput("query must be text")
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 100:
            raise InvalidInput("k must be a whole number from 1 to 100")
        match = fts_query(query)
        if not match:
            return []
        where, params = self._visible(ctx)
        if kind is not None:
            where += " AND m.kind = ?"
            params.append(kind)
        with self.backend.read() as conn:
            rows = conn.execute(
                f"SELECT {SELECT_COLS} FROM memories_fts f JOIN memories m ON m.rowid = f.rowid"
                f" WHERE memories_fts MATCH ? AND {where} ORDER BY bm25(memories_fts), m.id LIMIT ?",
                (match, *params, k)).fetchall()
        return self._verified(ctx, rows)

    # --- operator views ----------------------------------------------------------------------------------------

    def beliefs(self, tenant: str, user: str) -> list[Record]:
        """A4: everything held about a user, every agent and status, each with source, trust and approver."""
        scope = Scope(tenant, user)
        with self.backend.read() as conn:
            rows = conn.execute(
                f"SELECT {SELECT_COLS} FROM memories m WHERE m.tenant = ? AND m.user_id = ? AND m.expires_at > ?"
                " ORDER BY m.agent, m.kind, m.updated_at DESC, m.id", (scope.tenant, scope.user, now_ms()),
            ).fetchall()
        return [row_to_record(r) for r in rows]

    def verify_record(self, rec: Record) -> bool:
        return self.signer.verify_record(rec)

    def operator_get(self, memory_id: str) -> Record:
        rows = self.backend.query(f"SELECT {SELECT_COLS} FROM memories m WHERE m.id = ?", (memory_id,))
        if not rows:
            raise NotFound(f"no memory {memory_id}")
        return row_to_record(rows[0])

    def history(self, memory_id: str) -> list[dict[str, Any]]:
        rows = self.backend.query(
            "SELECT version, superseded_at, content, session_id, source_type FROM memory_history WHERE id = ?"
            " ORDER BY version", (memory_id,))
        return [{"version": v, "superseded_at": s, "content": c, "session_id": sid, "source_type": st}
                for v, s, c, sid, st in rows]


def fts_query(text: str) -> str:
    """Turn free text into a safe FTS5 query: every word quoted, joined with OR (no operator injection)."""
    words = []
    for raw in text.split():
        w = "".join(ch for ch in raw if ch.isalnum() or ch in "_-.'").strip("-.'")
        if w:
            words.append('"' + w.replace('"', '""') + '"')
    return " OR ".join(dict.fromkeys(words[:32]))


def open_store(url: str | os.PathLike[str] | None = None, *, key: bytes | str | None = None,
               policy: Policy | None = None, gate: Gate | None = None) -> MemoryService:
    """``memwarden.open``: the embedded SQLite default (``$MEMWARDEN_URL`` or the XDG data dir)."""
    backend = open_backend(url)
    try:
        return MemoryService(backend, load_key(key), policy, gate)
    except BaseException:
        backend.close()
        raise
