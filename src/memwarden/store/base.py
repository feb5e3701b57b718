"""The store contract: every operation memwarden needs from a database, named for what it does.

An engine (``store/sqlite/`` today; ``store/postgres/`` next) implements three things:

* :class:`Engine` — opens the database and hands out the other two: :meth:`Engine.read` a consistent snapshot of
  committed data (:class:`Reads`), :meth:`Engine.run_write` one durable write transaction (:class:`Writes`, which
  can also read, and sees its own uncommitted rows). How writers are grouped, serialised and retried is the
  engine's business; a call returns only once its work is durable (I3) or raises (nothing of it stored).
* :class:`Reads` — the reads. Every read of records takes a :class:`View`: who may see what (the scope, the
  reader's clearance, status, expiry) is a parameter of the engine's query — a SQL ``WHERE``, and on PostgreSQL
  row-level security too — never a filter applied afterwards in Python (S3, D2). The few reads not shaped by a
  ``View`` take the scope (or the tenant and user) they are limited to as parameters.
* :class:`Writes` — the writes, always inside a transaction: a record with every index derived from it
  (inserted, replaced with its history, deleted from every table that holds it: D3), audit rows, sessions,
  tokens, settings.

Rows cross the contract as plain tuples in the orders fixed here (``store/rows.py`` maps record rows to
:class:`~memwarden.records.Record`), so no engine type (a connection, a cursor, a driver row) leaks into the
service. The service, review, auth, doctor, consolidation and retrieval call only this contract; SQL lives in the
engine packages (tests/test_store_contract.py fails otherwise).

Conveniences are derived in the callers, not added here: a record's scope or version by id is
``records(View.unscoped(ids=(id,)))``, "is the audit log empty" is ``audit_head()[0] == 0``, and so on.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TypeVar

if TYPE_CHECKING:
    from memwarden.records import Record
    from memwarden.retrieval.index import Indexer
    from memwarden.scope import Scope

T = TypeVar("T")

# --- rows ---------------------------------------------------------------------------------------------------------

# A record row: the values of RECORD_COLUMNS, in that order (JSON text for metadata, derived_from and sources).
RECORD_COLUMNS = (
    "id", "version", "tenant", "user_id", "agent", "kind", "content", "content_hash", "size_bytes", "metadata",
    "confidence", "sensitivity", "created_at", "updated_at", "expires_at", "due_at", "status", "derived_from",
    "session_id", "source_type", "sources", "trust", "approval", "signature",
)
# An audit row: the values of AUDIT_COLUMNS, in that order (details: canonical JSON text).
AUDIT_COLUMNS = ("seq", "ts", "event", "tenant", "user_id", "agent", "session_id", "memory_id", "actor", "details",
                 "prev_hash", "hash")
# A token row: the values of TOKEN_FIELDS (in the order the row's signature covers them), then the signature.
# The first nine are what rows of issue 12 signed; the profile (0/1) and the expiry (unix ms or None) came with
# issue 13, and an engine adds them to an older store's table when it opens it (the upgrade re-signs its rows).
TOKEN_FIELDS = ("id", "role", "tenant", "user_id", "agent", "name", "token_hash", "created_at", "revoked_at",
                "host_reports_ingest", "expires_at")
TOKEN_REVOKED_AT = TOKEN_FIELDS.index("revoked_at")
# A host ingest report row (issue 13, memwarden.host_ingest): the values of HOST_REPORT_FIELDS (in the order its
# signature covers them; sources: a JSON list), then the signature.
HOST_REPORT_FIELDS = ("seq", "tenant", "user_id", "agent", "reported_at", "actor", "host_session", "tool", "reason",
                      "sources")

RecordRow = tuple[Any, ...]
AuditRow = tuple[Any, ...]
TokenRow = tuple[Any, ...]
HostReportRow = tuple[Any, ...]
# A search candidate: (row key, agent, session id, kind, updated_at). A record's *row key* is an integer the engine
# assigns when it stores the record (SQLite: its rowid); the derived indexes and their change log are keyed by it.
CandidateRow = tuple[int, str, str, str, int]
AuditHead = tuple[int, str]  # (seq, hash) of the newest audit row; (0, GENESIS) when there is none
INDEX_REBUILT = -1  # the row key of an index change that rebuilt the whole index

ACTIVE, REVIEW = "active", "review"  # the record statuses a View can ask for
# Keyed items (memwarden.items; the LangGraph store and other key-value integrations): a record's signed metadata
# names its namespace (ITEM_NS: the compact JSON text of the namespace's labels, without the closing bracket, so a
# namespace prefix is a text prefix) and its key (ITEM_KEY: the namespace text and the key, as one string). Engines
# index ITEM_KEY within the scope, so a lookup by key is one index probe.
ITEM_NS, ITEM_KEY = "mw_item_ns", "mw_item_key"


class NotCommitted(Exception):
    """A write's work ran, but the commit that held it failed: nothing of it is stored. Engines raise a subclass
    that is also their driver's error class."""


