"""Embedded SQLite backend: WAL, ``synchronous=FULL`` by default (an acknowledged write is on disk, I3), a write
connection and a read connection per :class:`SqliteBackend`, ``BEGIN IMMEDIATE`` for every write so concurrent
writers (threads or processes) serialise instead of losing updates (I2), and group commit so that writers queued
in one process share an fsync.

It implements the store contract (``store/base.py``): :class:`Snapshot` (a read) and :class:`Tx` (a write
transaction) carry the contract's operations, each bound from the module that holds its SQL (records.py,
search.py, audit.py, sessions.py, tokens.py, settings.py, host_reports.py, checks.py). Scope (S1–S3) is always
part of the SQL ``WHERE`` a ``View`` compiles to (views.py); no read filters in Python.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol, TypeVar
from urllib.parse import unquote, urlparse

from platformdirs import user_data_dir

from memwarden.errors import UnsupportedURL
from memwarden.retrieval.index import Indexer
from memwarden.store import base
from memwarden.store.sqlite import audit as _audit
from memwarden.store.sqlite import checks as _checks
from memwarden.store.sqlite import host_reports as _host_reports
from memwarden.store.sqlite import records as _records
from memwarden.store.sqlite import search as _search
from memwarden.store.sqlite import sessions as _sessions
from memwarden.store.sqlite import settings as _settings
from memwarden.store.sqlite import tokens as _tokens
from memwarden.store.sqlite.files import create_private, loose_modes
from memwarden.store.sqlite.schema import DDL, SCHEMA_VERSION, add_columns


def default_db_path() -> Path:
    return Path(user_data_dir("memwarden")) / "memwarden.db"


def resolve_url(url: str | os.PathLike[str] | None) -> Path:
    """``url`` → SQLite file path: explicit argument, else ``$MEMWARDEN_URL``, else the XDG data dir."""
    if url is None:
        url = os.environ.get("MEMWARDEN_URL") or None
    if url is None:
        return default_db_path()
    text = os.fspath(url)
    if text.startswith(("postgres://", "postgresql://")):
        raise UnsupportedURL("PostgreSQL is not supported by this version of memwarden yet; use a SQLite path")
    if text.startswith("sqlite:"):
        parsed = urlparse(text)
        path = unquote(parsed.netloc + parsed.path)
        if not path:
            raise UnsupportedURL(f"no database path in {text!r}; use sqlite:///absolute/path.db")
        return Path(path).expanduser()
    if "://" in text:
        raise UnsupportedURL(f"unsupported database URL {text!r}; use a file path or sqlite:///path.db")
    if text == ":memory:":
        raise UnsupportedURL("':memory:' is not supported: memwarden needs a file for WAL and durability")
    return Path(text).expanduser()


# durability → PRAGMA synchronous (WAL mode). Both survive a killed process (kill -9) with every acknowledged
# write; "full" also survives power loss and OS crashes, at the cost of an fsync per commit.
DURABILITY = {"full": "FULL", "normal": "NORMAL"}
# Page cache of each connection, in KiB (SQLite's default: 2,000 KiB, i.e. 2,000 of our 1 KiB pages). A search
# seeks ~150 rows by rowid, each a walk of 3-4 pages of the table's B-tree, and a scope of 10,000 records is
# ~5,000 pages of it alone: in 2 MB those pages kept falling out of the cache, and each fetch again went to the
# memory map and the WAL index. It grows only as pages are read (a small store never uses it).
CACHE_KIB = -32_768


def resolve_durability(durability: str | None) -> str:
    value = durability or os.environ.get("MEMWARDEN_DURABILITY") or "full"
    if value not in DURABILITY:
        raise UnsupportedURL(f"durability must be one of {', '.join(DURABILITY)}; got {value!r}")
    return value


MAX_GROUP = 64  # writes that may share one commit (bounds how long a queued writer waits for its fsync)
T = TypeVar("T")


class NotCommitted(base.NotCommitted, sqlite3.OperationalError):
    """A write's work ran, but the commit that held it failed: nothing of it is stored."""


