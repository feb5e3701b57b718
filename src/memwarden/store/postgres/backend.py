"""The PostgreSQL engine: psycopg 3, a pool of read connections (psycopg_pool) and one write connection per
process, row-level security on every table that holds a memory (schema.py).

**Reads** run in ``REPEATABLE READ READ ONLY`` transactions (one snapshot per ``read()``). **Writes**: each write
transaction starts with ``SELECT pg_advisory_xact_lock(WRITE_LOCK)`` — one writer at a time across every process
and connection, held until COMMIT or ROLLBACK. Why an advisory transaction lock and not ``SERIALIZABLE`` or a
``SELECT … FOR UPDATE`` of the chain head: the audit chain (A1) links each row to the previous one's hash, so its
appends must be totally ordered, and so must the other logs whose readers rely on commit order (``index_log``
for the in-memory postings, ``host_reports`` seqs); an advisory lock orders whole transactions (their audit rows,
index changes and report seqs become visible in the order they were taken), costs one round trip, needs no row
to exist (an empty chain has no head row to lock), cannot deadlock against itself, and is released by the
server when a connection dies. It is what SQLite's ``BEGIN IMMEDIATE`` gives the SQLite engine.

**Group commit**: writers of one process queue for the write connection; the one holding it runs every queued
write in its transaction, each in its own savepoint (a failure undoes only it), and commits once — one lock
acquisition and one WAL flush for the group (PostgreSQL itself also flushes concurrent commits together).
**Retries**: a serialization failure or deadlock (``40001``/``40P01``: the lock makes both unexpected, but a
statement may still meet one) or a lost connection before the work ran is retried, at most
``MAX_ATTEMPTS`` times; anything else is the caller's error. **Timeouts**: every connection sets
``statement_timeout``, ``lock_timeout`` (the advisory lock wait included) and
``idle_in_transaction_session_timeout``.

**Scope**: every statement runs with the policies given the scope of what it reads or writes (``Handle.use``:
``set_config(…, true)``, transaction-local, issued only when the scope changes; SET cannot take bind parameters).
Statements still carry their own scope ``WHERE`` (views.py): RLS is the second wall, not the only one.

**The anchor** (I5, anchor.py) is bound to the cluster's system identifier and the database name
(``anchor_id``): a database restored into the same cluster under the same name meets its anchor; one put in
another cluster (or renamed) starts a new one, as a SQLite file copied to another path does.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import errors as pg_errors
from psycopg_pool import ConnectionPool

from memwarden.errors import UnsupportedURL
from memwarden.retrieval.index import Indexer
from memwarden.store import base
from memwarden.store.postgres import audit as _audit
from memwarden.store.postgres import checks as _checks
from memwarden.store.postgres import config as _config
from memwarden.store.postgres import records as _records
from memwarden.store.postgres import search as _search
from memwarden.store.postgres.schema import SCHEMA_VERSION
from memwarden.store.postgres.views import Reach

T = TypeVar("T")
WRITE_LOCK = 0x6D656D77  # pg_advisory_xact_lock key of the write transaction ("memw")
MAX_GROUP = 64
MAX_ATTEMPTS = 3
STATEMENT_TIMEOUT_MS = int(os.environ.get("MEMWARDEN_PG_STATEMENT_TIMEOUT_MS", "30000"))
CONNECT_TIMEOUT_S = 10
_RETRY = (pg_errors.SerializationFailure, pg_errors.DeadlockDetected)
# plan_cache_mode: psycopg prepares a statement after a few runs, and PostgreSQL may then keep one generic plan
# for it. A plan made while a table was small (a seq scan and a sort for the audit head, say) stays for the life
# of the connection while the table grows, and every write gets slower with the store (measured: a 10k-record
# bulk load 3x slower per record at the end). Custom plans are made with the table as it is now.
_SESSION_SQL = (f"SET statement_timeout = {STATEMENT_TIMEOUT_MS}; SET lock_timeout = {STATEMENT_TIMEOUT_MS};"
                f" SET idle_in_transaction_session_timeout = {STATEMENT_TIMEOUT_MS * 2};"
                " SET plan_cache_mode = force_custom_plan")


def is_url(url: object) -> bool:
    return isinstance(url, str) and url.startswith(("postgres://", "postgresql://"))


_SECRET_PARAMS = re.compile(r"((?:^|[&;])\s*(?:password|sslpassword|passfile)\s*=)[^&;]*", re.IGNORECASE)


def redact(url: str) -> str:
    """``url`` without its passwords (what messages show): the one in the user part and any ``password=`` /
    ``sslpassword=`` libpq parameter of the query string. A URL that does not parse is not shown at all."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return "(a URL that does not parse)"
    netloc = parts.netloc
    if password is not None:
        cred, host = netloc.rsplit("@", 1)
        netloc = f"{cred.split(':', 1)[0]}:***@{host}"
    query = _SECRET_PARAMS.sub(lambda m: m.group(1) + "***", parts.query)
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def connect(url: str, what: str = "PostgreSQL") -> psycopg.Connection[Any]:
    """One autocommit connection, or a one-line error naming the server (never a stack trace)."""
    try:
        conn = psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S)
    except psycopg.ProgrammingError as exc:  # a malformed URL (libpq could not parse it)
        raise UnsupportedURL(f"not a usable PostgreSQL URL {redact(url)!r}: {_first_line(exc)}") from None
    except psycopg.Error as exc:
        raise UnsupportedURL(f"cannot connect to {what} at {redact(url)}: {_first_line(exc)}") from None
    conn.execute(_SESSION_SQL)
    return conn


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class NotCommitted(base.NotCommitted, psycopg.OperationalError):
    """A write's work ran, but the commit that held it failed: nothing of it is stored."""


