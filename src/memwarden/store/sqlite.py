"""Embedded SQLite backend: WAL, ``synchronous=FULL`` by default (an acknowledged write is on disk, I3), one connection
per :class:`SqliteBackend` guarded by a lock, ``BEGIN IMMEDIATE`` for every write so concurrent writers (threads or
processes) serialise instead of losing updates (I2).

Scope (S1–S3) is always part of the SQL ``WHERE`` built by :func:`scope_clause`; no read filters in Python.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import unquote, urlparse

from platformdirs import user_data_dir

from memwarden.errors import UnsupportedURL
from memwarden.records import Provenance, Record
from memwarden.scope import Scope
from memwarden.store.schema import DDL, SCHEMA_VERSION

COLUMNS = (
    "id", "version", "tenant", "user_id", "agent", "kind", "content", "content_hash", "size_bytes", "metadata",
    "confidence", "sensitivity", "created_at", "updated_at", "expires_at", "due_at", "status", "derived_from",
    "session_id", "source_type", "sources", "trust", "approval", "signature",
)
SELECT_COLS = ", ".join(f"m.{c}" for c in COLUMNS)
_INSERT_SQL = f"INSERT INTO memories ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})"
_UPDATE_SQL = "UPDATE memories SET " + ", ".join(f"{c} = ?" for c in COLUMNS[1:]) + " WHERE id = ?"
_HISTORY_SQL = (
    f"INSERT INTO memory_history (superseded_at, {', '.join(COLUMNS)}) "
    f"SELECT ?, {', '.join(COLUMNS)} FROM memories WHERE id = ?"
)


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


def scope_clause(scope: Scope, read_shared: bool, alias: str = "m") -> tuple[str, list[object]]:
    """SQL predicate restricting rows to the caller's scope (S1, S3)."""
    if read_shared and not scope.is_shared:
        return (f"{alias}.tenant = ? AND {alias}.user_id = ? AND {alias}.agent IN (?, '')",
                [scope.tenant, scope.user, scope.agent_key])
    return f"{alias}.tenant = ? AND {alias}.user_id = ? AND {alias}.agent = ?", [scope.tenant, scope.user,
                                                                                scope.agent_key]


def decode_row(row: Sequence[object]) -> Record | None:
    """``row_to_record`` for rows that may have been edited around the API: malformed → ``None`` (refused)."""
    try:
        rec = row_to_record(row)
    except (ValueError, TypeError, AttributeError):  # json.JSONDecodeError is a ValueError
        return None
    ok = (isinstance(rec.metadata, dict) and all(isinstance(x, str) for x in rec.derived_from)
          and all(isinstance(x, str) for x in rec.provenance.sources) and 0 <= rec.sensitivity <= 3)
    return rec if ok else None


def row_to_record(row: Sequence[object]) -> Record:
    (id_, version, tenant, user, agent, kind, content, chash, _size, metadata, confidence, sensitivity, created,
     updated, expires, due, status, derived, session_id, source_type, sources, trust, approval, sig) = row
    return Record(
        id=str(id_), version=int(version), kind=str(kind), content=str(content), content_hash=str(chash),
        metadata=json.loads(str(metadata)), confidence=float(confidence), sensitivity=int(sensitivity),
        created_at=int(created), updated_at=int(updated), expires_at=int(expires),
        due_at=None if due is None else int(due), status=str(status),
        derived_from=tuple(json.loads(str(derived))),
        provenance=Provenance(
            tenant=str(tenant), user=str(user), agent=str(agent), session_id=str(session_id),
            source_type=str(source_type), sources=tuple(json.loads(str(sources))), trust=str(trust),
            approval=str(approval),
        ),
        signature=str(sig),
    )


def _json(value: object) -> str:
    if not value:  # the common case: no metadata, no sources, nothing derived
        return "{}" if isinstance(value, dict) else "[]"
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def record_to_row(r: Record) -> tuple[object, ...]:
    p = r.provenance
    return (
        r.id, r.version, p.tenant, p.user, p.agent, r.kind, r.content, r.content_hash, r.size_bytes,
        _json(r.metadata), r.confidence, r.sensitivity, r.created_at, r.updated_at, r.expires_at, r.due_at,
        r.status, _json(list(r.derived_from)), p.session_id, p.source_type, _json(list(p.sources)), p.trust,
        p.approval, r.signature,
    )


# durability → PRAGMA synchronous (WAL mode). Both survive a killed process (kill -9) with every acknowledged
# write; "full" also survives power loss and OS crashes, at the cost of an fsync per commit.
DURABILITY = {"full": "FULL", "normal": "NORMAL"}


def resolve_durability(durability: str | None) -> str:
    value = durability or os.environ.get("MEMWARDEN_DURABILITY") or "full"
    if value not in DURABILITY:
        raise UnsupportedURL(f"durability must be one of {', '.join(DURABILITY)}; got {value!r}")
    return value


