"""SQLite schema. Every table that can hold a memory's content or id is listed in ``MEMORY_TABLES`` so that
deletion (D3) and ``doctor`` can prove nothing is left behind."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memwarden.store.sqlite.backend import Tx

SCHEMA_VERSION = 6  # 2: scope-tagged, stemmed FTS terms (issue 5); memory_vectors. 3: memory_dupkeys. 4: index_log.
# 5: tokens.host_reports_ingest and tokens.expires_at (issue 13; added to older tables by add_columns
# below), host_reports. 6: memories_item (keyed items; an index, created at open on older stores)

_RECORD_COLUMNS = """
    tenant        TEXT    NOT NULL,
    user_id       TEXT    NOT NULL,
    agent         TEXT    NOT NULL,            -- '' = shared by all agents of the user
    kind          TEXT    NOT NULL,
    content       TEXT    NOT NULL,
    content_hash  TEXT    NOT NULL,
    size_bytes    INTEGER NOT NULL,
    metadata      TEXT    NOT NULL,
    confidence    REAL    NOT NULL,
    sensitivity   INTEGER NOT NULL,
    created_at    INTEGER NOT NULL,            -- unix ms
    updated_at    INTEGER NOT NULL,
    expires_at    INTEGER NOT NULL,
    due_at        INTEGER,
    status        TEXT    NOT NULL,            -- active | review
    derived_from  TEXT    NOT NULL,            -- JSON list of ids
    session_id    TEXT    NOT NULL,
    source_type   TEXT    NOT NULL,
    sources       TEXT    NOT NULL,            -- JSON list
    trust         TEXT    NOT NULL,
    approval      TEXT    NOT NULL,
    signature     TEXT    NOT NULL