class _Request:
    __slots__ = ("done", "error", "result", "work")

    def __init__(self, work: Callable[[Any], Any]) -> None:
        self.work = work
        self.result: Any = None
        self.error: BaseException | None = None
        self.done = False


class AuditMarks:
    __slots__ = ("base", "top")

    def __init__(self) -> None:
        self.base: tuple[int, str] | None = None
        self.top: tuple[int, str] | None = None


class Handle:
    """What the SQL modules run statements on: one connection inside one transaction, and the scope its
    policies were last given (``use``)."""

    __slots__ = ("_conn", "_reach", "operator")

    def __init__(self, conn: psycopg.Connection[Any], operator: bool) -> None:
        self._conn = conn
        self._reach: Reach | None = None
        self.operator = operator  # connected as the operator role: ``reach = 'all'`` is admitted

    def execute(self, sql: str, params: Sequence[object] = ()) -> psycopg.Cursor[Any]:
        return self._conn.execute(sql, params)  # type: ignore[arg-type]

    def executemany(self, sql: str, rows: Sequence[Sequence[object]]) -> None:
        with self._conn.cursor() as cur:
            cur.executemany(sql, rows)  # type: ignore[arg-type]

    def use(self, reach: Reach) -> None:
        """Give the policies ``reach`` (schema.scope_predicate) for the statements that follow."""
        if reach == self._reach:
            return
        kind, tenant, user, agents = reach
        self._conn.execute(
            "SELECT set_config('memwarden.reach', %s, true), set_config('memwarden.tenant', %s, true),"
            " set_config('memwarden.user', %s, true), set_config('memwarden.agents', %s::text[]::text, true)",
            (kind, tenant, user, list(agents)))
        self._reach = reach

    def forget_reach(self) -> None:
        self._reach = None  # a savepoint rolled back: the settings made after it are undone too