class Order(enum.Enum):
    """The orders :meth:`Reads.records` returns rows in (ties are always broken by id)."""

    ANY = "any"
    NEWEST = "newest"  # updated_at, id descending (lists, the prompt block)
    OLDEST = "oldest"  # updated_at, id (what a capacity error lists)
    DUE = "due"  # due_at, id (reminders)
    CREATED = "created"  # created_at, id (the review queue)
    OPERATOR = "operator"  # agent, kind, created_at, id (beliefs, export)
    ID = "id"


# The columns each order sorts by (all descending for NEWEST, all ascending otherwise): a page's key for keyset
# paging is its last row's values of these (``Reads.records(..., after=key)``).
ORDER_KEYS: dict[Order, tuple[str, ...]] = {
    Order.NEWEST: ("updated_at", "id"),
    Order.OLDEST: ("updated_at", "id"),
    Order.DUE: ("due_at", "id"),
    Order.CREATED: ("created_at", "id"),
    Order.OPERATOR: ("agent", "kind", "created_at", "id"),
    Order.ID: ("id",),
}


class _ViewFields(NamedTuple):
    tenant: str | None
    user: str | None = None
    agents: tuple[str, ...] | None = None  # agent keys ('' = the user's shared records)
    clearance: int | None = None
    status: str | None = None  # ACTIVE | REVIEW | None (any)
    live_at: int | None = None
    expired_at: int | None = None
    kind: str | None = None
    ids: tuple[str, ...] | None = None
    due: tuple[int, int] | None = None  # due_at within [lo, hi]
    vouched: bool = False  # trusted, or approved by an operator (T5: procedures trigger matching may use)
    unfolded_at: int | None = None  # not represented by a consolidation record active and live then (Q4)
    item_key: str | None = None  # a keyed item's key (metadata ITEM_KEY), exactly: integrations' lookup by key
    item_prefix: str | None = None  # keyed items whose namespace (metadata ITEM_NS) starts with this text


