"""The memory service: the one write path and the verified, scoped read path.

Every interface (library session, CLI, tool dispatcher, import, later REST/MCP/consolidation) persists content
only through :meth:`MemoryService.write`, which runs **gate → taint → sign → store → audit** in that order and
in one transaction. Reads build their scope filter into SQL (S3), verify each row's signature before serving it
(I1, T6), and log what they served (A2).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from memwarden import audit, repeats, upgrade
from memwarden.anchor import CREATED_EVENT, AnchorFile, AnchorKeeper, anchor_dir
from memwarden.errors import (
    CapacityError,
    Forbidden,
    HeldForReview,
    IntegrityError,
    InvalidInput,
    KeyError_,
    MemwardenError,
    NotFound,
    RateLimited,
    RollbackDetected,
    UnknownSession,
    VersionConflict,
)
from memwarden.events import Event, EventBus
from memwarden.gate import REJECT, REVIEW, Candidate, Gate, Verdict
from memwarden.ids import new_id
from memwarden.keys import fingerprint, load_key
from memwarden.policy import MAX_RETENTION_DAYS, Policy
from memwarden.records import (
    Kind,
    Provenance,
    Record,
    SourceType,
    Status,
    Trust,
    content_hash,
    iso,
    now_ms,
    sensitivity_level,
)
from memwarden.scope import Scope
from memwarden.settings import Settings
from memwarden.signing import Signer
from memwarden.store import file_of, open_backend
from memwarden.store.base import ACTIVE, ITEM_KEY, ORDER_KEYS, Engine, Order, Reads, RecordRow, View
from memwarden.store.base import Writes as Tx
from memwarden.store.rows import COLUMNS, UPDATED_AT, decode_row, decode_row_why, row_to_record
from memwarden.timevalues import HOUR_MS, NEVER_EXPIRES, check_due
from memwarden.verified import VerifiedRows, row_key

if TYPE_CHECKING:
    from memwarden.session import Session

DAY_MS = 86_400_000
T = TypeVar("T")
UNSET: Any = object()  # "not given": a save defaults it, an update keeps the current value
MAX_REJECTED_HITS = 20  # rule hits of a rejected candidate kept in the audit log (the rule ids are all kept)
MAX_EVICTIONS = 16  # extracted records one extracted write may evict
MAX_REPEATS = 8  # ids of repeated untrusted memories kept in a record's sources and its audit event (T7)
EXTRACTOR_SOURCE = "extractor:"  # prefix of the source an extractor's writes carry (T4)
_SOURCE_TYPES = frozenset(s.value for s in SourceType)
RESTORE_HINT = ("If this copy was put back on purpose, an operator accepts it with `memwarden audit accept-restore "
                "--reason \"…\"` (audited); otherwise put the newest copy of the database back")
_BULK_ARGS = frozenset({"kind", "confidence", "sensitivity", "ttl_days", "due_at", "metadata", "derived_from",
                        "restore", "hold", "ttl_minutes"})


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
    taint: tuple[str, ...] = ()  # why the session is untrusted (T1), for the audit log
    # ids of untrusted memories recalled into the session whose text this write repeats or contains (T7), set by
    # the session from its ledger: the write is untrusted
    repeats: tuple[str, ...] = ()


def _is_operator(ctx: Context) -> bool:
    return ctx.actor.startswith("operator:")


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


@dataclass(frozen=True, slots=True)
class _Spec:
    """The parameters of one ``write`` that ``_store`` needs, validated."""

    days: int | None  # None: kept until deleted (R3, ttl_days="keep" where the policy allows it)
    sens: int
    confidence: Any
    sensitivity: str | int | None
    ttl_days: int | str | None
    due_at: int | None
    metadata: Any
    derived_from: tuple[str, ...]
    update_id: str | None
    expected_version: int | None
    approval: str | None
    replaces: str | None
    note: str | None
    evict_lowest: bool
    derived_versions: Mapping[str, int] | None = None
    restore: Record | None = None
    hold: str | None = None
    ttl_minutes: int | None = None  # a retention shorter than the kind's, in minutes (key-value integrations)

    @property
    def new_expiry(self) -> bool:
        """Does this write set the expiry (an update without either keeps the record's)?"""
        return self.ttl_days is not None or self.ttl_minutes is not None

    def expires_at(self, now: int) -> int:
        """A new expiry from ``now``: ``ttl_minutes`` or ``days`` later, or never (``NEVER_EXPIRES``) for a kept
        record (R3)."""
        if self.ttl_minutes is not None:
            return now + self.ttl_minutes * 60_000
        return NEVER_EXPIRES if self.days is None else now + self.days * DAY_MS


@dataclass(frozen=True, slots=True)
class Checked:
    """One stored row as the service judges it; ``refused`` says why it would never be served (I1, T6)."""

    id: str
    record: Record | None  # None when the row is malformed (edited around the API)
    refused: str | None = None

    @property
    def ok(self) -> bool:
        return self.refused is None and self.record is not None


@dataclass(frozen=True, slots=True)
class Repeat:
    """An untrusted or held record that a new text repeats (T7): ``exact`` when their words are equal."""

    record: Record
    exact: bool


ALL_AGENTS: Any = ...  # operator reads: every agent of the user, and the user's shared scope


class MemoryService:
    """What :func:`memwarden.open` returns: the store, its gate, audit log, event bus and provider registry."""

    def __init__(self, backend: Engine, key: bytes, policy: Policy | None = None,
                 gate: Gate | None = None, *, anchor_directory: Path | None = None,
                 refuse_rollback: bool = True) -> None:
        self.backend = backend
        self.policy = policy or Policy()
        self.gate = gate or Gate(self.policy)
        self.signer = Signer(key)
        self._verified = VerifiedRows()  # rows whose exact values decoded and verified under this key
        self.settings = Settings(self.signer)  # signed settings (I4)
        self.events = EventBus()
        from memwarden.providers import ProviderRegistry

        self.providers = ProviderRegistry()
        self._sessions: set[str] = set()  # sessions started here and not ended (T6: others are refused)
        self._rejections: dict[str, int] = {}  # session id -> writes the gate rejected (resource bound)
        from memwarden.retrieval import Retrieval

        self.retrieval = Retrieval(self, key)  # hybrid search, embedder, derived indexes (issue 5)
        self.chain = audit.ChainCursor(self.signer)  # the audit evidence this process verified (I5)
        self.rollback: str | None = None  # set when the store is behind its anchor: nothing is served (I5)
        self._check_key(key)
        self._open_anchor(anchor_directory or anchor_dir(), refuse_rollback)
        if self.rollback is None:  # opened for inspection only: nothing is migrated or written on a store it refuses
            upgrade.run(self)  # a store of an earlier version: its unsigned settings and token rows signed, once
            self.retrieval.open()

    # --- lifecycle ---------------------------------------------------------------------------------------------

    def _check_key(self, key: bytes) -> None:
        fp = fingerprint(key)

        def work(tx: Tx) -> None:
            stored = tx.meta(["key_fingerprint"]).get("key_fingerprint")
            if stored is None:
                tx.put_meta("key_fingerprint", fp)
            elif stored != fp:
                raise KeyError_(
                    f"{self.backend.location} was signed with a different key (fingerprint {stored[:12]}…); "
                    "set $MEMWARDEN_KEY or $MEMWARDEN_KEY_FILE to the key it was created with"
                )

        self._transact(work)

    def _open_anchor(self, directory: Path, refuse: bool) -> None:
        """I5: compare the store with its anchor outside the database; create the anchor on first use (and for
        a brand-new database at an anchored path, in a new epoch); advance it after every commit from now on."""
        backend = self.backend
        self.anchor = AnchorKeeper(AnchorFile(directory, self.signer, backend.anchor_id), backend.durability,
                                   backend.sync)
        with backend.read() as conn:
            problem = self.anchor.check(conn, created=backend.created)
        if problem is None and self.anchor.needs_start(backend.created):
            previous = self.anchor.known
            details: dict[str, Any] = {"anchor": str(self.anchor.file.path), "new_database": backend.created}
            if previous is not None:
                details["previous_anchor"] = {"epoch": previous.epoch, "seq": previous.seq}
            self._transact(lambda tx: audit.append(tx, self.signer, CREATED_EVENT, actor="system:anchor",
                                                   session_id=new_id(), details=details))
            with backend.read() as conn:
                self.anchor.start(conn)
        if problem is not None:
            self.rollback = f"{backend.location}: {problem}"
            if refuse:
                raise RollbackDetected(f"{self.rollback}; nothing is served from it. {RESTORE_HINT}")
        backend.after_commit = self._after_commit

    def _after_commit(self, conn: Reads, base: tuple[int, str] | None, top: tuple[int, str] | None) -> None:
        """Once per committed write transaction (``Engine.after_commit``): the anchor check and advance (I5)."""
        try:
            self.anchor.after_commit(conn, base, top)
        except Exception as exc:  # never turns a committed write into a failure
            self.anchor.error = f"the anchor could not be checked: {exc}"
        if self.anchor.problem is not None and self.rollback is None:
            self.rollback = f"{self.backend.location}: {self.anchor.problem}"

    def accept_restore(self, actor: str, reason: str) -> dict[str, Any]:
        """I5: an operator accepts the store as it is now — restored from an older copy, moved, or with audit
        rows lost — after reading what ``doctor`` says. Appends a ``restore_accepted`` event naming the old
        anchor, the head and every chain problem (breaks before it stop refusing reads), and re-anchors the
        store in a new epoch. Nothing else changes: a record whose own evidence is forged stays refused."""
        if not actor.startswith("operator:"):
            raise Forbidden("accepting a restore is an operator action")
        if not isinstance(reason, str) or not reason.strip():
            raise InvalidInput("say why the restore is accepted (--reason): it is kept in the audit log")
        problems = [str(p) for p in audit.verify(self.backend, self.signer)]
        if self.rollback is None and not problems:
            return {"accepted": False, "message": "nothing to accept: the store matches its anchor and its audit "
                                                  "chain is intact"}
        known = self.anchor.known
        with self.backend.read() as conn:
            seq, h = audit.head(conn)
        details: dict[str, Any] = {
            "reason": reason.strip()[:1000], "refused": self.rollback, "chain_problems": problems[:100],
            "anchor_before": None if known is None else {"epoch": known.epoch, "seq": known.seq},
            "head_before": {"seq": seq, "hash": h}}
        ev = self._transact(lambda tx: audit.append(tx, self.signer, audit.RESTORE_ACCEPTED, actor=actor,
                                                    session_id=new_id(), details=details),
                            allow_rollback=True)
        with self.backend.read() as conn:
            anchored = self.anchor.reset(conn)
        self.rollback = None
        self.chain = audit.ChainCursor(self.signer)  # walk again: the accepted breaks no longer refuse reads
        self._commit_events([ev])
        return {"accepted": True, "seq": ev.seq, "anchor": {"epoch": anchored.epoch, "seq": anchored.seq},
                "problems": ([str(details["refused"])] if details["refused"] else []) + problems}

    @property
    def location(self) -> str:
        """The database, as messages name it (a path, or a URL without its password)."""
        return self.backend.location

    @property
    def path(self) -> Path:
        """The database file of an embedded store (``location`` as a path; a PostgreSQL store has no file)."""
        if getattr(self.backend, "path", None) is None:
            raise AttributeError(f"{self.backend.location} is a server database: it has no file")
        return Path(self.backend.location)

    def close(self) -> None:
        try:
            if self.backend.after_commit is not None:
                self.backend.after_commit = None
                self.backend.run_exclusive(self.anchor.close)
        finally:
            self.backend.close()

    def __enter__(self) -> MemoryService:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def session(self, scope: Scope, workspace: Sequence[str | os.PathLike[str]] | str | os.PathLike[str] = (), *,
                clearance: str | int | None = None, read_shared: bool | None = None,
                source_type: str = SourceType.MODEL) -> Session:
        """Start a session: takes the prompt snapshot now (P1). Use as a context manager or call ``close()``."""
        from memwarden.session import Session

        return Session(self, scope, workspace=workspace,
                       clearance=sensitivity_level(clearance if clearance is not None
                                                   else self.policy.default_clearance),
                       read_shared=self.policy.read_shared if read_shared is None else read_shared,
                       source_type=source_type)

    # --- sessions and refusals (T6, T3) ------------------------------------------------------------------------

    def open_session(self, session_id: str) -> None:
        """Mark a session live before its first read (the snapshot); :meth:`begin_session` records it."""
        self._sessions.add(session_id)

    def _require_session(self, ctx: Context) -> None:
        """T6: an agent's read or write must belong to a session this store started and that has not ended.
        Operators (``operator:…`` actors: CLI, import, gc) and the application's own jobs (``system:…``, e.g.
        consolidation) act outside sessions; the application sets the actor, never the model."""
        if ctx.actor.startswith(("operator:", "system:")) or ctx.session_id in self._sessions:
            return
        with self.backend.read() as db:
            ended = db.session_ended(ctx.session_id)
        if ended is None:
            raise UnknownSession(f"unknown session {ctx.session_id!r}: start one with store.session(scope)")
        if ended:
            raise UnknownSession(f"session {ctx.session_id} has ended; start a new session")
        self._sessions.add(ctx.session_id)

    def refuse(self, ctx: Context, event: str, memory_id: str | None, *, via: str, why: str) -> NoReturn:
        """Record a refused attempt as a security event (A1) and raise :class:`Forbidden` with ``why``."""
        self.record_event(ctx, event, {"via": via, "why": why}, memory_id)
        raise Forbidden(why)

    def transact_audited(self, work: Callable[[Tx], T], actor: str, event: str, *, scope: Scope,
                         details: dict[str, Any], memory_id: str | None = None) -> T:
        """An operator's write that is not a memory (tokens, …): ``work`` and its audit event, one transaction."""
        ctx = Context(scope, session_id=new_id(), source_type=SourceType.OPERATOR, actor=actor)
        events: list[Event] = []

        def run(tx: Tx) -> T:
            out = work(tx)
            events.append(self._audit(tx, ctx, event, memory_id, details))
            return out

        result = self._transact(run)
        self._commit_events(events)
        return result

    def register_provider(self, provider: Any) -> None:
        """P5: at most one external memory provider; a second is refused here, at registration."""
        self.providers.register(provider)

    def _commit_events(self, events: Iterable[Event]) -> None:
        self.events.publish(events)

    # --- the one write path ------------------------------------------------------------------------------------

    def write(self, ctx: Context, content: Any, *, kind: Any = Kind.FACT, confidence: Any = UNSET,
              sensitivity: str | int | None = None, ttl_days: int | str | None = None, due_at: int | None = None,
              metadata: Any = None, derived_from: Sequence[str] = (), update_id: str | None = None,
              expected_version: int | None = None, approval: str | None = None, replaces: str | None = None,
              note: str | None = None, evict_lowest: bool = False,
              derived_versions: Mapping[str, int] | None = None, restore: Record | None = None,
              hold: str | None = None, ttl_minutes: int | None = None) -> WriteResult:
        """gate → taint → sign → store → audit, in one transaction. Saves a new record, or (with ``update_id``
        and ``expected_version``) a new version of an existing one. ``derived_versions`` (consolidation, Q4):
        the version of each ``derived_from`` input as the caller read it; if any differs, nothing is stored.

        Operator-only arguments (refused for any other actor): ``approval`` promotes the held record
        ``update_id`` (T3: it becomes active, keeps its trust, and records the approver), and ``replaces``
        removes that record in the same transaction (an approved revision); ``note`` is kept in the audit log.
        ``evict_lowest`` (extracted facts, T4/D1): at capacity, evict the lowest-confidence extracted record of
        the kind instead of failing. ``restore`` (operator import of a signed export, T2/R2): the record as this
        store signed it, stored again with its id, version, times, status and provenance — after the gate, the
        taint checks, the capacity check, a fresh signature and an audit event, like any write (see
        :meth:`_restored`). ``hold`` (any caller: it only takes trust away): store the record untrusted and held
        for review with this reason, whatever the policy (no ``auto_approve_untrusted``). ``ttl_minutes``
        instead of ``ttl_days``: expire that many minutes from now (1 minute up to the kind's retention; key-value
        stores with TTLs in minutes)."""
        events: list[Event] = []
        work = self._write_work(ctx, content, events, kind=kind, confidence=confidence, sensitivity=sensitivity,
                                ttl_days=ttl_days, due_at=due_at, metadata=metadata, derived_from=derived_from,
                                update_id=update_id, expected_version=expected_version, approval=approval,
                                replaces=replaces, note=note, evict_lowest=evict_lowest,
                                derived_versions=derived_versions, restore=restore, hold=hold,
                                ttl_minutes=ttl_minutes)
        try:
            result = self._transact(work)
        except CapacityError as exc:
            self._capacity_read(ctx, exc)
            raise
        self._commit_events(events)
        self.retrieval.flush(ctx)  # embedder failures met while indexing: events after the commit
        return result

    def write_many(self, ctx: Context, items: Iterable[Mapping[str, Any]]) -> list[WriteResult | MemwardenError]:
        """Many saves in ONE durable transaction (bulk import, loaders): each item (``content`` plus any of
        ``write``'s keyword arguments) runs exactly :meth:`write`'s gate → taint → sign → store → audit, in a
        savepoint of its own, so an item that fails (bad input, capacity, …) is reported in its place and undoes
        only itself. Returns, in order, each item's :class:`WriteResult` or the error it raised."""
        events: list[Event] = []
        out: list[WriteResult | MemwardenError | None] = []
        works: list[tuple[int, Callable[[Tx], WriteResult], list[Event]]] = []
        for item in items:
            try:
                if not isinstance(item, Mapping) or "content" not in item:
                    raise InvalidInput("each item needs a 'content'")
                kw = {k: v for k, v in item.items() if k != "content"}
                if not set(kw) <= _BULK_ARGS:
                    raise InvalidInput(f"unknown write argument(s): {', '.join(sorted(set(kw) - _BULK_ARGS))}")
                mine: list[Event] = []
                works.append((len(out), self._write_work(ctx, item["content"], mine, **kw), mine))
                out.append(None)
            except MemwardenError as exc:
                out.append(exc)

        def work(tx: Tx) -> None:
            for i, w, mine in works:
                try:
                    with tx.savepoint("item"):
                        out[i] = w(tx)
                except MemwardenError as exc:
                    out[i] = exc
                    mine.clear()  # what it logged was rolled back with it

        if works:
            self._transact(work)
            for _i, _w, mine in works:
                events += mine
        self._commit_events(events)
        for r in out:
            if isinstance(r, CapacityError):
                self._capacity_read(ctx, r)
        self.retrieval.flush(ctx)
        return [r for r in out if r is not None]

    def _write_work(self, ctx: Context, content: Any, events: list[Event], *, kind: Any = Kind.FACT,
                    confidence: Any = UNSET, sensitivity: str | int | None = None, ttl_days: int | str | None = None,
                    due_at: int | None = None, metadata: Any = None, derived_from: Sequence[str] = (),
                    update_id: str | None = None, expected_version: int | None = None, approval: str | None = None,
                    replaces: str | None = None, note: str | None = None, evict_lowest: bool = False,
                    derived_versions: Mapping[str, int] | None = None,
                    restore: Record | None = None, hold: str | None = None,
                    ttl_minutes: int | None = None) -> Callable[[Tx], WriteResult]:
        """Validate one write and return its transaction work (gate → taint → sign → store → audit)."""
        if ctx.source_type not in _SOURCE_TYPES:
            raise InvalidInput(f"unknown source type {ctx.source_type!r}")
        self._require_session(ctx)
        sens = sensitivity_level(sensitivity if sensitivity is not None else self.policy.default_sensitivity)
        if sens > ctx.clearance:
            raise InvalidInput(f"sensitivity {sensitivity!r} is above this session's clearance; the session could "
                               "not read back what it wrote")
        if update_id is not None and (isinstance(expected_version, bool)
                                      or not isinstance(expected_version, int)):
            raise InvalidInput("an update needs expected_version: the version you last read (I2)")
        # P1/P3: a time value is checked here, at the one boundary every interface crosses (kind, range); an
        # import keeps an overdue reminder it is given, every other write refuses one no block would show.
        if due_at is not None:
            check_due(kind, due_at, now_ms(), past_window_ms=int(self.policy.reminder_window_back_hours * HOUR_MS),
                      allow_past=ctx.source_type == SourceType.IMPORT)
        if kind == Kind.REMINDER and due_at is None and update_id is None:
            raise InvalidInput("a reminder needs a due date (due_at)")
        if (approval is not None or replaces is not None) and not _is_operator(ctx):
            self.refuse(ctx, "promotion_refused", update_id, via="write",
                        why="approval is an operator action; an agent cannot approve memories (T3)")
        if approval is not None and (update_id is None or not approval.startswith("operator:")):
            raise InvalidInput("approval promotes a held record: pass update_id and approval='operator:<id>'")
        if restore is not None:
            self._check_restore(ctx, restore, content, kind, update_id, derived_from)
        # R3: days to keep it, or None (kept until deleted) where the kind's policy lets this source ask for it
        days = self.policy.retention(kind if isinstance(kind, str) and kind in Kind.__members__.values()
                                     else Kind.FACT, ttl_days, ctx.source_type)
        if ttl_minutes is not None:
            ttl_minutes = self._check_ttl_minutes(kind, ttl_minutes, ttl_days, days)
        spec = _Spec(days=days, sens=sens, confidence=confidence, sensitivity=sensitivity, ttl_days=ttl_days,
                     due_at=due_at, metadata=metadata, derived_from=tuple(derived_from), update_id=update_id,
                     expected_version=expected_version, approval=approval, replaces=replaces,
                     note=note if isinstance(note, str) and note.strip() else None, evict_lowest=evict_lowest,
                     derived_versions=derived_versions, restore=restore,
                     hold=hold if isinstance(hold, str) and hold.strip() else None, ttl_minutes=ttl_minutes)
        # An update without a confidence keeps the current one.
        # A restore is judged as the record was when it was saved: by the (verified) source it came from.
        source = (restore.provenance.source_type if restore is not None
                  and restore.provenance.source_type in _SOURCE_TYPES else ctx.source_type)
        candidate = Candidate(content, kind, source, metadata, 1.0 if confidence is UNSET else confidence)

        def work(tx: Tx) -> WriteResult:
            # 1. gate (G1, G6). Inside the transaction's work: writers queued for one group commit sleep while
            # the combiner runs their gates, instead of competing with it for the interpreter (store/sqlite/backend.py).
            limited = not ctx.actor.startswith(("operator:", "system:"))
            if limited:
                self._check_rejections(ctx)
            verdict = self.gate.check(candidate)
            if verdict.verdict == REJECT:
                if approval is not None:
                    raise InvalidInput(f"not promoted: the write gate rejects this content ({verdict.reason()});"
                                       " reject it instead")
                events.append(self._reject(tx, ctx, content, verdict, update_id))
                if limited:
                    self._count_rejection(tx, ctx, events)
                return WriteResult("rejected", None, None, verdict, f"not saved: {verdict.reason()}")
            if restore is not None:
                present = self._restore_present(tx, restore, verdict)
                if present is not None:
                    return present
            elif (update_id is None and not derived_from and verdict.verdict != REVIEW and ctx.trust == Trust.TRUSTED
                  and not _keyed(metadata)):  # a keyed item's key is its identity: never merged into another
                dup = self._near_duplicate(tx, ctx, candidate, verdict, sens, events)  # Q3 (text only)
                if dup is not None:
                    return dup
            record, why = self._store(tx, ctx, candidate, verdict, events, spec)
            if record.status == Status.REVIEW:
                return WriteResult("review", record.id, record.version, verdict,
                                   f"held for operator review ({why}); it will not be recalled until an operator "
                                   "approves it", record)
            return WriteResult("accepted", record.id, record.version, verdict,
                               "promoted" if approval else "saved", record)

        return work

    @staticmethod
    def _check_ttl_minutes(kind: Any, ttl_minutes: Any, ttl_days: Any, days: int | None) -> int:
        """R3: a retention in minutes is a whole number from 1 up to what the kind keeps (it may only shorten)."""
        if ttl_days is not None:
            raise InvalidInput("give ttl_days or ttl_minutes, not both")
        most = (MAX_RETENTION_DAYS if days is None else days) * 1440
        if isinstance(ttl_minutes, bool) or not isinstance(ttl_minutes, int) or not 1 <= ttl_minutes <= most:
            raise InvalidInput(f"ttl_minutes must be a whole number from 1 to {most} (the {kind} retention)")
        return ttl_minutes

    def _check_rejections(self, ctx: Context) -> None:
        """Resource bound: a session whose writes the gate rejected ``max_rejections_per_session`` times may not
        write again; the refusal itself is not logged again (``rate_limited`` was, once)."""
        limit = self.policy.max_rejections_per_session
        if self._rejections.get(ctx.session_id, 0) >= limit:
            raise RateLimited(f"this session had {limit} writes rejected by the write gate and may not write more "
                              "memories; start a new session (an operator can see the attempts in `memwarden "
                              "audit log --event rejected`)")

    def _count_rejection(self, tx: Tx, ctx: Context, events: list[Event]) -> None:
        n = self._rejections.get(ctx.session_id, 0) + 1
        self._rejections[ctx.session_id] = n
        if n == self.policy.max_rejections_per_session:
            events.append(self._audit(tx, ctx, "rate_limited", None, {
                "why": "writes rejected by the gate", "rejections": n}))

    def _near_duplicate(self, tx: Tx, ctx: Context, candidate: Candidate, verdict: Verdict, sens: int,
                        events: list[Event]) -> WriteResult | None:
        """Q3: a near-duplicate of a visible record of the same scope, kind, sensitivity and trust is not
        stored again; the write returns that record and the audit log records the merge."""
        from memwarden.consolidate import near_duplicate

        content = candidate.content if verdict.content is None else verdict.content
        if not isinstance(content, str) or not isinstance(candidate.kind, str):
            return None
        dup = near_duplicate(self, tx, ctx, candidate.kind, content, sens)
        if dup is None:
            return None
        events.append(self._audit(tx, ctx, "merged", dup.id, {
            "version": dup.version, "content_hash": dup.content_hash, "kind": dup.kind,
            "duplicate_hash": content_hash(content), "source_type": ctx.source_type, "rules": verdict.rules}))
        return WriteResult("accepted", dup.id, dup.version, verdict,
                           "near-duplicate of an existing memory: kept that one, nothing new stored", dup)

    def _store(self, tx: Tx, ctx: Context, candidate: Candidate, verdict: Verdict, events: list[Event],
               spec: _Spec) -> tuple[Record, str]:
        """taint → sign → store → audit for a candidate the gate let through (inside ``write``'s transaction).
        Returns the stored record and, when it is held, why."""
        kind = candidate.kind
        content = candidate.content if verdict.content is None else verdict.content  # G4: references stripped
        now = now_ms()
        # 2. taint (T2, T5): the record inherits the session's trust; untrusted or gate-"review" content is held.
        trust = ctx.trust
        why = verdict.reason() if verdict.verdict == REVIEW else ""
        if trust == Trust.UNTRUSTED:
            why = why or "this session ingested untrusted content: " + "; ".join(ctx.taint[:3] or ("untrusted",))
        self_written = kind == Kind.PROCEDURE and ctx.source_type == SourceType.MODEL
        if self_written:
            trust = Trust.UNTRUSTED  # T5: procedures are authored by people or imported, never self-written
            why = why or "procedures written by an agent are held until an operator reviews them (T5)"
        # T7: text that repeats an untrusted or held memory (in the store, or recalled into this session) is as
        # untrusted as that memory; a promotion keeps its text, a derived record inherits from its inputs (Q4) and
        # a restored one keeps the provenance its signed export proves
        echo = None
        if spec.approval is None and not spec.derived_from and spec.restore is None:
            echo = self._repeat_of(tx, ctx, content, spec.update_id)
        repeated = tuple(dict.fromkeys([*ctx.repeats, *([echo.record.id] if echo else [])]))
        if repeated and trust == Trust.TRUSTED:
            trust = Trust.UNTRUSTED
            if echo is not None and echo.record.status == Status.REVIEW:
                why = why or "the same text is already held for review in this scope"
            else:
                why = why or (f"it repeats the untrusted memory {repeated[0]}"
                              f"{' recalled in this session' if repeated[0] in ctx.repeats else ''} (T7)")
        if spec.hold is not None:  # the caller holds it for a person, whatever the policy (an import of held text)
            trust, why = Trust.UNTRUSTED, why or spec.hold
        auto = not self_written and spec.hold is None  # may auto_approve_untrusted make it active?
        size = len(content.encode("utf-8"))
        metadata = spec.metadata
        update_id = spec.update_id
        old: Record | None = None
        if update_id is not None:
            old = self._current_for_update(tx, ctx, update_id, spec.expected_version)  # type: ignore[arg-type]
            if old.kind != kind:
                raise InvalidInput(f"memory {update_id} is a {old.kind}; an update cannot change its kind")
            if spec.approval is not None and old.status != Status.REVIEW:
                raise InvalidInput(f"memory {update_id} is not held for review; there is nothing to promote")
            if trust == Trust.UNTRUSTED and old.status == Status.ACTIVE and spec.approval is None:
                # Q3/T2: untrusted content never overwrites what is in use: it becomes a held proposal and the
                # current version keeps being served until an operator decides.
                metadata = {**(metadata if isinstance(metadata, dict) else old.metadata),
                            "revises": old.id, "revises_version": old.version}
                why = f"{why}; proposed as a revision of {old.id}, which stays in use meanwhile"
                old, update_id = None, None
        if spec.restore is not None:
            record, why = self._restored(tx, ctx, verdict, events, spec.restore, content)
        elif old is None:
            derived, inherited = self._check_derived(tx, ctx, spec.derived_from, spec.derived_versions)
            if inherited == Trust.UNTRUSTED and trust == Trust.TRUSTED:
                trust = Trust.UNTRUSTED  # Q4: a derived record is as untrusted as its least trusted input
                why = why or "derived from untrusted memories"
            chash = content_hash(content)
            status, approval = self._status(trust, verdict, auto=auto)
            if echo is not None and repeated:
                status, approval = self._repeat_status(ctx, echo, repeated, status, approval,
                                                       plain=spec.update_id is None and auto
                                                       and verdict.verdict != REVIEW)
            self._check_capacity(tx, ctx, kind, size, events, held=status == Status.REVIEW,
                                 evict_lowest=spec.evict_lowest, confidence=candidate.confidence)
            record = Record(
                id=new_id(), version=1, kind=kind, content=content, content_hash=chash,
                metadata=metadata or {}, confidence=float(candidate.confidence), sensitivity=spec.sens,
                created_at=now, updated_at=now, expires_at=spec.expires_at(now), due_at=spec.due_at,
                status=status, derived_from=derived, provenance=self._provenance(ctx, trust, approval, repeated),
            )
        else:
            if spec.approval is not None:
                if content != old.content:
                    raise InvalidInput("a promotion cannot change the content; promote it as it is, or reject it")
                # T3: a person approved it. Provenance is unchanged but for the approver; trust stays as it was.
                status, prov = Status.ACTIVE, replace(old.provenance, approval=spec.approval)
                why = ""
            else:
                least = Trust.UNTRUSTED if Trust.UNTRUSTED in (trust, old.provenance.trust) else Trust.TRUSTED
                status, approval = self._status(least, verdict, auto=auto)
                if echo is not None and echo.record.status == Status.REVIEW:
                    status, approval = Status.REVIEW, "none"  # held stays held (T7)
                if least == Trust.UNTRUSTED and not why:
                    why = "it revises a memory that came from untrusted content"
                prov = self._provenance(ctx, least, approval, repeated)
            # D1: the new version takes room in the budget of its status (held records have their own); a
            # promotion moves the record from the held budget into the served one
            moved = status != old.status
            self._check_capacity(tx, ctx, kind, size if moved else size - old.size_bytes, events, adding=moved,
                                 held=status == Status.REVIEW)
            record = replace(
                old, version=old.version + 1, content=content, content_hash=content_hash(content),
                metadata=metadata if metadata is not None else old.metadata,
                confidence=old.confidence if spec.confidence is UNSET else float(spec.confidence),
                sensitivity=spec.sens if spec.sensitivity is not None else old.sensitivity, updated_at=now,
                expires_at=spec.expires_at(now) if spec.new_expiry else old.expires_at,
                due_at=spec.due_at if spec.due_at is not None else old.due_at, status=status, provenance=prov,
            )
        # 3. sign (I1). The record was built here and is not shared yet: set its signature in place rather than
        # copying every field again (dataclasses.replace is a measurable part of a save).
        object.__setattr__(record, "signature", self.signer.sign_record(record))
        # 4. store
        if old is None or spec.restore is not None:
            tx.insert(record)
        else:
            tx.replace(record, now)
        # 5. audit (A1): id + hash, never content
        name = ("promoted" if spec.approval else "held" if record.status == Status.REVIEW
                else "updated" if old is not None else "added")
        details: dict[str, Any] = {"version": record.version, "kind": record.kind,
                                   "content_hash": record.content_hash, "bytes": record.size_bytes,
                                   "trust": record.provenance.trust, "source_type": ctx.source_type,
                                   "rules": verdict.rules, "rules_version": verdict.rules_version}
        if record.status == Status.REVIEW:
            details["why"] = why
            details["taint"] = list(ctx.taint)
            details["sources"] = list(record.provenance.sources)
        if record.provenance.approval != "none":
            details["approval"] = record.provenance.approval
        if repeated:
            details["repeats"] = list(repeated[:MAX_REPEATS])
        if spec.note:
            details["note"] = spec.note[:1000]
        if spec.restore is not None:
            details["restored"] = True  # stored again from a signed export, with its own id, version and times
        events.append(self._audit(tx, ctx, name, record.id, details))
        if spec.replaces is not None:
            if not tx.records(View.of(ctx.scope, ids=(spec.replaces,))):  # S4: only a record of the same scope
                raise NotFound(f"no memory {spec.replaces} in {ctx.scope} to replace")
            self._delete_tx(tx, ctx, spec.replaces, "removed", events,
                            reason=f"replaced by the approved revision {record.id}")
        return record, why

    # --- restore (import of a signed export: T2, R2, D3) ----------------------------------------------------------

    def _check_restore(self, ctx: Context, restore: Record, content: Any, kind: Any, update_id: str | None,
                       derived_from: Sequence[str]) -> None:
        """What a restore must be before its transaction: an operator's, of exactly the record's content and kind,
        into exactly the record's scope, and not expired (D2)."""
        if not _is_operator(ctx):
            self.refuse(ctx, "restore_refused", restore.id, via="write",
                        why="restoring a record with its provenance is an operator action (T3)")
        if update_id is not None or derived_from:
            raise InvalidInput("a restore stores one record as it was: no update_id or derived_from")
        if content != restore.content or kind != restore.kind:
            raise InvalidInput(f"restore of {restore.id}: the content and kind must be the record's own")
        p, s = restore.provenance, ctx.scope
        if (p.tenant, p.user, p.agent) != (s.tenant, s.user, s.agent_key):
            raise InvalidInput(f"memory {restore.id} belongs to {Scope(p.tenant, p.user, p.agent or None)}; "
                               "a signed record is restored only into its own scope")
        if restore.expires_at <= now_ms():
            raise InvalidInput(f"memory {restore.id} expired on {iso(restore.expires_at)}; an expired memory is "
                               "not restored (D2)")

    def _restore_present(self, tx: Tx, restore: Record, verdict: Verdict) -> WriteResult | None:
        """An id already in the store: the same version of the same record is left as it is (re-importing an
        export is idempotent); anything else is refused. An id the audit log knows but the store does not hold
        was deleted (or its row removed around the API): never restored (D3)."""
        stored = tx.records(View.unscoped(ids=(restore.id,)))  # any scope: is the id taken?
        p = restore.provenance
        if stored:
            row = stored[0]
            version, chash, status = int(row[1]), str(row[7]), str(row[16])
            if (version, chash) == (restore.version, restore.content_hash) and (
                    str(row[2]), str(row[3]), str(row[4])) == (p.tenant, p.user, p.agent):
                return WriteResult("review" if status == Status.REVIEW else "accepted", restore.id, restore.version,
                                   verdict, "already in the store at this version: nothing written")
            raise InvalidInput(f"memory {restore.id} already exists in this store (version {version}); a restore "
                               "never overwrites a record")
        gone = audit.newest_lifecycle_event(tx, restore.id)
        if gone is not None:
            raise InvalidInput(f"memory {restore.id} was deleted from this store ({gone}); a deleted memory is "
                               "not restored (D3)")
        return None

    def _restored(self, tx: Tx, ctx: Context, verdict: Verdict, events: list[Event], r: Record,
                  content: str) -> tuple[Record, str]:
        """The record a restore stores: ``r`` with its id, version, times, metadata and provenance, except that
        it is never more trusted or less held than the write path makes it now — held stays held (T2), the
        trust is the least of the record's and the import's, a gate "review" or a change by the gate holds it,
        and text already held in the scope is not laundered by a restore either. Returns it and why it is held."""
        kind = r.kind
        why = verdict.reason() if verdict.verdict == REVIEW else ""
        trust = Trust.UNTRUSTED if Trust.UNTRUSTED in (ctx.trust, r.provenance.trust) else Trust.TRUSTED
        lowered_why = "; ".join(ctx.taint[:3]) or "imported from an untrusted source"
        if r.derived_from:  # D3: a derived record needs its inputs here, or deleting them could not reach it
            inputs = {str(row[0]): str(row[21])  # each input's trust, stored in exactly this scope (any status)
                      for row in tx.records(View.of(ctx.scope, ids=tuple(r.derived_from)))}
            missing = sorted(set(r.derived_from) - set(inputs))
            if missing:
                raise InvalidInput(f"memory {r.id} is derived from {', '.join(missing)}, not in this scope; "
                                   "import its inputs first")
            if trust == Trust.TRUSTED and Trust.UNTRUSTED in inputs.values():
                trust, lowered_why = Trust.UNTRUSTED, "derived from untrusted memories"
        chash = content_hash(content)
        echo = self._repeat_of(tx, ctx, content, None) if trust == Trust.TRUSTED else None
        if echo is not None:  # T7: a restore does not launder text held or untrusted in this scope either
            trust = Trust.UNTRUSTED
            lowered_why = ("the same text is already held for review in this scope"
                           if echo.record.status == Status.REVIEW else f"it repeats the untrusted memory "
                           f"{echo.record.id} (T7)")
        lowered = trust != r.provenance.trust
        if r.status == Status.REVIEW:
            why = why or "it was held for operator review when it was exported"
        elif content != r.content:
            why = why or "the write gate changed it on import"
        elif lowered and not self.policy.auto_approve_untrusted:
            why = why or lowered_why
        approval = r.provenance.approval
        if lowered or why:
            approval = "none" if why else "auto"  # auto: only under the opt-in auto_approve_untrusted policy (T3)
        status = Status.REVIEW if why else r.status
        self._check_capacity(tx, ctx, kind, len(content.encode("utf-8")), events, held=status == Status.REVIEW)
        record = Record(
            id=r.id, version=r.version, kind=kind, content=content, content_hash=chash, metadata=r.metadata,
            confidence=r.confidence, sensitivity=r.sensitivity, created_at=r.created_at, updated_at=r.updated_at,
            expires_at=r.expires_at, due_at=r.due_at, status=status, derived_from=r.derived_from,
            provenance=replace(r.provenance, trust=trust, approval=approval))
        return record, why

    @staticmethod
    def _provenance(ctx: Context, trust: str, approval: str, repeated: Sequence[str] = ()) -> Provenance:
        """R2: provenance comes from the session's context, never from the content or the caller's arguments;
        the untrusted memories a text repeats (T7) are among its sources as ``memory:<id>``."""
        s = ctx.scope
        sources = tuple(ctx.sources)
        if repeated:
            sources = tuple(dict.fromkeys([*sources, *(f"memory:{m}" for m in repeated[:MAX_REPEATS])]))
        return Provenance(tenant=s.tenant, user=s.user, agent=s.agent_key, session_id=ctx.session_id,
                          source_type=ctx.source_type, sources=sources, trust=trust, approval=approval)

    def _repeat_of(self, tx: Tx, ctx: Context, content: str, exclude: str | None) -> Repeat | None:
        """T7: an untrusted or held record of the caller's scope (and of the shared scope it reads) whose text
        ``content`` repeats — the same near-duplicate key, then the same words (exact) or, when the text has
        content words, the same set of them (a near-duplicate). Verified rows only; an exact repeat of a served
        record wins over a near one. One index probe when nothing matches (see :mod:`memwarden.repeats`)."""
        hasher = self.backend.indexer.hasher
        s = ctx.scope
        scopes = [s.agent_key, ""] if ctx.read_shared and s.agent_key else [s.agent_key]
        keys = [hasher.dup_key(hasher.tag(s.tenant, s.user, a), content) for a in scopes]
        rows = tx.repeats(View.of(s, shared=ctx.read_shared, live_at=now_ms(), clearance=ctx.clearance), keys,
                          exclude)
        if not rows:
            return None
        mine = repeats.words(content)
        found = [Repeat(r, repeats.words(r.content) == mine) for r in self._serve(ctx, rows, tx=tx)]
        if not any(r.exact for r in found) and not hasher.terms_of(content):
            return None  # no content words: only an exact repeat counts
        return min(found, key=lambda r: (not r.exact, r.record.status != Status.ACTIVE), default=None)

    def _repeat_status(self, ctx: Context, echo: Repeat, repeated: Sequence[str], status: str, approval: str, *,
                       plain: bool) -> tuple[str, str]:
        """T7: a held memory's text stays held; an exact repeat of a served, operator-approved memory — by an
        otherwise trusted save (``plain``: a new record the gate accepts) that repeats nothing else — inherits its
        approval (a person approved these very words); anything else is decided as untrusted content (held, or
        ``auto`` when the policy opts in)."""
        rec = echo.record
        if rec.status == Status.REVIEW:
            return Status.REVIEW, "none"
        if (plain and echo.exact and ctx.trust == Trust.TRUSTED and rec.provenance.approval.startswith("operator:")
                and set(repeated) == {rec.id}):
            return Status.ACTIVE, rec.provenance.approval
        return status, approval

    def _status(self, trust: str, verdict: Verdict, *, auto: bool = True) -> tuple[str, str]:
        """(status, approval) for new content: trusted → active; untrusted → held, unless the operator opted in
        to ``auto_approve_untrusted`` (then active with approval ``auto``, never an operator's; not for ``auto``
        False: a self-written procedure always waits for a person). A gate "review" verdict is always held."""
        if verdict.verdict == REVIEW:
            return Status.REVIEW, "none"
        if trust == Trust.TRUSTED:
            return Status.ACTIVE, "none"
        if auto and self.policy.auto_approve_untrusted:
            return Status.ACTIVE, "auto"
        return Status.REVIEW, "none"

    def _transact(self, work: Callable[[Tx], T], *, allow_rollback: bool = False) -> T:
        """``work`` in a durable write transaction (possibly group-committed with other threads' writes, see
        store/sqlite/backend.py). Rows refused inside it are reported after it ends, committed or not (T6). A store
        behind its anchor takes no write but an operator's acceptance (I5)."""
        if self.rollback is not None and not allow_rollback:
            raise RollbackDetected(f"{self.rollback}; nothing is read from or written to it. {RESTORE_HINT}")
        seen: list[Tx] = []

        def run(tx: Tx) -> T:
            seen.append(tx)
            return work(tx)

        try:
            return self.backend.run_write(run)
        finally:
            for tx in seen:
                for ctx, mid, why in tx.refused:
                    self._integrity_events(ctx, [(mid, why)])

    def _reject(self, tx: Tx, ctx: Context, content: Any, verdict: Verdict, memory_id: str | None) -> Event:
        """G6: a rejected candidate is a security event with its secrets masked. What one rejection keeps is
        bounded: the first ``Policy.max_rejected_kept`` characters, the length and sha256 of the whole
        candidate (to recognise it elsewhere), every rule id and the first ``MAX_REJECTED_HITS`` hits."""
        shown = verdict.redacted or (content if isinstance(content, str) else repr(content)[:100_000])
        keep = self.policy.max_rejected_kept
        hits = verdict.hits
        details: dict[str, Any] = {
            "rules": verdict.rules, "kind": verdict.kind, "source_type": ctx.source_type,
            "candidate": shown[:keep], "truncated": len(shown) > keep,
            "hits": [h.to_dict() for h in hits[:MAX_REJECTED_HITS]], "rules_version": verdict.rules_version}
        if len(shown) > keep:
            details["candidate_chars"] = len(shown)
            details["candidate_sha256"] = content_hash(shown)
        if len(hits) > MAX_REJECTED_HITS:
            details["hits_total"] = len(hits)
        return self._audit(tx, ctx, "rejected", memory_id, details)

    def _audit(self, tx: Tx, ctx: Context, event: str, memory_id: str | None, details: dict[str, Any]) -> Event:
        s = ctx.scope
        return audit.append(tx, self.signer, event, actor=ctx.actor, tenant=s.tenant, user=s.user,
                            agent=s.agent_key, session_id=ctx.session_id, memory_id=memory_id, details=details)

    def _check_derived(self, tx: Tx, ctx: Context, ids: Sequence[str],
                       versions: Mapping[str, int] | None = None) -> tuple[tuple[str, ...], str]:
        """Inputs of a derived record must be visible to the caller (and, with ``versions``, unchanged since
        the caller read them); returns them and their least trust (Q4)."""
        if not ids:
            return (), Trust.TRUSTED
        rows = tx.records(self._visible(ctx, ids=tuple(ids)))
        found = {r.id: r for r in self._serve(ctx, rows, tx=tx)}
        missing = [i for i in ids if i not in found]
        if missing and versions is not None and all(i in versions for i in missing):
            raise VersionConflict(missing[0], versions[missing[0]], None)  # an input vanished since it was read
        if missing:
            raise InvalidInput(f"derived_from names records not visible in this scope: {', '.join(missing)}")
        for mid, version in (versions or {}).items():
            if mid in found and found[mid].version != version:
                raise VersionConflict(mid, version, found[mid].version)
        least = (Trust.UNTRUSTED if any(r.provenance.trust == Trust.UNTRUSTED for r in found.values())
                 else Trust.TRUSTED)
        return tuple(dict.fromkeys(ids)), least

    def _check_capacity(self, tx: Tx, ctx: Context, kind: str, extra_bytes: int, events: list[Event],
                        adding: bool = True, *, held: bool = False, evict_lowest: bool = False,
                        confidence: Any = 1.0) -> None:
        """D1: fail, after purging expired records, with every entry the caller may see listed; ``evict_lowest``
        (extracted facts only) evicts extracted records of lower confidence instead, lowest first. ``held``: the
        record will be held for review, which takes room in the scope's held budget, never in the served one
        (so a tainted session cannot fill a kind that clean sessions then cannot save to)."""
        lim = self.policy.limits_for(kind)
        max_entries, max_bytes = lim.held_limits() if held else (lim.max_entries, lim.max_bytes)
        key = (ctx.scope.tenant, ctx.scope.user, ctx.scope.agent_key, kind)
        purged = False
        for _attempt in range(MAX_EVICTIONS + 2):
            n, b = tx.usage(ctx.scope, kind)  # every status
            entries, used = n + (1 if adding else 0), b + extra_bytes
            if not held and entries <= max_entries and used <= max_bytes:
                return  # fits even counting the held records (the common case: no second query)
            held_n, held_b = tx.usage(ctx.scope, kind, held=True)
            n, b = (held_n, held_b) if held else (n - held_n, b - held_b)
            entries, used = n + (1 if adding else 0), b + extra_bytes
            if entries <= max_entries and used <= max_bytes:
                return
            if not purged:
                purged = True
                if self._purge_expired(tx, ctx, key, events):
                    continue
            if held or not (evict_lowest and self._evict_one(tx, ctx, key, confidence, events)):
                break  # nothing expired or evictable to make room
        limit = f"at most {max_entries} entries" if entries > max_entries else f"at most {max_bytes} bytes"
        if held:
            raise CapacityError(kind, limit + " held", [], held=True)  # none of them is the caller's to see
        # S3: only what the caller may see, selected in SQL (scope, active, unexpired, within clearance)
        rows = tx.records(View.of(ctx.scope, kind=kind, status=ACTIVE, live_at=now_ms(), clearance=ctx.clearance),
                          Order.OLDEST)
        served = {r.id: r for r in self._serve(ctx, rows, tx=tx)}
        entries_out = []
        for row in rows:  # every entry the caller may see is listed (D1); only verified ones show their content
            rec = served.get(str(row[0]))
            if rec is None:
                entries_out.append({"id": str(row[0]), "bytes": None, "preview": "(failed verification)"})
            else:
                entries_out.append({"id": rec.id, "bytes": rec.size_bytes, "preview": rec.preview(80)})
        raise CapacityError(kind, limit, entries_out)

    def _capacity_read(self, ctx: Context, exc: CapacityError) -> None:
        """A2: the previews a capacity error carries reach the caller (a tool result): a read event with their
        ids, logged after the failed write's transaction (which rolled back)."""
        ids = [e["id"] for e in exc.entries if e.get("bytes") is not None]
        if ids:
            self.record_event(ctx, "read", {"via": "capacity_error", "kind": exc.kind, "ids": ids})

    def _evict_one(self, tx: Tx, ctx: Context, key: tuple[str, str, str, str], confidence: Any,
                   events: list[Event]) -> bool:
        """Evict the lowest-confidence extracted record of the scope and kind if it is below ``confidence``
        (D1, T4). Only extracted records, never an explicit save; never a held one (it waits for a person)."""
        row = tx.lowest_extracted(ctx.scope, key[3], EXTRACTOR_SOURCE)
        if row is None or not isinstance(confidence, (int, float)) or float(row[1]) >= float(confidence):
            return False
        self._delete_tx(tx, ctx, str(row[0]), "evicted", events,
                        reason=f"lowest-confidence extracted {key[3]} ({float(row[1]):.2f}) made room for one of "
                               f"{float(confidence):.2f}")
        return True

    def _purge_expired(self, tx: Tx, ctx: Context, key: tuple[str, str, str, str], events: list[Event]) -> int:
        ids = [str(r[0]) for r in tx.records(View.of(ctx.scope, kind=key[3], expired_at=now_ms()))]
        for mid in ids:
            self._delete_tx(tx, ctx, mid, "expired", events)
        return len(ids)

    def _current_for_update(self, tx: Tx, ctx: Context, memory_id: str, expected: int) -> Record:
        found = tx.records(View.of(ctx.scope, ids=(memory_id,), live_at=now_ms()))
        if not found:
            raise NotFound(f"no memory {memory_id} in this scope")
        row = found[0]
        if not self._serve(ctx, [row], tx=tx):
            raise IntegrityError(f"memory {memory_id} failed verification; it cannot be updated")
        rec = row_to_record(row)
        if rec.status == Status.REVIEW and not ctx.actor.startswith("operator"):
            raise HeldForReview(f"memory {memory_id} is held for operator review and cannot be updated")
        if rec.version != expected:
            raise VersionConflict(memory_id, expected, rec.version)
        return rec

    # --- deletion (D3, S4) -------------------------------------------------------------------------------------

    def _delete_tx(self, tx: Tx, ctx: Context, memory_id: str, event: str, out: list[Event],
                   reason: str = "") -> list[str]:
        """Delete a record and everything derived from it, leaving tombstones in the audit log."""
        found = tx.records(View.unscoped(ids=(memory_id,)))  # whatever its scope: the caller checked that
        row = found[0] if found else None
        derived = [] if row is None else self._derived(tx, memory_id, str(row[2]), str(row[3]))
        tx.delete(memory_id)  # the record, its indexes, history and links either way
        details: dict[str, Any] = {"content_hash": row[7] if row else None, "tombstone": True}
        if reason:
            details["reason"] = reason
        if row:
            owner = Scope(row[2], row[3], row[4] or None)
            ev = audit.append(tx, self.signer, event, actor=ctx.actor, tenant=owner.tenant, user=owner.user,
                              agent=owner.agent_key, session_id=ctx.session_id, memory_id=memory_id,
                              details=details)
            out.append(ev)
        removed = [memory_id]
        for d in derived:
            removed += self._delete_tx(tx, ctx, d, "removed", out, reason=f"derived from {memory_id}")
        return removed

    def _derived(self, tx: Tx, memory_id: str, tenant: str, user: str) -> list[str]:
        """Records derived from ``memory_id`` (D3): of its tenant and user only (S4, in the SQL), by their signed
        ``derived_from`` alone — never by the unsigned ``memory_links`` (I4). A row whose signature fails is not
        deleted on its say-so (it is never served either; ``doctor`` reports it)."""
        out = []
        for row in tx.derived(memory_id, tenant, user):
            rec = decode_row(row)
            if rec is not None and self.signer.verify_record(rec) and memory_id in rec.derived_from:
                out.append(rec.id)
        return out

    def _no_untrusted_deletes(self, ctx: Context, memory_id: str | None, via: str) -> None:
        """Q3/T2: a session that ingested untrusted content may not delete memories (an injected "forget what
        the user told you" must not erase trusted memory); the user or an operator can, from a clean session."""
        self._require_session(ctx)
        if ctx.trust == Trust.UNTRUSTED and not _is_operator(ctx):
            self.refuse(ctx, "delete_refused", memory_id, via=via,
                        why="this session is untrusted (it ingested untrusted content, or its host does not "
                            "report what it ingests), so it cannot delete memories; an operator can (`memwarden "
                            "forget`), or the user from a clean session whose host reports its ingest")

    def remove(self, ctx: Context, memory_id: str, *, include_held: bool = False, reason: str = "") -> list[str]:
        """Delete one record in the caller's own scope (S4); returns every id removed (derived ones too)."""
        self._no_untrusted_deletes(ctx, memory_id, "remove")
        events: list[Event] = []

        def work(tx: Tx) -> list[str]:
            found = tx.records(View.of(ctx.scope, ids=(memory_id,), live_at=now_ms(), clearance=ctx.clearance))
            if not found:
                raise NotFound(f"no memory {memory_id} in this scope")
            if found[0][16] == Status.REVIEW and not include_held:
                raise HeldForReview(f"memory {memory_id} is held for operator review; only an operator can "
                                    "reject it")
            return self._delete_tx(tx, ctx, memory_id, "removed", events, reason=reason)

        removed = self._transact(work)
        self.backend.scrub()
        self._commit_events(events)
        return removed

    def clear(self, ctx: Context, kind: str | None = None, *, include_held: bool = False) -> list[str]:
        """Delete every record of exactly the caller's scope (optionally one kind). Never another scope (S4)."""
        if kind is not None and kind not in Kind.__members__.values():
            raise InvalidInput(f"unknown kind {kind!r}")
        self._no_untrusted_deletes(ctx, None, "clear")
        view = View.of(ctx.scope, clearance=ctx.clearance, kind=kind or None, status=None if include_held else ACTIVE)
        events: list[Event] = []

        def work(tx: Tx) -> list[str]:
            removed: list[str] = []
            for mid in [str(row[0]) for row in tx.records(view)]:
                if mid not in removed:
                    removed += self._delete_tx(tx, ctx, mid, "removed", events, reason="clear")
            return removed

        removed = self._transact(work)
        self.backend.scrub()  # the transaction compacted the FTS index once for all it removed (D3)
        self._commit_events(events)
        return removed

    def gc(self, actor: str = "operator:gc") -> list[str]:
        """D2: purge expired records everywhere (they were already invisible to every read), compact the full-text
        index (the purge's transaction did if it removed anything; otherwise now, for the terms deletes of an
        older memwarden left behind) and truncate the WAL so no physical remnant of any deleted record is left
        (D3)."""
        events: list[Event] = []

        def work(tx: Tx) -> list[str]:
            removed: list[str] = []
            rows = tx.records(View.unscoped(expired_at=now_ms()))
            for mid, _version, tenant, user, agent, *_rest in rows:
                if mid in removed:
                    continue
                ctx = Context(Scope(tenant, user, agent or None), session_id="gc", actor=actor,
                              source_type=SourceType.OPERATOR)
                removed += self._delete_tx(tx, ctx, mid, "expired", events)
            return removed

        removed = self._transact(work)
        self.backend.scrub(compact_index=not removed)
        self._commit_events(events)
        return removed

    # --- verified, scoped reads --------------------------------------------------------------------------------

    @staticmethod
    def _visible(ctx: Context, now: int | None = None, **filters: Any) -> View:
        """Scope + status + expiry (at ``now``) + clearance, and ``filters``: parameters of the engine's query
        (S3, D2)."""
        return View.of(ctx.scope, shared=ctx.read_shared, status=ACTIVE, live_at=now_ms() if now is None else now,
                       clearance=ctx.clearance, **filters)

    def _check(self, db: Reads, rows: Iterable[Sequence[object]]) -> tuple[list[Record], list[tuple[str, str]]]:
        """Decode each row, verify its signature and that it is the version its audit history says is current —
        by audit evidence that is itself verified: the lifecycle row's own MAC, and its place in the chain this
        process walked (I5: no forged, edited or deleted audit row can vouch for a rolled-back record).
        Returns (servable records, refused (id, why)). A refused row is never served (I1, T6)."""
        recs: list[Record] = []
        bad: list[tuple[str, str]] = []
        verified = self._verified
        for row in rows:
            key = row_key(row)
            rec = None if key is None else verified.get(key)  # these exact values decoded and verified before
            if rec is not None:
                recs.append(rec)
                continue
            rec, problem = decode_row_why(row)
            if rec is None:
                bad.append((str(row[0]), f"malformed row ({problem}): edited outside memwarden, or written "
                                         "before this value was validated"))
            elif not self.signer.verify_record(rec):
                bad.append((str(row[0]), "signature mismatch: edited outside memwarden"))
            else:
                if key is not None:
                    verified.put(key, rec)
                recs.append(rec)
        if not recs:
            return recs, bad
        if self.rollback is not None:
            return [], bad + [(r.id, self.rollback) for r in recs]
        self._advance_chain(db)
        refused = self.chain.vouch(db, [(r.id, r.version, r.content_hash) for r in recs])
        good = []
        for r in recs:
            why = refused.get(r.id)
            if why is None:
                good.append(r)
            else:
                bad.append((r.id, f"not served: {why}"))
        return good, bad

    def _advance_chain(self, db: Reads) -> None:
        """Walk the committed audit rows this process has not verified yet (``ChainCursor``). Inside a write
        transaction (``db.writing``) the walk reads the committed state, never the open transaction's rows."""
        if db.writing:
            with self.backend.read() as conn:
                self.chain.advance(conn)
        else:
            self.chain.advance(db)

    def _serve(self, ctx: Context, rows: Iterable[Sequence[object]], *, tx: Tx) -> list[Record]:
        """``_check`` inside a write transaction; failures are reported once the transaction has ended."""
        good, bad = self._check(tx, rows)
        tx.refused.extend((ctx, mid, why) for mid, why in bad)
        return good

    def _integrity_events(self, ctx: Context, bad: Sequence[tuple[str, str]], **details: Any) -> None:
        if not bad:
            return
        evs = self._transact(lambda tx: [self._audit(tx, ctx, "integrity_failure", mid, {"problem": why, **details})
                                         for mid, why in bad])
        self._commit_events(evs)

    def report_integrity(self, ctx: Context, refused: Sequence[Checked], *, via: str) -> None:
        """A security event for every refused row an operator read came across (T6, A1)."""
        self._integrity_events(ctx, [(c.id, c.refused or "refused") for c in refused], via=via)

    def record_event(self, ctx: Context, event: str, details: dict[str, Any], memory_id: str | None = None) -> Event:
        """Append one audit event that changes no record (reads, exports) and publish it."""
        ev = self._transact(lambda tx: self._audit(tx, ctx, event, memory_id, details))
        self._commit_events([ev])
        return ev

    def _read(self, ctx: Context, view: View, order: Order, limit: int) -> list[Record]:
        with self.backend.read() as db:
            good, bad = self._check(db, db.records(view, order, limit))
        self._integrity_events(ctx, bad)
        return good

    def begin_session(self, ctx: Context, workspace: Sequence[str], snapshot_sha256: str, shown: Sequence[str],
                      total: int) -> None:
        """Record a session and what its frozen prompt block carried (P1, A2), in one transaction."""
        def work(tx: Tx) -> list[Event]:
            tx.begin_session(ctx.session_id, ctx.scope, now_ms(), ctx.clearance, list(workspace), snapshot_sha256)
            return [self._audit(tx, ctx, "session_started", None, {"snapshot_sha256": snapshot_sha256,
                                                                    "workspace": list(workspace)}),
                    self._audit(tx, ctx, "injected", None, {"ids": list(shown), "total": total})]

        self._commit_events(self._transact(work))

    def end_session(self, ctx: Context, summary: dict[str, Any] | None = None) -> None:
        """Mark the session ended (later reads and writes naming it are refused, T6) and log its ledger."""
        self._sessions.discard(ctx.session_id)
        self._rejections.pop(ctx.session_id, None)

        def work(tx: Tx) -> list[Event]:
            tx.end_session(ctx.session_id, now_ms())
            return [self._audit(tx, ctx, "session_ended", None, summary)] if summary is not None else []

        self._commit_events(self._transact(work))

    def log_reads(self, ctx: Context, event: str, records: Sequence[Record], details: dict[str, Any]) -> Event:
        """A2: record which memories reached this session, with how."""
        return self.record_event(ctx, event, {**details, "ids": [r.id for r in records]})

    def get(self, ctx: Context, memory_id: str) -> Record:
        """One record in scope, served only if it verifies; held records are refused (T2)."""
        self._require_session(ctx)
        view = View.of(ctx.scope, shared=ctx.read_shared, ids=(memory_id,), live_at=now_ms(),
                       clearance=ctx.clearance)
        with self.backend.read() as db:
            rows = db.records(view)
            good, bad = self._check(db, rows)
        if not rows:
            raise NotFound(f"no memory {memory_id} in this scope")
        if bad:
            self._integrity_events(ctx, bad)
            raise IntegrityError(f"memory {memory_id} failed verification and is not served; "
                                 "an operator should run `memwarden doctor`")
        rec = good[0]
        if rec.status == Status.REVIEW:
            raise HeldForReview(f"memory {memory_id} is held for operator review and cannot be read until an "
                                "operator approves it; ask an operator to review it")
        return rec

    def list_records(self, ctx: Context, kind: str | None = None, limit: int = 100, *,
                     item_key: str | None = None, item_prefix: str | None = None,
                     refused: list[tuple[str, str]] | None = None) -> list[Record]:
        """The newest visible records of the scope. One index-ordered query per kind, merged: ordering the
        whole scope by time in one query would sort every row of a large scope. ``item_key`` / ``item_prefix``
        (keyed items, :mod:`memwarden.items`): only the records with that key, or whose namespace starts so —
        both in the SQL, like the scope. ``refused``: a list that gets the (id, why) of rows that failed
        verification (logged and never returned)."""
        self._require_session(ctx)
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= self.policy.max_list:
            raise InvalidInput(f"limit must be a whole number from 1 to {self.policy.max_list}")
        if kind is not None and kind not in Kind.__members__.values():
            raise InvalidInput(f"unknown kind {str(kind)[:40]!r}")
        for name, value in (("item_key", item_key), ("item_prefix", item_prefix)):
            if value is not None and not isinstance(value, str):
                raise InvalidInput(f"{name} must be text")
        now = now_ms()
        kinds = [kind] if kind is not None else [k.value for k in Kind]
        items = {"item_key": item_key, "item_prefix": item_prefix or None}
        with self.backend.read() as db:
            rows = [row for k in kinds
                    for row in db.records(self._visible(ctx, now, kind=k, **items), Order.NEWEST, limit)]
            rows.sort(key=_newest_first, reverse=True)
            good, bad = self._check(db, rows[:limit])
        self._integrity_events(ctx, bad)
        if refused is not None:
            refused += bad  # (id, why) of rows that failed verification: never served, but the caller may say so
        return good

    def item_namespaces(self, ctx: Context, prefix: str | None = None, limit: int = 1000) -> list[str]:
        """The namespaces (``ITEM_NS`` texts) of the keyed items this session may see — scope, status, expiry
        and clearance in the SQL — that start with ``prefix``; sorted, at most ``limit``."""
        self._require_session(ctx)
        with self.backend.read() as db:
            return db.item_namespaces(self._visible(ctx, item_prefix=prefix or None), limit)

    def block_records(self, ctx: Context) -> tuple[list[Record], int]:
        """P3: the newest entries of the block kinds in priority order, and how many such entries exist.
        One index-ordered query per kind (no sort of the whole scope); refused rows are skipped, not shown."""
        now = now_ms()
        want = self.policy.block_entries
        good: list[Record] = []
        bad: list[tuple[str, str]] = []
        total = 0
        with self.backend.read() as db:
            for kind in self.policy.block_kinds:
                view = self._visible(ctx, now, kind=kind)
                total += db.count(view)
                offset = 0
                while len(good) < want:
                    rows = db.records(view, Order.NEWEST, want - len(good), offset)
                    if not rows:
                        break
                    offset += len(rows)
                    g, b = self._check(db, rows)
                    good += g
                    bad += b
        self._integrity_events(ctx, bad)
        return good, total - len(bad)

    def due_reminders(self, ctx: Context, now: int | None = None) -> tuple[list[Record], int]:
        """P4: the first reminders (soonest first) due from 1.5 days back to 3 days forward, and how many are."""
        now = now_ms() if now is None else now
        lo = now - int(self.policy.reminder_window_back_hours * 3_600_000)
        hi = now + int(self.policy.reminder_window_forward_hours * 3_600_000)
        view = self._visible(ctx, now, kind=Kind.REMINDER, due=(lo, hi))
        with self.backend.read() as db:
            total = db.count(view)
            rows = db.records(view, Order.DUE, self.policy.block_entries)
            good, bad = self._check(db, rows)
        self._integrity_events(ctx, bad)
        return good, total - len(bad)

    def search(self, ctx: Context, query: str, k: int = 5, kind: str | None = None) -> list[Record]:
        """Hybrid (lexical + vector) search inside the caller's scope; every filter is part of the SQL (S3, Q1).
        The ranking lives in ``memwarden.retrieval``; an embedder failure degrades it to lexical-only (Q2)."""
        if not isinstance(query, str):
            raise InvalidInput("query must be text")
        self._require_session(ctx)
        query = query[:self.policy.max_query_chars]  # bounded work: only its first 32 distinct words count anyway
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 100:
            raise InvalidInput("k must be a whole number from 1 to 100")
        return self.retrieval.search(ctx, query, k, kind)

    def matchable_procedures(self, ctx: Context, limit: int = 200) -> list[Record]:
        """T5: the scope's procedures that trigger matching may use — active, and trusted or approved by an
        operator (never held, never auto-approved); every filter in the SQL."""
        self._require_session(ctx)
        return self._read(ctx, self._visible(ctx, kind=Kind.PROCEDURE, vouched=True), Order.NEWEST, limit)

    # --- operator views ----------------------------------------------------------------------------------------

    def check_rows(self, rows: Sequence[Sequence[object]]) -> list[Checked]:
        """Operator view of raw rows: each decoded and judged by the same checks the read path applies."""
        with self.backend.read() as conn:
            why = dict(self._check(conn, rows)[1])
        return [Checked(str(row[0]), decode_row(row), why.get(str(row[0]))) for row in rows]

    def operator_rows(self, tenant: str, user: str, agent: Any = ALL_AGENTS, *, include_held: bool = True,
                      kind: str | None = None) -> list[Checked]:
        """Every live row of a user (one agent's scope, the shared scope with ``None``, or ``ALL_AGENTS``), each
        judged; refused rows are listed, never raised. Scope and expiry are in the SQL (S3, D2)."""
        with self.backend.read() as db:
            rows = db.records(_operator_view(tenant, user, agent, include_held, kind), Order.OPERATOR)
        return self.check_rows(rows)

    def operator_page(self, tenant: str, user: str, agent: Any = ALL_AGENTS, *, include_held: bool = True,
                      after: Sequence[object] | None = None, limit: int = 200
                      ) -> tuple[list[Checked], tuple[object, ...] | None]:
        """One page of :meth:`operator_rows` (same rows, same order, at most ``limit``) after the page key
        ``after``, and the key of the next page (``None``: this was the last). Keyset paging in the SQL, so a
        long listing (a streamed export) never holds more than one page."""
        view = _operator_view(tenant, user, agent, include_held, None)
        with self.backend.read() as db:
            rows = db.records(view, Order.OPERATOR, limit, after=None if after is None else tuple(after))
        key = tuple(rows[-1][i] for i in _OPERATOR_KEY) if len(rows) >= limit else None
        return self.check_rows(rows), key

    def users_of(self, tenant: str, *, after: str = "", limit: int = 500) -> list[str]:
        """The users of a tenant holding live records, sorted, after ``after`` (keyset paging), at most ``limit``."""
        with self.backend.read() as db:
            return db.users(View(tenant, live_at=now_ms()), after, limit)

    def beliefs(self, tenant: str, user: str) -> list[Checked]:
        """A4: everything held about a user, every agent and status, each with source, trust and approver."""
        return self.operator_rows(tenant, user, ALL_AGENTS, include_held=True)

    def agents_of(self, tenant: str, user: str) -> list[str | None]:
        """The agents holding live records of a user (``None`` = the user's shared scope), sorted."""
        scope = Scope(tenant, user)
        with self.backend.read() as db:
            agents = db.agents(View(scope.tenant, scope.user, live_at=now_ms()))
        return [a or None for a in agents]

    def refused(self, rows: Sequence[RecordRow]) -> list[tuple[str, str]]:
        """Operator check (doctor): which of these rows would be refused, and why."""
        return [(c.id, c.refused) for c in self.check_rows(rows) if c.refused]

    def operator_check(self, memory_id: str) -> Checked:
        """One row by id in any scope, judged (operator tools only; agents use :meth:`get`)."""
        with self.backend.read() as db:
            rows = db.records(View.unscoped(ids=(memory_id,)))
        if not rows:
            raise NotFound(f"no memory {memory_id}")
        return self.check_rows(rows)[0]

    def operator_get(self, memory_id: str) -> Record:
        """One record by id in any scope, as stored (operator tools only); malformed rows raise."""
        checked = self.operator_check(memory_id)
        if checked.record is None:
            raise IntegrityError(f"memory {memory_id} is malformed: {checked.refused}")
        return checked.record

    def history(self, memory_id: str) -> list[dict[str, Any]]:
        with self.backend.read() as db:
            rows = db.history(memory_id)
        return [{"version": v, "superseded_at": s, "content": c, "session_id": sid, "source_type": st}
                for v, s, c, sid, st in rows]


_OPERATOR_KEY = tuple(COLUMNS.index(c) for c in ORDER_KEYS[Order.OPERATOR])  # a page's key: its last row's


def _operator_view(tenant: str, user: str, agent: Any, include_held: bool, kind: str | None) -> View:
    """The ``View`` of the operator listings: scope (one agent, the shared scope, or ``ALL_AGENTS``), expiry,
    status and kind, all parameters of the engine's query (S3, D2)."""
    filters: dict[str, Any] = {"live_at": now_ms(), "status": None if include_held else ACTIVE, "kind": kind}
    if agent is ALL_AGENTS:
        scope = Scope(tenant, user)
        return View(scope.tenant, scope.user, **filters)
    return View.of(Scope(tenant, user, agent), **filters)


def _keyed(metadata: Any) -> bool:
    """A keyed item (:mod:`memwarden.items`): its signed metadata names a key."""
    return isinstance(metadata, dict) and isinstance(metadata.get(ITEM_KEY), str)


def _newest_first(row: Sequence[object]) -> tuple[int, str]:
    ts = row[UPDATED_AT]
    return (ts if isinstance(ts, int) else -1, str(row[0]))  # a malformed row sorts last, then is refused


def open_store(url: str | os.PathLike[str] | None = None, *, key: bytes | str | None = None,
               policy: Policy | None = None, gate: Gate | None = None,
               durability: str | None = None, refuse_rollback: bool = True) -> MemoryService:
    """``memwarden.open``: the embedded SQLite default (``$MEMWARDEN_URL`` or the XDG data dir).

    ``durability`` (or ``$MEMWARDEN_DURABILITY``): ``"full"`` (default) fsyncs every commit, so an acknowledged
    write survives power loss; ``"normal"`` survives a killed process but may lose the last writes to an OS crash
    or power loss (never corrupting the store), for about 1.7x the write throughput (docs/benchmarks.md).

    A store behind the anchor kept beside the key (an older copy of the file put back, a truncated audit log)
    raises :class:`RollbackDetected` (I5). ``refuse_rollback=False`` (``doctor``, ``audit verify``,
    ``audit accept-restore``) opens it anyway with ``rollback`` set: it serves nothing and takes no write."""
    if url is not None and not isinstance(url, (str, os.PathLike)):
        raise InvalidInput(f"memwarden.open takes a file path or a postgresql:// URL, not {type(url).__name__}")
    path = file_of(url)  # None: a server database (PostgreSQL)
    if path is not None and path.is_dir():
        raise InvalidInput(f"{path} is a directory: give the database file's path (e.g. {path / 'memwarden.db'})")
    existed = path.exists() if path is not None else None  # an existing store was signed with a key: never mint
    backend = open_backend(url, durability)  # a new one for it
    if existed is None:
        existed = not backend.created
    try:
        return MemoryService(backend, load_key(key, create=not existed), policy, gate,
                             anchor_directory=anchor_dir(key is not None), refuse_rollback=refuse_rollback)
    except BaseException:
        backend.close()
        raise