class _Reads(Handle):
    __slots__ = ()
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
    audit_head = _audit.audit_head
    audit_hash = _audit.audit_hash
    audit_rows = _audit.audit_rows
    audit_latest = _audit.audit_latest
    audit_log = _audit.audit_log
    audit_reads = _audit.audit_reads
    audit_event_names = _audit.audit_event_names
    audit_count = _audit.audit_count
    audit_config_events = _audit.audit_config_events
    session_ended = _config.session_ended
    token_by_hash = _config.token_by_hash
    token_by_id = _config.token_by_id
    tokens = _config.tokens
    live_token_named = _config.live_token_named
    token_revocations = _config.token_revocations
    setting = _config.setting
    settings = _config.settings
    meta = _config.meta
    host_report_before = _config.host_report_before
    host_reports = _config.host_reports


class Snapshot(_Reads):
    """A read of committed data: one ``REPEATABLE READ`` transaction."""

    __slots__ = ()
    writing = False


class Tx(_Reads):
    """One write transaction (or a savepoint of one): the contract's reads, which see its own rows, and writes."""

    __slots__ = ("audit_top", "indexer", "marks", "refused")
    writing = True
    insert = _records.insert
    replace = _records.replace
    delete = _records.delete
    rebuild_indexes = _records.rebuild_indexes
    append_audit = _audit.append_audit
    begin_session = _config.begin_session
    end_session = _config.end_session
    insert_token = _config.insert_token
    sign_token = _config.sign_token
    next_host_report_seq = _config.next_host_report_seq
    insert_host_report = _config.insert_host_report
    put_setting = _config.put_setting
    put_meta = _config.put_meta
    delete_meta = _config.delete_meta

    def __init__(self, conn: psycopg.Connection[Any], operator: bool, marks: AuditMarks, indexer: Indexer) -> None:
        super().__init__(conn, operator)
        self.refused: list[tuple[Any, str, str]] = []
        self.marks = marks
        self.audit_top: tuple[int, str] | None = None
        self.indexer = indexer

    def note_audit(self, prev: tuple[int, str], row: tuple[int, str]) -> None:
        if self.marks.base is None:
            self.marks.base = prev
        self.audit_top = row

    @contextmanager
    def savepoint(self, name: str) -> Iterator[None]:
        top = self.audit_top
        self._conn.execute(f"SAVEPOINT {name}")
        try:
            yield
        except BaseException:
            self._conn.execute(f"ROLLBACK TO SAVEPOINT {name}")
            self._conn.execute(f"RELEASE SAVEPOINT {name}")
            self.audit_top = top
            self.forget_reach()
            raise
        self._conn.execute(f"RELEASE SAVEPOINT {name}")