"""

# The audit events a store looks up by name (queries repeat this exact term so the partial index applies).
CONFIG_EVENTS = "event IN ('token_revoked', 'settings_migrated')"

DDL = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
-- Settings that change behaviour (the embedder, the FTS tokenizer mark, ...): each row is signed (I4), so one
-- written around the API is ignored. ``meta`` keeps only rows nothing trusts: the schema version (informational),
-- the key fingerprint (itself keyed) and the audit head anchor (its own keyed MAC).
CREATE TABLE IF NOT EXISTS settings (
    name      TEXT PRIMARY KEY,
    value     TEXT NOT NULL,
    signature TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS memories (
    id            TEXT    PRIMARY KEY,
    version       INTEGER NOT NULL,
    {_RECORD_COLUMNS}
);
-- Ascending, so each insert lands at the end of its scope's range (SQLite scans it backwards for "newest
-- first"). No expiry index: expiry is filtered inside the scope range, and gc's full scan is rare.
CREATE INDEX IF NOT EXISTS memories_scope
    ON memories (tenant, user_id, agent, kind, status, updated_at, id);
CREATE INDEX IF NOT EXISTS memories_due ON memories (tenant, user_id, agent, due_at) WHERE due_at IS NOT NULL;
-- Keyed items (store/base.py ITEM_KEY; memwarden.items): a lookup by key within a scope is one probe. The key is
-- in the record's signed metadata; this index is derived from it and goes with the row (D3).
-- json_valid first: metadata written around the API may not parse, and must neither fail that write nor a read.
CREATE INDEX IF NOT EXISTS memories_item ON memories (tenant, user_id, agent,
    (CASE WHEN json_valid(metadata) THEN json_extract(metadata, '$.mw_item_key') END))
    WHERE (CASE WHEN json_valid(metadata) THEN json_extract(metadata, '$.mw_item_key') END) IS NOT NULL;

-- Earlier versions of updated records (R1: update keeps history). Deleted with the record (D3).
CREATE TABLE IF NOT EXISTS memory_history (
    id            TEXT    NOT NULL,
    version       INTEGER NOT NULL,
    superseded_at INTEGER NOT NULL,
    {_RECORD_COLUMNS},
    PRIMARY KEY (id, version)
);

-- Full-text index over live records; rowid = memories.rowid. Same transaction as the record. It holds the
-- record's terms (retrieval/tokenize.py: stemmed, stop words dropped, each prefixed with the scope's tag), so a
-- search reads only its scope's postings. Databases of schema 1 (porter tokenizer) are rebuilt on open.
CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5(
    content, tokenize = 'unicode61 remove_diacritics 0'
);
-- A record's near-duplicate key (retrieval/tokenize.py ``TermHasher.dup_key``: its scope and set of distinct terms,
-- keyed-hashed to 64 bits): rowid = memories.rowid. The write-time near-duplicate lookup (Q3) is one index probe
-- here (an FTS5 term lookup probes every index segment: ~5x the cost). Same transaction; deleted with the record.
CREATE TABLE IF NOT EXISTS memory_dupkeys (rowid INTEGER PRIMARY KEY, dup INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS memory_dupkeys_dup ON memory_dupkeys (dup);
-- Every change of an FTS row, in commit order: seq, and the memories.rowid whose terms changed (row = -1: the
-- whole index was rebuilt). Searches keep per-scope postings in memory (retrieval/postings.py) and read here
-- what changed since they last looked, from any process. Holds integers only, never a memory id or text; the
-- oldest entries are dropped as it grows (a reader that far behind rebuilds its postings).
CREATE TABLE IF NOT EXISTS index_log (seq INTEGER PRIMARY KEY, row INTEGER NOT NULL);
CREATE TRIGGER IF NOT EXISTS index_log_prune AFTER INSERT ON index_log WHEN NEW.seq % 4096 = 0 BEGIN
    DELETE FROM index_log WHERE seq <= NEW.seq - 65536;
END;
-- Per-term document counts (per scope, since terms carry the scope tag): BM25's IDF within the scope.
CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts_vocab USING fts5vocab(memories_fts, 'row');

-- One embedding per record (derived data, Q2): rowid = memories.rowid, the embedder's fingerprint, and the
-- vector (float32, NULL when the embedder failed). Scope and session are kept for the scope-filtered scan and
-- for context expansion (neighbouring episodes of a session). Same transaction as the record; deleted with it.
CREATE TABLE IF NOT EXISTS memory_vectors (
    rowid      INTEGER PRIMARY KEY,
    tenant     TEXT NOT NULL,
    user_id    TEXT NOT NULL,
    agent      TEXT NOT NULL,
    session_id TEXT NOT NULL,
    embedder   TEXT NOT NULL,
    vec        BLOB
);
CREATE INDEX IF NOT EXISTS memory_vectors_scope ON memory_vectors (tenant, user_id, agent, session_id);

-- derived_from as rows, so deleting an input finds what was derived from it (D3).
CREATE TABLE IF NOT EXISTS memory_links (
    derived_id TEXT NOT NULL,
    source_id  TEXT NOT NULL,
    PRIMARY KEY (derived_id, source_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS memory_links_source ON memory_links (source_id);
-- Records with a non-empty derived_from, so deletion can also follow the signed column, not only the links.
CREATE INDEX IF NOT EXISTS memories_derived ON memories (id) WHERE derived_from != '[]';

-- Live usage per scope and kind, kept by triggers so capacity checks (D1) cost O(1).
CREATE TABLE IF NOT EXISTS scope_usage (
    tenant TEXT NOT NULL, user_id TEXT NOT NULL, agent TEXT NOT NULL, kind TEXT NOT NULL,
    entries INTEGER NOT NULL, bytes INTEGER NOT NULL,
    PRIMARY KEY (tenant, user_id, agent, kind)
) WITHOUT ROWID;
-- Sizes come from the (signed) content itself, not from the size_bytes column.
CREATE TRIGGER IF NOT EXISTS memories_usage_ins AFTER INSERT ON memories BEGIN
    INSERT INTO scope_usage VALUES (NEW.tenant, NEW.user_id, NEW.agent, NEW.kind, 1,
                                    length(CAST(NEW.content AS BLOB)))
    ON CONFLICT DO UPDATE SET entries = entries + 1, bytes = bytes + length(CAST(NEW.content AS BLOB));
END;
CREATE TRIGGER IF NOT EXISTS memories_usage_del AFTER DELETE ON memories BEGIN
    UPDATE scope_usage SET entries = entries - 1, bytes = bytes - length(CAST(OLD.content AS BLOB))
    WHERE tenant = OLD.tenant AND user_id = OLD.user_id AND agent = OLD.agent AND kind = OLD.kind;
END;
CREATE TRIGGER IF NOT EXISTS memories_usage_upd AFTER UPDATE OF content ON memories BEGIN
    UPDATE scope_usage SET bytes = bytes - length(CAST(OLD.content AS BLOB)) + length(CAST(NEW.content AS BLOB))
    WHERE tenant = OLD.tenant AND user_id = OLD.user_id AND agent = OLD.agent AND kind = OLD.kind;
END;

CREATE TABLE IF NOT EXISTS sessions (
    id              TEXT PRIMARY KEY,
    tenant          TEXT NOT NULL,
    user_id         TEXT NOT NULL,
    agent           TEXT NOT NULL,
    started_at      INTEGER NOT NULL,
    ended_at        INTEGER,
    clearance       INTEGER NOT NULL,
    workspace       TEXT NOT NULL,
    snapshot_sha256 TEXT
);

-- Credentials (T3): operator and agent tokens, stored as HMAC(key, token) only; each row is signed so that
-- editing its role, tenant or scope around the API invalidates it.
CREATE TABLE IF NOT EXISTS tokens (
    id          TEXT PRIMARY KEY,
    role        TEXT NOT NULL,               -- operator | agent
    tenant      TEXT NOT NULL,
    user_id     TEXT,                        -- operator: optional narrowing; agent: its user
    agent       TEXT,                        -- agent tokens only
    name        TEXT NOT NULL,
    token_hash  TEXT NOT NULL UNIQUE,
    created_at  INTEGER NOT NULL,
    revoked_at  INTEGER,
    signature   TEXT NOT NULL,
    host_reports_ingest INTEGER NOT NULL DEFAULT 0,  -- agent tokens: the host reports what its sessions ingest
    expires_at  INTEGER                          -- unix ms, NULL: until revoked
);

-- What hosts reported their sessions ingested, across processes (issue 13: ``memwarden hook``, ``POST
-- /v1/ingest``): one signed row per report that taints, scoped by tenant/user/agent. Every open session of the
-- scope reads the rows after the last one it saw before each write (memwarden.host_ingest), and seq is signed too.
CREATE TABLE IF NOT EXISTS host_reports (
    seq          INTEGER PRIMARY KEY,
    tenant       TEXT    NOT NULL,
    user_id      TEXT    NOT NULL,
    agent        TEXT    NOT NULL,            -- '' = the user's shared scope
    reported_at  INTEGER NOT NULL,            -- unix ms
    actor        TEXT    NOT NULL,            -- who reported it (agent:<token name>, host:local)
    host_session TEXT    NOT NULL,            -- the host's own session id, as it gave it ('' if none)
    tool         TEXT    NOT NULL,
    reason       TEXT    NOT NULL,
    sources      TEXT    NOT NULL,            -- JSON list
    signature    TEXT    NOT NULL
);
CREATE INDEX IF NOT EXISTS host_reports_scope ON host_reports (tenant, user_id, agent, seq);

-- Append-only, hash-chained (A1). hash = HMAC(key, prev_hash || fields); seq has no gaps.
CREATE TABLE IF NOT EXISTS audit (
    seq        INTEGER PRIMARY KEY,
    ts         INTEGER NOT NULL,
    event      TEXT NOT NULL,
    tenant     TEXT,
    user_id    TEXT,
    agent      TEXT,
    session_id TEXT,
    memory_id  TEXT,
    actor      TEXT NOT NULL,
    details    TEXT NOT NULL,
    prev_hash  TEXT NOT NULL,
    hash       TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS audit_memory ON audit (memory_id) WHERE memory_id IS NOT NULL;
CREATE TRIGGER IF NOT EXISTS audit_no_update BEFORE UPDATE ON audit
    BEGIN SELECT RAISE(ABORT, 'audit log is append-only'); END;
CREATE TRIGGER IF NOT EXISTS audit_no_delete BEFORE DELETE ON audit
    BEGIN SELECT RAISE(ABORT, 'audit log is append-only'); END;
-- A2 blast radius is read from the chained rows themselves (details.ids of read/injected events).
CREATE INDEX IF NOT EXISTS audit_read_events ON audit (seq) WHERE event IN ('read', 'injected');
-- Revocations and settings migrations are looked up at open and at authentication: a small partial index.
CREATE INDEX IF NOT EXISTS audit_config_events ON audit (event, seq) WHERE {CONFIG_EVENTS};
"""

