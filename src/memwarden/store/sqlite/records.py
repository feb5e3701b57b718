"""SQL for records and everything derived from them: the ``memories`` row, its history, its ``derived_from``
links, and its index entries (FTS5 terms, near-duplicate key, vector, ``index_log``) — written, rewritten and
deleted in the record's own transaction (Q1, D3). The :class:`~memwarden.retrieval.index.Indexer` says what the
entries are; this module stores them. Every read of records is shaped by a ``View`` (views.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from memwarden.store.base import INDEX_REBUILT, RECORD_COLUMNS, Order, RecordRow, View
from memwarden.store.rows import record_to_row
from memwarden.store.sqlite.views import ITEM_NS_SQL, ORDER_SQL, SELECT_COLS, after_key, marks, where

if TYPE_CHECKING:
    from memwarden.records import Record
    from memwarden.scope import Scope
    from memwarden.store.sqlite.backend import Handle, Tx

_INSERT_SQL = f"INSERT INTO memories ({', '.join(RECORD_COLUMNS)}) VALUES ({marks(len(RECORD_COLUMNS))})"
_UPDATE_SQL = "UPDATE memories SET " + ", ".join(f"{c} = ?" for c in RECORD_COLUMNS[1:]) + " WHERE id = ?"
_HISTORY_SQL = (
    f"INSERT INTO memory_history (superseded_at, {', '.join(RECORD_COLUMNS)}) "
    f"SELECT ?, {', '.join(RECORD_COLUMNS)} FROM memories WHERE id = ?"
)
FTS_DDL = "CREATE VIRTUAL TABLE memories_fts USING fts5(content, tokenize = 'unicode61 remove_diacritics 0')"
LOG_SQL = "INSERT INTO index_log (row) VALUES (?)"  # readers of the FTS terms learn what changed (postings.py)
REBUILT = INDEX_REBUILT  # an index_log row meaning "the whole FTS table was rebuilt"
REBUILD_BATCH = 256  # records per executemany (and per embedder call) of a rebuild

# --- reads ----------------------------------------------------------------------------------------------------


def records(db: Handle, view: View, order: Order = Order.ANY, limit: int | None = None, offset: int = 0,
            after: tuple[Any, ...] | None = None) -> list[RecordRow]:
    w, params = where(view)
    if after is not None:
        page, page_params = after_key(order, after)
        w += f" AND {page}"
        params += page_params
    sql = f"SELECT {SELECT_COLS} FROM memories m WHERE {w}{ORDER_SQL[order]}"
    if limit is not None:
        sql += " LIMIT ?"
        params.append(limit)
        if offset:
            sql += " OFFSET ?"
            params.append(offset)
    return db.execute(sql, params).fetchall()


def count(db: Handle, view: View) -> int:
    w, params = where(view)
    return int(db.execute(f"SELECT count(*) FROM memories m WHERE {w}", params).fetchone()[0])


def agents(db: Handle, view: View) -> list[str]:
    w, params = where(view)
    return [str(r[0]) for r in db.execute(f"SELECT DISTINCT m.agent FROM memories m WHERE {w} ORDER BY m.agent",
                                          params).fetchall()]


def item_namespaces(db: Handle, view: View, limit: int) -> list[str]:
    w, params = where(view)
    return [str(r[0]) for r in db.execute(f"SELECT DISTINCT {ITEM_NS_SQL.format(a='m')} AS ns FROM memories m"
                                          f" WHERE {w} AND ns IS NOT NULL ORDER BY ns LIMIT ?",
                                          (*params, limit)).fetchall()]


def users(db: Handle, view: View, after: str, limit: int) -> list[str]:
    w, params = where(view)
    return [str(r[0]) for r in db.execute(f"SELECT DISTINCT m.user_id FROM memories m WHERE {w} AND m.user_id > ?"
                                          " ORDER BY m.user_id LIMIT ?", (*params, after, limit)).fetchall()]


def history(db: Handle, memory_id: str) -> list[tuple[int, int, str, str, str]]:
    return db.execute("SELECT version, superseded_at, content, session_id, source_type FROM memory_history"
                      " WHERE id = ? ORDER BY version", (memory_id,)).fetchall()


def usage(db: Handle, scope: Scope, kind: str, *, held: bool = False) -> tuple[int, int]:
    """D1: every status from ``scope_usage`` (kept by triggers: O(1)), or the held rows (an index range)."""
    if held:
        row = db.execute("SELECT count(*), coalesce(sum(length(CAST(m.content AS BLOB))), 0) FROM memories m"
                         " WHERE m.tenant=? AND m.user_id=? AND m.agent=? AND m.kind=? AND m.status = 'review'",
                         (scope.tenant, scope.user, scope.agent_key, kind)).fetchone()
        return int(row[0]), int(row[1])
    row = db.execute("SELECT entries, bytes FROM scope_usage WHERE tenant=? AND user_id=? AND agent=? AND kind=?",
                     (scope.tenant, scope.user, scope.agent_key, kind)).fetchone()
    return (int(row[0]), int(row[1])) if row else (0, 0)


def repeats(db: Handle, view: View, dup_keys: Sequence[int], exclude: str | None, limit: int = 16
            ) -> list[RecordRow]:
    """One index probe on ``memory_dupkeys`` drives: nothing else is read when no record has the key."""
    w, params = where(view)
    return db.execute(
        f"SELECT {SELECT_COLS} FROM memory_dupkeys d CROSS JOIN memories m NOT INDEXED ON m.rowid = d.rowid"
        f" WHERE d.dup IN ({marks(len(dup_keys))}) AND {w} AND (m.trust = 'untrusted' OR m.status = 'review')"
        " AND m.id != ? LIMIT ?", (*dup_keys, *params, exclude or "", limit)).fetchall()


def near_duplicates(db: Handle, scope: Scope, kind: str, sensitivity: int, dup_key: int, now: int, limit: int = 8
                    ) -> list[tuple[RecordRow, str]]:
    if db.execute("SELECT 1 FROM memory_dupkeys WHERE dup = ? LIMIT 1", (dup_key,)).fetchone() is None:
        return []  # the common case, in one index probe: no record anywhere has this key
    db.flush_fts()  # a candidate written earlier in this transaction may still have its FTS row queued
    # the key's rows drive, then each candidate's row and its FTS terms by rowid
    rows = db.execute(
        f"SELECT {SELECT_COLS}, f.content FROM memory_dupkeys d CROSS JOIN memories m NOT INDEXED"
        " ON m.rowid = d.rowid CROSS JOIN memories_fts f ON f.rowid = d.rowid"
        " WHERE d.dup = ? AND m.tenant = ? AND m.user_id = ? AND m.agent = ? AND m.status = 'active'"
        " AND m.expires_at > ? AND m.sensitivity = ? AND m.kind = ? LIMIT ?",
        (dup_key, scope.tenant, scope.user, scope.agent_key, now, sensitivity, kind, limit)).fetchall()
    return [(tuple(r[:-1]), str(r[-1])) for r in rows]


def derived(db: Handle, memory_id: str, tenant: str, user: str) -> list[RecordRow]:
    """Only the signed ``derived_from`` column decides (I4): ``memory_links`` is an unsigned index, never asked."""
    return db.execute(
        f"SELECT {SELECT_COLS} FROM memories m INDEXED BY memories_derived WHERE m.derived_from != '[]'"
        " AND m.tenant = ? AND m.user_id = ? AND EXISTS (SELECT 1 FROM"
        " json_each(CASE WHEN json_valid(m.derived_from) THEN m.derived_from ELSE '[]' END) j"
        " WHERE j.value = ?) ORDER BY m.id", (tenant, user, memory_id)).fetchall()


def lowest_extracted(db: Handle, scope: Scope, kind: str, source_marker: str) -> tuple[str, float] | None:
    row = db.execute("SELECT id, confidence FROM memories WHERE tenant=? AND user_id=? AND agent=? AND kind=?"
                     " AND status = 'active' AND source_type = 'model' AND sources LIKE ?"
                     " ORDER BY confidence, updated_at, id LIMIT 1",
                     (scope.tenant, scope.user, scope.agent_key, kind, f'%"{source_marker}%')).fetchone()
    return None if row is None else (str(row[0]), row[1])


def folded(db: Handle, ids: Sequence[str]) -> set[str]:
    out: set[str] = set()
    for i in range(0, len(ids), 500):
        chunk = list(ids[i:i + 500])
        rows = db.execute(
            "SELECT l.source_id FROM memory_links l JOIN memories d ON d.id = l.derived_id"
            f" WHERE d.source_type = 'consolidation' AND l.source_id IN ({marks(len(chunk))})", chunk).fetchall()
        out.update(str(r[0]) for r in rows)
    return out


def row_key(db: Handle, memory_id: str) -> int | None:
    row = db.execute("SELECT rowid FROM memories WHERE id = ?", (memory_id,)).fetchone()
    return None if row is None else int(row[0])


# --- writes (inside a transaction) --------------------------------------------------------------------------


def insert(tx: Tx, record: Record) -> None:
    cur = tx.execute(_INSERT_SQL, record_to_row(record))
    _index_add(tx, int(cur.lastrowid or 0), record)  # FTS terms, near-duplicate key, vector: same transaction
    if record.derived_from:
        tx.executemany("INSERT OR IGNORE INTO memory_links VALUES (?, ?)",
                       [(record.id, s) for s in record.derived_from])


def replace(tx: Tx, record: Record, superseded_at: int) -> None:
    tx.execute(_HISTORY_SQL, (superseded_at, record.id))
    row = record_to_row(record)
    tx.execute(_UPDATE_SQL, (*row[1:], record.id))
    rowid = tx.execute("SELECT rowid FROM memories WHERE id = ?", (record.id,)).fetchone()[0]
    _index_update(tx, rowid, record)


def delete(tx: Tx, memory_id: str) -> None:
    found = tx.execute("SELECT rowid FROM memories WHERE id = ?", (memory_id,)).fetchone()
    if found:
        _index_remove(tx, found[0])  # FTS row and vector
    tx.execute("DELETE FROM memories WHERE id = ?", (memory_id,))
    tx.execute("DELETE FROM memory_history WHERE id = ?", (memory_id,))
    tx.execute("DELETE FROM memory_links WHERE derived_id = ?", (memory_id,))
    tx.execute("DELETE FROM memory_links WHERE source_id = ?", (memory_id,))


def _index_add(tx: Tx, rowid: int, r: Record) -> None:
    ix = tx.indexer
    p = r.provenance
    tx.queue_fts(rowid, ix.index_text(r))  # inserted with the transaction's other FTS rows (FtsQueue)
    tx.execute(LOG_SQL, (rowid,))
    tx.execute("INSERT INTO memory_dupkeys (rowid, dup) VALUES (?, ?)", (rowid, ix.dup_key(r)))
    if not ix.embedder.dim:
        return  # no vectors configured (the default): nothing more to derive
    tx.execute("INSERT INTO memory_vectors (rowid, tenant, user_id, agent, session_id, embedder, vec)"
               " VALUES (?,?,?,?,?,?,?)", (rowid, p.tenant, p.user, p.agent, p.session_id,
                                           ix.embedder.fingerprint, ix.vector(r.content)))


def _index_update(tx: Tx, rowid: int, r: Record) -> None:
    ix = tx.indexer
    p = r.provenance
    tx.flush_fts()  # the row may still be queued
    tx.execute("UPDATE memories_fts SET content = ? WHERE rowid = ?", (ix.index_text(r), rowid))
    tx.execute(LOG_SQL, (rowid,))
    tx.execute("INSERT OR REPLACE INTO memory_dupkeys (rowid, dup) VALUES (?, ?)", (rowid, ix.dup_key(r)))
    if not ix.embedder.dim:  # no vectors configured: an old version's vector must not outlive its text
        tx.execute("DELETE FROM memory_vectors WHERE rowid = ?", (rowid,))
        return
    tx.execute("INSERT OR REPLACE INTO memory_vectors (rowid, tenant, user_id, agent, session_id, embedder,"
               " vec) VALUES (?,?,?,?,?,?,?)", (rowid, p.tenant, p.user, p.agent, p.session_id,
                                               ix.embedder.fingerprint, ix.vector(r.content)))


def _index_remove(tx: Tx, rowid: int) -> None:
    tx.delete_fts(rowid)  # and the index is compacted before the COMMIT: none of its terms stay (D3)
    tx.execute(LOG_SQL, (rowid,))
    tx.execute("DELETE FROM memory_dupkeys WHERE rowid = ?", (rowid,))
    tx.execute("DELETE FROM memory_vectors WHERE rowid = ?", (rowid,))


def rebuild_indexes(tx: Tx, *, vectors: bool) -> dict[str, int]:
    """Recreate the FTS5 table with this version's tokenizer and (re)compute every vector with the current
    embedder, from the records' text. Held and expired records are indexed too (reads filter them in SQL)."""
    ix = tx.indexer
    tx.flush_fts()
    tx.execute("DROP TABLE IF EXISTS memories_fts_vocab")
    tx.execute("DROP TABLE IF EXISTS memories_fts")
    tx.execute(FTS_DDL)
    tx.execute(LOG_SQL, (REBUILT,))  # every reader's in-memory postings are rebuilt
    tx.execute("CREATE VIRTUAL TABLE memories_fts_vocab USING fts5vocab(memories_fts, 'row')")
    tx.execute("DELETE FROM memory_dupkeys")
    vectors = vectors and ix.embedder.dim > 0
    if vectors or not ix.embedder.dim:
        tx.execute("DELETE FROM memory_vectors")
    rows: list[Any] = tx.execute("SELECT rowid, tenant, user_id, agent, session_id, content FROM memories"
                                 " ORDER BY rowid").fetchall()
    missing = 0
    h = ix.hasher
    for i in range(0, len(rows), REBUILD_BATCH):
        chunk = rows[i:i + REBUILD_BATCH]
        tx.executemany("INSERT INTO memories_fts (rowid, content) VALUES (?, ?)",
                       [(rid, h.index_text(h.tag(t, u, a), c)) for rid, t, u, a, _s, c in chunk])
        tx.executemany("INSERT INTO memory_dupkeys (rowid, dup) VALUES (?, ?)",
                       [(rid, h.dup_key(h.tag(t, u, a), c)) for rid, t, u, a, _s, c in chunk])
        if not vectors:
            continue
        vecs = ix.vectors([c for *_x, c in chunk])
        if vecs is None:
            missing += len(chunk)
        tx.executemany(
            "INSERT INTO memory_vectors (rowid, tenant, user_id, agent, session_id, embedder, vec)"
            " VALUES (?,?,?,?,?,?,?)",
            [(rid, t, u, a, s, ix.embedder.fingerprint, None if vecs is None else vecs[j])
             for j, (rid, t, u, a, s, _c) in enumerate(chunk)])
    return {"records": len(rows), "without_vector": missing}  # the caller records TOKENIZER_VERSION