class SqliteBackend:
    def __init__(self, path: Path, durability: str = "full") -> None:
        self.path = path
        self.durability = resolve_durability(durability)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30.0)
        self.lock = threading.RLock()
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
        c.execute("PRAGMA secure_delete = ON")  # freed pages are zeroed: deleted content leaves no remnant (D3)
        with self.write() as tx:
            tx.executescript_safe(DDL)
            tx.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))

    def close(self) -> None:
        with self.lock:
            self.conn.close()

    @contextmanager
    def write(self) -> Iterator[Tx]:
        """One durable write transaction (``BEGIN IMMEDIATE`` … ``COMMIT``); rolled back on any exception."""
        with self.lock:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield Tx(self.conn)
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """A consistent read snapshot (``BEGIN DEFERRED``)."""
        with self.lock:
            self.conn.execute("BEGIN")
            try:
                yield self.conn
            finally:
                self.conn.execute("COMMIT")

    def scrub(self, *, compact_index: bool = False) -> None:
        """After deletes: fold the WAL back and truncate it so old frames holding deleted content are gone;
        with ``compact_index``, also rewrite the FTS5 index so no term of a deleted record survives (D3).
        Best effort: a concurrent reader can keep a checkpoint from completing; the next scrub finishes it."""
        with self.lock:
            if compact_index:
                self.conn.execute("INSERT INTO memories_fts (memories_fts) VALUES ('optimize')")
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def query(self, sql: str, params: Sequence[object] = ()) -> list[tuple[object, ...]]:
        """One read statement under the connection lock (no transaction needed for a single SELECT)."""
        with self.lock:
            return self.conn.execute(sql, params).fetchall()

    # --- record primitives (called inside ``write()``) -------------------------------------------------------

    @staticmethod
    def insert(tx: Tx, r: Record) -> None:
        cur = tx.execute(_INSERT_SQL, record_to_row(r))
        tx.execute("INSERT INTO memories_fts (rowid, content) VALUES (?, ?)", (cur.lastrowid, r.content))
        if r.derived_from:
            tx.executemany("INSERT OR IGNORE INTO memory_links VALUES (?, ?)",
                           [(r.id, s) for s in r.derived_from])

    @staticmethod
    def replace(tx: Tx, r: Record, superseded_at: int) -> None:
        """Keep the current version in history, then overwrite it with ``r`` (same id, next version)."""
        tx.execute(_HISTORY_SQL, (superseded_at, r.id))
        row = record_to_row(r)
        tx.execute(_UPDATE_SQL, (*row[1:], r.id))
        rowid = tx.execute("SELECT rowid FROM memories WHERE id = ?", (r.id,)).fetchone()[0]
        tx.execute("UPDATE memories_fts SET content = ? WHERE rowid = ?", (r.content, rowid))

    @staticmethod
    def delete(tx: Tx, memory_id: str) -> None:
        """Remove one record from every table that holds it (D3). Derived records are the caller's job."""
        found = tx.execute("SELECT rowid FROM memories WHERE id = ?", (memory_id,)).fetchone()
        if found:
            tx.execute("DELETE FROM memories_fts WHERE rowid = ?", (found[0],))
        tx.execute("DELETE FROM memories WHERE id = ?", (memory_id,))
        tx.execute("DELETE FROM memory_history WHERE id = ?", (memory_id,))
        tx.execute("DELETE FROM memory_links WHERE derived_id = ?", (memory_id,))

    @staticmethod
    def derived_from(tx: Tx, memory_id: str) -> list[str]:
        """Records derived from ``memory_id``: by the link table and by the signed ``derived_from`` column."""
        rows = tx.execute(
            "SELECT derived_id FROM memory_links WHERE source_id = ?"
            " UNION SELECT m.id FROM memories m,"
            " json_each(CASE WHEN json_valid(m.derived_from) THEN m.derived_from ELSE '[]' END) j"
            " WHERE m.derived_from != '[]' AND j.value = ?", (memory_id, memory_id)).fetchall()
        return sorted(r[0] for r in rows)


class Tx:
    """A thin handle on the connection inside one transaction (so callers cannot commit half-way)."""

    __slots__ = ("_c",)

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._c = conn

    def execute(self, sql: str, params: Sequence[object] = ()) -> sqlite3.Cursor:
        return self._c.execute(sql, params)

    def executemany(self, sql: str, rows: Sequence[Sequence[object]]) -> sqlite3.Cursor:
        return self._c.executemany(sql, rows)

    def executescript_safe(self, script: str) -> None:
        """Run DDL statement by statement (``executescript`` would COMMIT our transaction)."""
        stmt = ""
        for line in script.splitlines(keepends=True):
            stmt += line
            if sqlite3.complete_statement(stmt):
                self._c.execute(stmt)
                stmt = ""


def open_backend(url: str | os.PathLike[str] | None, durability: str | None = None) -> SqliteBackend:
    return SqliteBackend(resolve_url(url), resolve_durability(durability))