class PostgresBackend:
    """An open PostgreSQL database, served through a role that cannot bypass row-level security."""

    def __init__(self, url: str, durability: str = "full") -> None:
        self.url = url
        self.location = redact(url)
        if durability not in ("full", "normal"):
            raise UnsupportedURL(f"durability must be one of full, normal; got {durability!r}")
        self.durability = durability
        self.after_commit: base.AfterCommit | None = None
        self.commits = 0
        self.committed_writes = 0
        self.indexer = Indexer()
        self._local = threading.local()
        self._mutex = threading.Lock()
        self._pending: list[_Request] = []
        self._wlock = threading.Lock()  # the write connection
        self.conn = connect(url)
        try:
            info = self._inspect()
        except BaseException:
            self.conn.close()
            raise
        self.role, self.operator, sysid, dbname, self.created = info
        self.anchor_id = b"postgresql:" + str(sysid).encode() + b"/" + dbname.encode()
        if durability == "normal":
            self.conn.execute("SET synchronous_commit = off")

        def configure(c: psycopg.Connection[Any]) -> None:
            c.execute(_SESSION_SQL)

        self.pool = ConnectionPool(url, min_size=1, max_size=8, kwargs={"autocommit": True,
                                                                          "connect_timeout": CONNECT_TIMEOUT_S},
                                   configure=configure, open=True, timeout=STATEMENT_TIMEOUT_MS / 1000,
                                   name="memwarden-read")

    def _inspect(self) -> tuple[str, bool, int, str, bool]:
        """Refuse a role that bypasses RLS and a schema of another version; (role, is the operator role, system
        identifier, database name, created)."""
        c = self.conn
        role, superuser, bypass, dbname = c.execute(
            "SELECT r.rolname, r.rolsuper, r.rolbypassrls, current_database() FROM pg_roles r"
            " WHERE r.rolname = current_user").fetchone()  # type: ignore[misc]
        owner = c.execute("SELECT tableowner FROM pg_tables WHERE schemaname = 'public' AND tablename = 'meta'"
                          ).fetchone()
        if owner is None:
            raise UnsupportedURL(f"{self.location} has no memwarden schema: run `memwarden migrate --db <URL of the"
                                 " database owner>` first, then use the application URL it prints")
        meta: dict[str, str] = {}
        with contextlib.suppress(psycopg.Error):  # a role without grants: refused below
            meta = dict(c.execute("SELECT key, value FROM meta WHERE key IN ('pg_schema_version', 'pg_app_role',"
                                  " 'pg_operator_role', 'key_fingerprint')").fetchall())
        app_role = meta.get("pg_app_role", f"{dbname}_app")
        why = None
        if superuser:
            why = "a superuser"
        elif bypass:
            why = "a role with BYPASSRLS"
        elif role == owner[0] or c.execute("SELECT pg_has_role(current_user, %s, 'MEMBER')",
                                           (owner[0],)).fetchone()[0]:  # type: ignore[index]
            why = "the owner of the tables"
        if why is not None:
            raise UnsupportedURL(f"refusing to serve through role {role!r} ({why}: it bypasses row-level security);"
                                 f" connect as {app_role!r} (the URL `memwarden migrate` printed)")
        version = meta.get("pg_schema_version")
        if version is None:
            raise UnsupportedURL(f"{self.location}: role {role!r} cannot read the schema version; connect as "
                                 f"{app_role!r}")
        if int(version) > SCHEMA_VERSION:
            raise UnsupportedURL(f"{self.location} has schema version {version}, newer than this memwarden's "
                                 f"({SCHEMA_VERSION}): upgrade memwarden")
        if int(version) < SCHEMA_VERSION:
            raise UnsupportedURL(f"{self.location} has schema version {version}; run `memwarden migrate` (with the "
                                 f"owner's URL) to bring it to {SCHEMA_VERSION}")
        sysid = c.execute("SELECT system_identifier FROM pg_control_system()").fetchone()[0]  # type: ignore[index]
        operator = role == meta.get("pg_operator_role")
        return str(role), operator, int(sysid), str(dbname), "key_fingerprint" not in meta

    def close(self) -> None:
        self.pool.close()
        with self._wlock:
            self.conn.close()

    # --- reads -----------------------------------------------------------------------------------------------

    @contextmanager
    def read(self) -> Iterator[Snapshot]:
        with self.pool.connection() as conn:
            conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            try:
                yield Snapshot(conn, self.operator)
            finally:
                if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                    conn.execute("ROLLBACK")

    # --- writes ----------------------------------------------------------------------------------------------

    def run_write(self, work: Callable[[Tx], T]) -> T:
        if getattr(self._local, "writing", False):
            raise RuntimeError("nested write transaction on the same store")
        req = _Request(work)
        with self._mutex:
            self._pending.append(req)
        with self._wlock:  # whoever holds it runs every request queued so far (group commit)
            if not req.done:
                with self._mutex:
                    batch, self._pending = self._pending[:MAX_GROUP], self._pending[MAX_GROUP:]
                self._local.writing = True
                try:
                    self._run_group(batch)
                finally:
                    self._local.writing = False
        if req.error is not None:
            raise req.error
        return req.result  # type: ignore[no-any-return]

    def _ensure_conn(self) -> None:
        if self.conn.closed or self.conn.broken:
            self.conn = connect(self.url)
            if self.durability == "normal":
                self.conn.execute("SET synchronous_commit = off")

    def _run_group(self, batch: list[_Request]) -> None:
        for attempt in range(1, MAX_ATTEMPTS + 1):
            for r in batch:
                r.error, r.result = None, None
            try:
                self._attempt(batch)
                break
            except _RETRY:
                if attempt == MAX_ATTEMPTS:
                    for r in batch:
                        r.error = r.error or NotCommitted("the write was not committed: serialization failures")
            except psycopg.OperationalError as exc:  # the connection was lost: nothing of the group is stored
                if attempt == MAX_ATTEMPTS or not (self.conn.closed or self.conn.broken):
                    for r in batch:
                        if r.error is None:
                            r.error = NotCommitted(f"the write was not committed: {_first_line(exc)}")
                            r.error.__cause__ = exc
                    break
                self._ensure_conn()
            except BaseException as exc:
                for r in batch:
                    if r.error is None:
                        r.error = NotCommitted(f"the write was not committed: {_first_line(exc)}")
                        r.error.__cause__ = exc
                if not isinstance(exc, Exception):
                    raise
                break
        for r in batch:
            r.done = True

    def _attempt(self, batch: list[_Request]) -> None:
        self._ensure_conn()
        c = self.conn
        marks = AuditMarks()
        retry: BaseException | None = None
        c.execute("BEGIN")
        try:
            c.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
            alone = len(batch) == 1
            for r in batch:
                tx = Tx(c, self.operator, marks, self.indexer)
                if not alone:
                    c.execute("SAVEPOINT w")
                try:
                    r.result = r.work(tx)
                    if tx.audit_top is not None:
                        marks.top = tx.audit_top
                except _RETRY as exc:
                    retry = exc
                    break
                except Exception as exc:
                    r.error = exc
                    if alone:
                        break
                    c.execute("ROLLBACK TO SAVEPOINT w")
                if not alone:
                    c.execute("RELEASE SAVEPOINT w")
            if retry is not None:
                raise retry
            if alone and batch[0].error is not None:
                c.execute("ROLLBACK")
                return
            c.execute("COMMIT")
        except BaseException:
            if c.info.transaction_status != psycopg.pq.TransactionStatus.IDLE and not c.broken:
                c.execute("ROLLBACK")
            raise
        self.commits += 1
        self.committed_writes += sum(r.error is None for r in batch)
        if self.after_commit is not None:
            c.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            try:
                self.after_commit(Snapshot(c, self.operator), marks.base, marks.top)
            finally:
                c.execute("ROLLBACK")

    def run_exclusive(self, work: Callable[[base.Reads], T]) -> T:
        with self._wlock:
            self._ensure_conn()
            self.conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            try:
                return work(Snapshot(self.conn, self.operator))
            finally:
                if self.conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                    self.conn.execute("ROLLBACK")

    def scrub(self, *, compact_index: bool = False) -> None:
        """Deleted rows are gone from every table and index in the deleting transaction (D3); their dead tuples
        stay in the heap until VACUUM reclaims them (autovacuum; only the owner may VACUUM, and memwarden does not
        serve as the owner). Nothing to do here: see docs/ARCHITECTURE.md."""

    def sync(self) -> None:
        """Commits are durable when COMMIT returns (``synchronous_commit = on``, durability=full). With
        durability=normal they are flushed within ``wal_writer_delay``: a synchronous commit of a transaction that
        writes WAL flushes every earlier commit too (before anchoring them)."""
        if self.durability == "normal":
            with self.pool.connection() as c:  # not the write connection: this may run inside after_commit
                c.execute("BEGIN")
                try:
                    c.execute("SET LOCAL synchronous_commit = on")
                    c.execute("SELECT pg_current_xact_id()")
                finally:
                    c.execute("COMMIT")

    def check(self, *, vectors: bool) -> list[tuple[str, str, str]]:
        with self.read() as db:
            return _checks.check(db, self.location, vectors=vectors)

    def file_problems(self) -> list[tuple[str, str]]:
        return []  # a server database: its files are the server's (I6 is the server's configuration)


def open_backend(url: str, durability: str | None = None) -> PostgresBackend:
    return PostgresBackend(url, durability or os.environ.get("MEMWARDEN_DURABILITY") or "full")