# Tables that hold a memory's content (or rows keyed by its id) and must be empty of it after delete (D3).
# The audit tables are excluded on purpose: they keep a tombstone (id, hash, who, when), never content.
MEMORY_TABLES: dict[str, str] = {
    "memories": "id",
    "memory_history": "id",
    "memory_links": "derived_id",
    "memory_vectors": "rowid",  # keyed by memories.rowid, like memories_fts
    "memory_dupkeys": "rowid",
}

# Columns added to tables of older stores (CREATE TABLE IF NOT EXISTS leaves an existing table as it is):
# table -> (column, its definition). Their values are signed by the module that owns the table; rows made
# before the column existed are re-signed by the store's upgrade (memwarden.upgrade).
ADDED_COLUMNS: dict[str, tuple[tuple[str, str], ...]] = {
    "tokens": (("host_reports_ingest", "INTEGER NOT NULL DEFAULT 0"), ("expires_at", "INTEGER")),
}


def add_columns(tx: Tx) -> list[str]:
    """Add :data:`ADDED_COLUMNS` missing from an existing table (the open's schema transaction); returns
    ``table.column`` for each added."""
    added = []
    for table, columns in ADDED_COLUMNS.items():
        have = {row[1] for row in tx.execute(f"PRAGMA table_info({table})").fetchall()}
        for name, definition in columns:
            if name not in have:
                tx.execute(f"ALTER TABLE {table} ADD COLUMN {name} {definition}")
                added.append(f"{table}.{name}")
    return added