class View(_ViewFields):
    """Which records a read may return. Every field is a parameter of the engine's query (S3): the scope
    (``tenant`` → ``user`` → ``agents``, each ``None`` meaning every value below the one above), the reader's
    ``clearance`` (``sensitivity <= clearance``), ``status``, expiry (``live_at``: unexpired at that time, D2;
    ``expired_at``: expired by then, for purges), and narrower filters. ``tenant=None`` (every tenant) exists for
    the operator's lookups by id and the system's purge only: build it with :meth:`unscoped`, never by accident.

    Immutable and hashable (a named tuple: every read builds one, so it must cost next to nothing); checked
    when it is made."""

    __slots__ = ()

    def __new__(cls, tenant: str | None, user: str | None = None, agents: tuple[str, ...] | None = None,
                clearance: int | None = None, status: str | None = None, live_at: int | None = None,
                expired_at: int | None = None, kind: str | None = None, ids: tuple[str, ...] | None = None,
                due: tuple[int, int] | None = None, vouched: bool = False, unfolded_at: int | None = None,
                item_key: str | None = None, item_prefix: str | None = None) -> View:
        if (user is not None and tenant is None) or (agents is not None and user is None):
            raise ValueError("a View narrows tenant → user → agents: name the levels above")
        if status not in (None, ACTIVE, REVIEW):
            raise ValueError(f"unknown status {status!r}")
        if (agents is not None and not agents) or (ids is not None and not ids):
            raise ValueError("an empty agents or ids filter matches nothing: do not read at all")
        return tuple.__new__(cls, (tenant, user, agents, clearance, status, live_at, expired_at, kind, ids, due,
                                   vouched, unfolded_at, item_key, item_prefix))

    @classmethod
    def of(cls, scope: Scope, *, shared: bool = False, **filters: Any) -> View:
        """Exactly ``scope`` — and with ``shared`` also the user's shared records (S1 opt-in)."""
        agents = (scope.agent_key, "") if shared and not scope.is_shared else (scope.agent_key,)
        return cls(scope.tenant, scope.user, agents, **filters)

    @classmethod
    def unscoped(cls, **filters: Any) -> View:
        """Every tenant: an operator's lookup by id, the system's purge of expired records. Never an agent's."""
        return cls(None, **filters)


# --- reads --------------------------------------------------------------------------------------------------------

class RecordReads(Protocol):
    def records(self, view: View, order: Order = Order.ANY, limit: int | None = None, offset: int = 0,
                after: tuple[Any, ...] | None = None) -> list[RecordRow]:
        """The rows ``view`` lets through, in ``order``; with ``after`` (keyset paging) only the rows that sort
        after the row whose ``ORDER_KEYS[order]`` values those are."""
        ...

    def count(self, view: View) -> int: ...

    def agents(self, view: View) -> list[str]:
        """The distinct agent keys of the rows ``view`` lets through, sorted."""
        ...

    def item_namespaces(self, view: View, limit: int) -> list[str]:
        """The distinct ``ITEM_NS`` texts of the keyed rows ``view`` lets through, sorted, at most ``limit``."""
        ...

    def users(self, view: View, after: str, limit: int) -> list[str]:
        """The distinct users of the rows ``view`` lets through, sorted, after ``after``, at most ``limit``."""
        ...

    def history(self, memory_id: str) -> list[tuple[int, int, str, str, str]]:
        """Earlier versions of a record: (version, superseded_at, content, session id, source type), oldest first."""
        ...

    def usage(self, scope: Scope, kind: str, *, held: bool = False) -> tuple[int, int]:
        """D1: (entries, bytes of content) of exactly ``scope`` and ``kind`` — every status, or only held rows."""
        ...

    def repeats(self, view: View, dup_keys: Sequence[int], exclude: str | None, limit: int = 16) -> list[RecordRow]:
        """T7: untrusted or held rows ``view`` lets through whose near-duplicate key is one of ``dup_keys`` (not
        ``exclude``)."""
        ...

    def near_duplicates(self, scope: Scope, kind: str, sensitivity: int, dup_key: int, now: int, limit: int = 8
                        ) -> list[tuple[RecordRow, str]]:
        """Q3: active, live rows of exactly ``scope``, ``kind`` and ``sensitivity`` with near-duplicate key
        ``dup_key``, each with its index text (its keyed terms in order)."""
        ...

    def derived(self, memory_id: str, tenant: str, user: str) -> list[RecordRow]:
        """D3: rows of the tenant and user whose own (signed) ``derived_from`` names ``memory_id``."""
        ...

    def lowest_extracted(self, scope: Scope, kind: str, source_marker: str) -> tuple[str, float] | None:
        """D1/T4: (id, confidence) of the lowest-confidence active model-written row of exactly ``scope`` and
        ``kind`` whose sources name ``source_marker`` (an extractor)."""
        ...

    def folded(self, ids: Sequence[str]) -> set[str]:
        """Q4: those of ``ids`` that an existing consolidation record was derived from."""
        ...