class _Request:
    """One queued write: its work, its outcome, and a lock its thread sleeps on until it is done or must lead."""

    __slots__ = ("done", "error", "lead", "raw", "result", "wake", "work")

    def __init__(self, work: Callable[[Any], Any], raw: bool) -> None:
        self.work = work
        self.raw = raw  # runs alone, on the bare connection, outside any transaction
        self.result: Any = None
        self.error: BaseException | None = None
        self.done = False
        self.lead = False  # woken to become the combiner
        self.wake = threading.Lock()
        self.wake.acquire()


class SqliteBackend:
    """Two connections: ``conn`` for writes and ``reader`` for reads (WAL lets it read the last committed state
    while a write is syncing; guarded by ``read_lock``).

    **Group commit** (flat combining). A writer hands its work to :meth:`run_write`. If no other thread is
    writing, it becomes the *combiner* and runs it at once: ``BEGIN IMMEDIATE``, work, ``COMMIT`` — a lone writer
    pays nothing for grouping. Writers that arrive meanwhile queue their work and sleep; the combiner then runs
    everything queued in one transaction, each piece in its own savepoint (a failure undoes only that piece),
    commits once — one fsync for all of them — and wakes them with their results. Every call returns only after
    the commit holding its work is durable; if that commit fails, every call of the group raises
    :class:`NotCommitted`. Readers never see a group's uncommitted work: they use their own connection."""

    def __init__(self, path: Path, durability: str = "full") -> None:
        self.path = path
        self.location = str(path)
        self.anchor_id = os.fsencode(path.resolve())  # the anchor file beside the key is bound to the real path
        self.durability = resolve_durability(durability)
        self.created = not path.exists() or path.stat().st_size == 0  # a new database (anchor.py)
        create_private(path)  # data directory 0700, database (and so its WAL and SHM) 0600 (I6)
        # Called once per committed write transaction, on ``conn`` outside any transaction, before any writer
        # of the group returns, with the audit head the transaction's first append linked to and the head it
        # committed (None, None: it appended nothing) — the service checks and advances its anchor there
        # (anchor.py). It must not raise.
        self.after_commit: base.AfterCommit | None = None
        self.conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30.0)
        self._mutex = threading.Lock()  # guards _pending and _busy
        self._pending: list[_Request] = []
        self._busy = False  # a thread (the combiner) owns ``conn``
        self._local = threading.local()  # .combining: this thread is running write work (nesting is a bug)
        self.commits = 0  # write transactions committed
        self.committed_writes = 0  # run_write calls they held (more than commits when writes were grouped)
        c = self.conn
        c.execute("PRAGMA busy_timeout = 30000")
        # Small pages: a save dirties ~20 pages (record, indexes, FTS segment, audit); at 1 KiB each the WAL
        # frames written and fsynced per commit are a quarter of the 4 KiB default, which is most of a durable
        # write's cost (docs/benchmarks.md). Applies to new databases only.
        c.execute("PRAGMA page_size = 1024")
        mode = c.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise UnsupportedURL(f"cannot use WAL journal mode on {path} (got {mode})")
        c.execute(f"PRAGMA synchronous = {DURABILITY[self.durability]}")
        c.execute("PRAGMA foreign_keys = ON")
        c.execute("PRAGMA temp_store = MEMORY")  # savepoint journals of grouped writes stay in memory
        c.execute("PRAGMA secure_delete = ON")  # freed pages are zeroed: deleted content leaves no remnant (D3)
        # Reads run on this connection whenever no write is (``read``): memory-mapped, a search's row lookups by
        # rowid are page reads from the map, not a pread() each once the 2 MB page cache is full (as the reader)
        c.execute("PRAGMA mmap_size = 268435456")
        c.execute(f"PRAGMA cache_size = {CACHE_KIB}")

        self.indexer = Indexer()  # FTS terms + vectors, written in the record's transaction (issue 5)

        def schema(tx: Tx) -> None:
            tx.executescript_safe(DDL)  # the service rebuilds the FTS terms if they are of an older tokenizer
            add_columns(tx)  # columns of newer versions on an older store's tables (their rows: memwarden.upgrade)
            tx.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))

        self.run_write(schema)
        self.reader = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None,
                                      check_same_thread=False, timeout=30.0)
        self.reader.execute("PRAGMA busy_timeout = 30000")
        self.reader.execute("PRAGMA mmap_size = 268435456")  # its cache is dropped after every write elsewhere
        self.reader.execute(f"PRAGMA cache_size = {CACHE_KIB}")
        self.read_lock = threading.RLock()  # a query inside a read on the reader must not deadlock

    def close(self) -> None:
        with self.read_lock:
            self.reader.close()
        self._exclusive(lambda conn: conn.close())

    # --- writes ----------------------------------------------------------------------------------------------

    def run_write(self, work: Callable[[Tx], T]) -> T:
        """Run ``work(tx)`` in a durable write transaction, possibly shared with other threads' writes (see the
        class docstring); returns its result once committed, or raises what it raised (nothing of it stored)."""
        return self._submit(_Request(work, raw=False))  # type: ignore[no-any-return]

    def run_exclusive(self, work: Callable[[base.Reads], T]) -> T:
        """Run ``work`` alone on the write connection, outside any transaction, in queue order."""
        return self._exclusive(lambda conn: work(Snapshot(conn)))

    def _exclusive(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """``run_exclusive`` on the bare connection (WAL checkpoints, index maintenance, closing)."""
        return self._submit(_Request(work, raw=True))  # type: ignore[no-any-return]

    def _submit(self, req: _Request) -> Any:
        if getattr(self._local, "combining", False):
            raise RuntimeError("nested write transaction on the same store")  # a bug in memwarden, not input
        with self._mutex:
            self._pending.append(req)
            lead = not self._busy
            self._busy = True
        while not lead:
            req.wake.acquire()  # sleeps until the combiner finished our work, or handed us the lead
            if req.done:
                return self._outcome(req)
            lead = req.lead
        try:
            while not req.done:
                with self._mutex:
                    head = self._pending
                    n = 1 if head[0].raw else next((i for i, r in enumerate(head[:MAX_GROUP]) if r.raw),
                                                   min(len(head), MAX_GROUP))
                    batch, self._pending = head[:n], head[n:]
                self._local.combining = True
                try:
                    if batch[0].raw:
                        self._run_raw(batch[0])
                    else:
                        self._run_group(batch)
                finally:
                    self._local.combining = False
                    for other in batch:
                        if other is not req:
                            other.done = True
                            other.wake.release()
        finally:
            self._hand_off()
        return self._outcome(req)

    @staticmethod
    def _outcome(req: _Request) -> Any:
        if req.error is not None:
            raise req.error
        return req.result

    def _run_raw(self, req: _Request) -> None:
        try:
            req.result = req.work(self.conn)
        except Exception as exc:
            req.error = exc
        finally:
            req.done = True

    def _run_group(self, batch: list[_Request]) -> None:
        """One transaction for every request of the batch — and for writes that queue while it runs (they join
        before the COMMIT, so one fsync serves them too). Each request's outcome is set and ``done``; joiners are
        appended to ``batch`` so the caller wakes them."""
        first_alone = len(batch) == 1
        fts = FtsQueue()  # the group's FTS rows: one executemany before the COMMIT
        marks = AuditMarks()  # the audit head the group links to and the head it commits (anchor.py)
        try:
            self.conn.execute("BEGIN IMMEDIATE")
            i = 0
            while i < len(batch):
                r = batch[i]
                savepoint = not (first_alone and i == 0)  # a lone first write needs none: ROLLBACK undoes it
                mark = fts.mark()
                if savepoint:
                    self.conn.execute("SAVEPOINT w")
                tx = Tx(self.conn, fts, marks, self.indexer)
                try:
                    r.result = r.work(tx)
                    if tx.audit_top is not None:
                        marks.top = tx.audit_top
                except Exception as exc:
                    r.error = exc
                    if savepoint:
                        self.conn.execute("ROLLBACK TO w")
                        fts.rollback(mark)
                    elif i == 0:
                        break  # the transaction holds nothing else: roll it back below
                if savepoint:
                    self.conn.execute("RELEASE w")
                i += 1
                if i == len(batch) and len(batch) < MAX_GROUP:
                    batch += self._joiners(MAX_GROUP - len(batch))
            if first_alone and batch[0].error is not None:
                self.conn.execute("ROLLBACK")
            else:
                fts.finish(self.conn)  # the group's FTS rows; the index compacted if any write deleted one (D3)
                self.conn.execute("COMMIT")
                self.commits += 1
                self.committed_writes += sum(r.error is None for r in batch)
                if self.after_commit is not None:
                    self.after_commit(Snapshot(self.conn), marks.base, marks.top)
        except BaseException as exc:  # BEGIN, the FTS rows or COMMIT failed (busy, I/O error, full disk); an interrupt
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            for r in batch:
                if r.error is None:
                    r.error = NotCommitted(f"the write was not committed: {exc}")
                    r.error.__cause__ = exc
            if not isinstance(exc, Exception):
                raise
        finally:
            for r in batch:
                r.done = True

    def _joiners(self, room: int) -> list[_Request]:
        """Grouped writes queued meanwhile (up to the first exclusive request), taken off the queue."""
        with self._mutex:
            head = self._pending
            n = next((i for i, r in enumerate(head[:room]) if r.raw), min(len(head), room))
            taken, self._pending = head[:n], head[n:]
        return taken

    def _hand_off(self) -> None:
        """Leave the combiner role: the oldest queued writer (if any) takes it over."""
        with self._mutex:
            nxt = self._pending[0] if self._pending else None
            if nxt is None:
                self._busy = False
                return
            nxt.lead = True
        nxt.wake.release()

    @contextmanager
    def read(self) -> Iterator[Snapshot]:
        """A consistent read snapshot of committed data (``BEGIN DEFERRED``). When no write is running, on the
        write connection (its page cache stays warm across this process's own writes; SQLite drops a connection's
        whole cache when another connection has written); otherwise on the read connection, so a read never
        waits for a commit's fsync and never sees a group's uncommitted work."""
        with self._borrow() as conn:
            conn.execute("BEGIN")
            try:
                yield Snapshot(conn)
            finally:
                conn.execute("COMMIT")

    @contextmanager
    def _borrow(self) -> Iterator[sqlite3.Connection]:
        """The write connection if the store is idle (taking the combiner role for the read), else the reader."""
        local = self._local
        with self._mutex:
            idle = not self._busy and not getattr(local, "combining", False)
            if idle:
                self._busy = True
        if idle:
            local.combining = True  # a write attempted inside the read is a bug: refused as nested
            try:
                yield self.conn
            finally:
                local.combining = False
                self._hand_off()
            return
        with self.read_lock:
            yield self.reader

    def scrub(self, *, compact_index: bool = False) -> None:
        """After deletes: fold the WAL back and truncate it so old frames holding deleted content are gone.
        (A transaction that deletes an FTS row already compacted the index before its COMMIT: see
        :class:`FtsQueue`.) ``compact_index`` also rewrites the FTS5 index now (``gc``, ``reindex``: it removes
        the terms deletes of an older memwarden left behind). Best effort: a concurrent reader can keep a
        checkpoint from completing; the next scrub finishes it."""
        def work(conn: sqlite3.Connection) -> None:
            if compact_index:
                conn.execute(FTS_OPTIMIZE_SQL)
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

        self._exclusive(work)

    def sync(self) -> None:
        """durability=normal: fsync the WAL, so the commits seen so far are durable (before anchoring them)."""
        try:
            fd = os.open(self.path.with_name(self.path.name + "-wal"), os.O_RDONLY)
        except FileNotFoundError:
            return  # checkpointed into the database file (SQLite syncs it when it checkpoints)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def check(self, *, vectors: bool) -> list[tuple[str, str, str]]:
        with self.read() as db:
            return _checks.check(db, self.location, vectors=vectors)

    def file_problems(self) -> list[tuple[str, str]]:
        return loose_modes(self.path)

    def query(self, sql: str, params: Sequence[object] = ()) -> list[tuple[object, ...]]:
        """One read statement of committed data (see :meth:`read` for which connection)."""
        with self._borrow() as conn:
            return conn.execute(sql, params).fetchall()


# FTS5 'optimize': merge every segment of the index into one. Without FTS5 secure-delete (SQLite 3.42+; not in the
# interpreter's 3.40, and not turned on where it exists: docs/security.md) it is the only way to drop a deleted
# row's terms from the index: a DELETE writes a delete marker — the row's terms again — into a new segment, and a
# merge discards the marker and the old entries only when its output is the oldest segment (so 'merge' does not).
FTS_OPTIMIZE_SQL = "INSERT INTO memories_fts (memories_fts) VALUES ('optimize')"


class FtsQueue:
    """FTS5 rows a write transaction inserts, run together just before its COMMIT, and whether it deleted any.

    Why the queue: FTS5 writes its pending terms out as a new index segment at every savepoint, and a group
    commit runs each write in a savepoint of its own — so inserting each record's FTS row as it is stored made a
    segment per write (and the merges they cause): ~200 µs of each write with 8 writers (docs/benchmarks.md).
    Queued, a group's rows are one ``executemany`` and one segment. Still the same transaction as the records
    (Q1/D3).

    Why the count of deleted rows (D3): FTS5 keeps a deleted row's terms — keyed hashes, but the record's own —
    in the index segments (and writes them once more as a delete marker) until a full merge. So a transaction
    that deleted an FTS row (remove, clear, forget, review reject, expiry, eviction, a replaced revision) runs
    FTS5 ``optimize`` once, after its inserts and before its COMMIT: every deletion of the transaction — of
    every write in a group — pays one rewrite of the index (about 1 µs per indexed record; docs/security.md),
    and no committed state ever holds a removed record's terms. A transaction that deletes nothing (a save)
    pays nothing.

    ``ops`` are the queued rows, ``done`` how many of them were executed and ``removed`` how many FTS rows the
    transaction deleted. Anything that must see the FTS table as it will be (an FTS read, update or delete
    inside the transaction) calls :meth:`flush` first. A savepoint remembers ``(len(ops), done, removed)``;
    rolling back to it restores all three, since SQLite undoes the inserts and deletes executed after it and the
    rows queued after it belong to the work it undid."""

    __slots__ = ("done", "ops", "removed")

    def __init__(self) -> None:
        self.ops: list[tuple[int, str]] = []
        self.done = 0
        self.removed = 0

    def flush(self, conn: sqlite3.Connection) -> None:
        if self.done < len(self.ops):
            conn.executemany("INSERT INTO memories_fts (rowid, content) VALUES (?, ?)", self.ops[self.done:])
            self.done = len(self.ops)

    def finish(self, conn: sqlite3.Connection) -> None:
        """Just before the COMMIT: the queued rows, then, if the transaction deleted an FTS row, ``optimize``."""
        self.flush(conn)
        if self.removed:
            conn.execute(FTS_OPTIMIZE_SQL)

    def mark(self) -> tuple[int, int, int]:
        return len(self.ops), self.done, self.removed

    def rollback(self, mark: tuple[int, int, int]) -> None:
        del self.ops[mark[0]:]
        self.done = mark[1]  # <= mark[0]: SQLite undid what ran after the savepoint
        self.removed = mark[2]

    def clear(self) -> None:
        self.ops.clear()
        self.done = 0
        self.removed = 0


class AuditMarks:
    """Of one write transaction (a whole group): ``base``, the audit head its first append linked to (the head
    before it), and ``top``, the newest audit row a request that succeeded appended (the head it commits)."""

    __slots__ = ("base", "top")

    def __init__(self) -> None:
        self.base: tuple[int, str] | None = None
        self.top: tuple[int, str] | None = None


class Handle(Protocol):
    """What the SQL modules run statements on: a :class:`Snapshot` or a :class:`Tx`."""

    def execute(self, sql: str, params: Sequence[object] = ()) -> sqlite3.Cursor: ...

    def executemany(self, sql: str, rows: Sequence[Sequence[object]]) -> sqlite3.Cursor: ...

    def flush_fts(self) -> None: ...


class _Reads:
    """The contract's reads (``base.Reads``), each bound from the module that holds its SQL: the module functions
    take the handle as their first argument, so they are this class's methods as they are."""

    __slots__ = ()
    # records (records.py)
    records = _records.records
    count = _records.count
    agents = _records.agents
    users = _records.users
    item_namespaces = _records.item_namespaces
    history = _records.history
    usage = _records.usage
    repeats = _records.repeats
    near_duplicates = _records.near_duplicates
    derived = _records.derived
    lowest_extracted = _records.lowest_extracted
    folded = _records.folded
    row_key = _records.row_key
    footprint = _checks.footprint
    # search (search.py)
    index_head = _search.index_head
    index_changes = _search.index_changes
    index_rows = _search.index_rows
    vector_rows = _search.vector_rows
    has_vectors = _search.has_vectors
    candidates = _search.candidates
    session_windows = _search.session_windows
    ranked = _search.ranked
    scope_totals = _search.scope_totals
    term_documents = _search.term_documents
    text_candidates = _search.text_candidates
    # audit (audit.py)
    audit_head = _audit.audit_head
    audit_hash = _audit.audit_hash
    audit_rows = _audit.audit_rows
    audit_latest = _audit.audit_latest
    audit_log = _audit.audit_log
    audit_reads = _audit.audit_reads
    audit_event_names = _audit.audit_event_names
    audit_count = _audit.audit_count
    audit_config_events = _audit.audit_config_events
    # sessions, tokens, settings (sessions.py, tokens.py, settings.py)
    session_ended = _sessions.session_ended
    token_by_hash = _tokens.by_hash
    token_by_id = _tokens.by_id
    tokens = _tokens.all_rows
    live_token_named = _tokens.live_name_exists
    token_revocations = _tokens.revocations
    setting = _settings.read
    settings = _settings.read_all
    meta = _settings.meta_rows
    # host ingest reports (host_reports.py)
    host_report_before = _host_reports.last_before
    host_reports = _host_reports.after


class Snapshot(_Reads):
    """A read of committed data on one connection (``SqliteBackend.read``, or the write connection outside any
    transaction for ``run_exclusive`` and ``after_commit``)."""

    __slots__ = ("_c", "execute", "executemany")
    writing = False

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._c = conn
        self.execute = conn.execute  # the connection's own methods: no Python frame per statement
        self.executemany = conn.executemany

    def flush_fts(self) -> None:
        """Nothing is queued outside a write transaction."""


class Tx(_Reads):
    """A thin handle on the connection inside one transaction (so callers cannot commit half-way): the
    contract's reads, which see the transaction's own rows, and its writes (``base.Writes``)."""

    __slots__ = ("_c", "audit_top", "fts", "indexer", "marks", "refused")
    writing = True
    # records and their indexes (records.py)
    insert = _records.insert
    replace = _records.replace
    delete = _records.delete
    rebuild_indexes = _records.rebuild_indexes
    # audit, sessions, tokens, settings
    append_audit = _audit.append_audit
    begin_session = _sessions.begin_session
    end_session = _sessions.end_session
    insert_token = _tokens.insert
    sign_token = _tokens.set_signature
    next_host_report_seq = _host_reports.next_seq
    insert_host_report = _host_reports.insert
    put_setting = _settings.write
    put_meta = _settings.put_meta
    delete_meta = _settings.delete_meta

    def __init__(self, conn: sqlite3.Connection, fts: FtsQueue | None = None, marks: AuditMarks | None = None,
                 indexer: Indexer | None = None) -> None:
        self._c = conn
        self.fts = fts if fts is not None else FtsQueue()  # FTS rows queued until the COMMIT (see FtsQueue)
        self.refused: list[tuple[Any, str, str]] = []  # (context, id, why) of rows a read inside it refused
        self.marks = marks if marks is not None else AuditMarks()
        self.audit_top: tuple[int, str] | None = None  # the newest audit row this request appended
        self.indexer = indexer if indexer is not None else Indexer()

    def note_audit(self, prev: tuple[int, str], row: tuple[int, str]) -> None:
        """``append_audit`` appended ``row`` after the head ``prev``."""
        if self.marks.base is None:
            self.marks.base = prev
        self.audit_top = row

    def execute(self, sql: str, params: Sequence[object] = ()) -> sqlite3.Cursor:
        return self._c.execute(sql, params)

    def executemany(self, sql: str, rows: Sequence[Sequence[object]]) -> sqlite3.Cursor:
        return self._c.executemany(sql, rows)

    def queue_fts(self, rowid: int, content: str) -> None:
        self.fts.ops.append((rowid, content))

    def flush_fts(self) -> None:
        """Run the queued FTS inserts now (before reading, updating or deleting FTS rows in this transaction)."""
        self.fts.flush(self._c)

    def delete_fts(self, rowid: int) -> None:
        """Delete an FTS row; the transaction then compacts the index before its COMMIT (D3, see FtsQueue)."""
        self.fts.flush(self._c)  # the row may still be queued
        if self._c.execute("DELETE FROM memories_fts WHERE rowid = ?", (rowid,)).rowcount:
            self.fts.removed += 1

    @contextmanager
    def savepoint(self, name: str) -> Iterator[None]:
        """``SAVEPOINT name`` … ``RELEASE``; on an exception ``ROLLBACK TO`` it (and the FTS rows queued under
        it) and re-raise."""
        mark, top = self.fts.mark(), self.audit_top
        self._c.execute(f"SAVEPOINT {name}")
        try:
            yield
        except BaseException:
            self._c.execute(f"ROLLBACK TO {name}")
            self.fts.rollback(mark)
            self.audit_top = top  # what it appended is undone
            self._c.execute(f"RELEASE {name}")
            raise
        self._c.execute(f"RELEASE {name}")

    def executescript_safe(self, script: str) -> None:
        """Run DDL statement by statement (``executescript`` would COMMIT our transaction)."""
        stmt = ""
        for line in script.splitlines(keepends=True):
            stmt += line
            if sqlite3.complete_statement(stmt):
                self._c.execute(stmt)
                stmt = ""


def open_backend(url: str | os.PathLike[str] | None, durability: str | None = None) -> SqliteBackend:
    """Open (or create) the store at ``url``. Only the default data directory is created; a named path's
    directory must exist, so a mistyped ``--db`` is an error, not a new tree of directories."""
    path = resolve_url(url)
    if not path.parent.is_dir() and path != default_db_path():
        raise UnsupportedURL(f"directory {path.parent} does not exist: check the database path, or create the "
                             "directory first")
    return SqliteBackend(path, resolve_durability(durability))