class SearchReads(Protocol):
    """What ranking reads: the change log of the derived indexes, the scope's index texts and vectors, and
    candidates — every row of them through a :class:`View`."""

    def index_head(self) -> int:
        """The newest position of the index change log (0: none)."""
        ...

    def index_changes(self, after: int, limit: int) -> list[tuple[int, int]]:
        """(position, row key) of changes after ``after``, oldest first (INDEX_REBUILT: the whole index)."""
        ...

    def index_rows(self, view: View, keys: Sequence[int] | None = None) -> list[tuple[int, str, int]]:
        """(row key, index text, expires_at) of the rows ``view`` lets through (only ``keys``, if given)."""
        ...

    def vector_rows(self, view: View, embedder: str, keys: Sequence[int] | None = None
                    ) -> list[tuple[int, bytes | None, int]]:
        """(row key, float32 vector or None, expires_at) of ``embedder``'s vectors of the rows ``view`` lets
        through (only ``keys``, if given)."""
        ...

    def has_vectors(self) -> bool: ...

    def candidates(self, view: View, keys: Sequence[int]) -> list[CandidateRow]:
        """The rows among ``keys`` that ``view`` lets through."""
        ...

    def session_windows(self, view: View, windows: Sequence[tuple[str, int, int, bool, int]]
                        ) -> list[list[CandidateRow]]:
        """For each window ``(session id, lo, hi, descending, limit)``: at most ``limit`` rows of that session
        with row keys in [lo, hi] that ``view`` lets through, nearest first (descending: from ``hi`` down)."""
        ...

    def ranked(self, view: View, keys: Sequence[int]) -> list[tuple[int, RecordRow]]:
        """(row key, record row) of the rows among ``keys`` that ``view`` lets through."""
        ...

    def scope_totals(self, tenant: str, user: str, agents: Sequence[str]) -> tuple[int, int]:
        """(records, bytes) of a user's scopes, every status (the plain-BM25 baseline's collection size)."""
        ...

    def term_documents(self, tokens: Sequence[str]) -> dict[str, int]:
        """How many indexed rows hold each index token (tokens carry their scope tag)."""
        ...

    def text_candidates(self, view: View, any_of: Sequence[str], also: Sequence[str] | None, pool: int,
                        limit: int | None = None) -> list[tuple[Any, ...]]:
        """The plain-BM25 baseline: the best ``pool`` indexed rows holding a token of ``any_of`` (and, with
        ``also``, one of ``also``) by the engine's own full-text rank, then those ``view`` lets through (at most
        ``limit``): candidate rows with their index text and rank appended, best first."""
        ...


class AuditReads(Protocol):
    def audit_head(self) -> AuditHead: ...

    def audit_hash(self, seq: int) -> str | None: ...

    def audit_rows(self, after: int = 0, upto: int | None = None) -> Iterable[AuditRow]:
        """Rows with ``after < seq <= upto``, in seq order (iterate inside the read)."""
        ...

    def audit_latest(self, ids: Sequence[str], events: Sequence[str]) -> dict[str, AuditRow]:
        """The newest row of each id among rows of ``events``."""
        ...

    def audit_log(self, *, events: Sequence[str] | None = None, memory_id: str | None = None,
                  tenant: str | None = None, user: str | None = None, after: int | None = None,
                  upto: int | None = None, limit: int = 50, newest_first: bool = True) -> list[AuditRow]:
        """The first ``limit`` rows matching every filter given (``after < seq <= upto``), newest (or oldest)
        first."""
        ...

    def audit_reads(self, events: Sequence[str], *, memory_id: str | None = None, tenant: str | None = None,
                    user: str | None = None, after: int = 0, limit: int | None = None) -> list[AuditRow]:
        """A2: rows of ``events`` (the read events) after ``after`` — of ``tenant`` and ``user`` if given, and
        only those whose details list ``memory_id`` among the ids served if given — oldest first."""
        ...

    def audit_event_names(self) -> set[str]: ...

    def audit_count(self) -> int: ...

    def audit_config_events(self, event: str) -> list[AuditRow]:
        """Rows of one of the events looked up at open and authentication (token_revoked, settings_migrated)."""
        ...


class ConfigReads(Protocol):
    """Sessions, credentials, signed settings and the unsigned ``meta`` rows."""

    def session_ended(self, session_id: str) -> bool | None:
        """None: no such session; otherwise whether it has ended."""
        ...

    def token_by_hash(self, token_hash: str) -> TokenRow | None: ...

    def token_by_id(self, token_id: str) -> TokenRow | None: ...

    def tokens(self, tenant: str | None = None) -> list[TokenRow]:
        """Every token row (of ``tenant``), oldest first."""
        ...

    def live_token_named(self, name: str, tenant: str) -> bool: ...

    def token_revocations(self, token_id: str | None = None) -> dict[str, tuple[int, int]]:
        """Token id → (seq, ts) of its first ``token_revoked`` audit event."""
        ...

    def setting(self, name: str) -> tuple[str, str] | None:
        """(value, signature) of one setting."""
        ...

    def settings(self) -> list[tuple[str, str, str]]:
        """Every setting row: (name, value, signature), by name."""
        ...

    def meta(self, keys: Sequence[str]) -> dict[str, str]:
        """The ``meta`` rows named ``keys`` that exist (nothing there changes behaviour: I4)."""
        ...


class HostReportReads(Protocol):
    """What hosts reported their sessions ingested (issue 13): signed rows of exactly one scope, read by every
    session of that scope before each write (so the common case, no new report, must be one index probe)."""

    def host_report_before(self, scope: Scope, before_ms: int) -> int:
        """The seq of exactly ``scope``'s newest report made before ``before_ms`` (unix ms; 0: none)."""
        ...

    def host_reports(self, scope: Scope, after_seq: int, limit: int) -> list[HostReportRow]:
        """Exactly ``scope``'s reports with seq after ``after_seq``, oldest first, at most ``limit``."""
        ...


class InspectionReads(Protocol):
    """What ``doctor`` and the guided demo show about where a record is stored."""

    def row_key(self, memory_id: str) -> int | None: ...

    def footprint(self, memory_id: str, row_key: int | None) -> dict[str, tuple[int, int]]:
        """Per table or index that can hold a memory: (rows of this record, rows in total) (D3)."""
        ...


class Reads(RecordReads, SearchReads, AuditReads, ConfigReads, HostReportReads, InspectionReads, Protocol):
    """A read snapshot of committed data — or, inside a write transaction, of the transaction's own state."""

    writing: bool  # True inside a write transaction (its reads see its uncommitted rows)


# --- writes -------------------------------------------------------------------------------------------------------

class Writes(Reads, Protocol):
    """One write transaction (or a savepoint of one). Nothing it does is visible to other readers until the
    transaction commits; an exception out of the work undoes all of it."""

    refused: list[tuple[Any, str, str]]  # (context, id, why) of rows a read inside it refused (the service's)

    def savepoint(self, name: str) -> AbstractContextManager[None]:
        """A nested unit: an exception inside it undoes only it (and is re-raised)."""
        ...

    def insert(self, record: Record) -> None:
        """Store a new record with every index derived from it (full-text terms, near-duplicate key, vector),
        and its ``derived_from`` links."""
        ...

    def replace(self, record: Record, superseded_at: int) -> None:
        """Keep the current version of ``record.id`` in its history, overwrite it with ``record`` and rewrite its
        indexes."""
        ...

    def delete(self, memory_id: str) -> None:
        """Remove a record from every table and index that holds it: the row, its index entries, vector, history
        and links either way (D3). Records derived from it are the caller's to delete."""
        ...

    def rebuild_indexes(self, *, vectors: bool) -> dict[str, int]:
        """Recompute every record's derived indexes (and with ``vectors`` its vector) from its text."""
        ...

    def append_audit(self, row: AuditRow, head: str) -> None:
        """Append one chained audit row and record ``head``, the chain's keyed head anchor (A1). Rows are never
        updated or deleted."""
        ...

    def begin_session(self, session_id: str, scope: Scope, started_at: int, clearance: int,
                      workspace: Sequence[str], snapshot_sha256: str) -> None: ...

    def end_session(self, session_id: str, ended_at: int) -> None: ...

    def insert_token(self, fields: Sequence[object], signature: str) -> None: ...

    def sign_token(self, token_id: str, revoked_at: object, signature: str) -> None:
        """Set a token's revocation and its new signature (a revocation, or the upgrade re-signing a row)."""
        ...

    def next_host_report_seq(self) -> int:
        """The seq this transaction's next host report takes: larger than every report's so far, and reports
        become visible in seq order — a reader that has seen seq n never later finds a committed report of its
        scope at or below n (``host_ingest.ReportCursor`` relies on it). The seq is signed with the row."""
        ...

    def insert_host_report(self, fields: Sequence[object], signature: str) -> None:
        """Store one report: the values of HOST_REPORT_FIELDS (the seq from :meth:`next_host_report_seq`).
        Rows are never updated or deleted (like audit rows)."""
        ...

    def put_setting(self, name: str, value: str, signature: str) -> None: ...

    def put_meta(self, key: str, value: str) -> None: ...

    def delete_meta(self, keys: Sequence[str]) -> None: ...


# --- the engine ---------------------------------------------------------------------------------------------------

AfterCommit = Callable[[Reads, "AuditHead | None", "AuditHead | None"], None]


class Engine(Protocol):
    """An open database."""

    location: str  # what messages call it (a path, or a URL without its password)
    anchor_id: bytes  # names this database for its anchor outside it (I5)
    created: bool  # the database did not exist (or was empty) before this open
    durability: str
    indexer: Indexer  # derives a record's index entries; the engine writes them with the record
    # Called once per committed write transaction, before any writer of it returns, with a reader of the
    # committed state, the audit head its first append linked to and the head it committed (None, None: it
    # appended nothing). Must not raise.
    after_commit: AfterCommit | None
    commits: int  # write transactions committed
    committed_writes: int  # run_write calls they held

    def read(self) -> AbstractContextManager[Reads]:
        """A consistent snapshot of committed data."""
        ...

    def run_write(self, work: Callable[[Writes], T]) -> T:
        """Run ``work`` in a durable write transaction; return its result once committed, or raise what it raised
        (nothing of it stored) or :class:`NotCommitted`."""
        ...

    def run_exclusive(self, work: Callable[[Reads], T]) -> T:
        """Run ``work`` alone, after every write queued before it, outside any transaction."""
        ...

    def scrub(self, *, compact_index: bool = False) -> None:
        """After deletes: leave no physical remnant of deleted rows (D3); ``compact_index`` also rewrites the
        full-text index now."""
        ...

    def sync(self) -> None:
        """Make every commit so far durable now (for the anchor under a relaxed durability setting)."""
        ...

    def check(self, *, vectors: bool) -> list[tuple[str, str, str]]:
        """The engine's own soundness checks, as (check, subject, problem): storage integrity, index or history
        rows without their record (and, with ``vectors``, records without a vector), usage counters, links."""
        ...

    def file_problems(self) -> list[tuple[str, str]]:
        """(path, problem) for files of the store that others can read (I6); [] for a server database."""
        ...

    def close(self) -> None: ...

