"""SQL for records and everything derived from them on PostgreSQL: the ``memories`` row, its history, its
``derived_from`` links and its index entries (``memory_terms``: keyed terms and their tsvector;
``memory_dupkeys``; ``memory_vectors``; ``index_log``), written, rewritten and deleted in the record's own
transaction (Q1, D3). Every statement runs with the policies' scope set to the record's (``Handle.use``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from memwarden.store.base import INDEX_REBUILT, ORDER_KEYS, RECORD_COLUMNS, Order, RecordRow, View
from memwarden.store.postgres.views import (
    ITEM_NS_SQL,
    ORDER_SQL,
    SELECT_COLS,
    after_key,
    by_id,
    marks,
    reach,
    scope_reach,
    scope_where_of,
    where,
)
from memwarden.store.rows import record_to_row

if TYPE_CHECKING:
    from memwarden.records import Record
    from memwarden.scope import Scope
    from memwarden.store.postgres.backend import Handle, Tx

_INSERT_SQL = (f"INSERT INTO memories ({', '.join(RECORD_COLUMNS)}) VALUES ({marks(len(RECORD_COLUMNS))})"
               " RETURNING rk")
_HISTORY_SQL = (
    f"INSERT INTO memory_history (superseded_at, {', '.join(RECORD_COLUMNS)}) "
    f"SELECT %s, {', '.join(RECORD_COLUMNS)} FROM memories WHERE id = %s"
)
LOG_SQL = "INSERT INTO index_log (row) VALUES (%s)"
REBUILD_BATCH = 256
_COL = {c: i for i, c in enumerate(RECORD_COLUMNS)}

# --- reads ----------------------------------------------------------------------------------------------------


def _tenants(db: Handle, view: View) -> list[str]:
    """The tenants an unscoped view's statements run for, one at a time (the application role's policies never
    admit two tenants in one statement)."""
    if view.ids is not None:
        return [str(r[0]) for r in db.execute("SELECT memwarden_id_tenants(%s)", (list(view.ids),)).fetchall()]
    return [str(r[0]) for r in db.execute("SELECT name FROM tenants ORDER BY name", ()).fetchall()]


def _each_tenant(db: Handle, view: View) -> list[tuple[View, Any]]:
    """(view, policies' scope) pairs to run: the view itself, or one per tenant for an unscoped view."""
    r = reach(view)
    if r is not None:
        return [(view, r)]
    if db.operator:
        return [(view, ("all", "", "", ()))]
    return [(view._replace(tenant=t), ("tenant", t, "", ())) for t in _tenants(db, view)]


def _sort_key(order: Order) -> Any:
    cols = [_COL[c] for c in ORDER_KEYS[order]]

    def key(row: Sequence[Any]) -> tuple[Any, ...]:
        return tuple((row[i] is None, row[i]) for i in cols)  # NULLs last, as PostgreSQL sorts ascending
    return key


def records(db: Handle, view: View, order: Order = Order.ANY, limit: int | None = None, offset: int = 0,
            after: tuple[Any, ...] | None = None) -> list[RecordRow]:
    runs = _each_tenant(db, view)
    out: list[RecordRow] = []
    for v, r in runs:
        w, params = where(v)
        if after is not None:
            page, page_params = after_key(order, after)
            w += f" AND {page}"
            params += page_params
        sql = f"SELECT {SELECT_COLS} FROM memories m WHERE {w}{ORDER_SQL[order]}"
        if limit is not None:
            sql += " LIMIT %s"
            params.append(limit + (offset if len(runs) > 1 else 0))
            if offset and len(runs) == 1:
                sql += " OFFSET %s"
                params.append(offset)
        db.use(r)
        out += db.execute(sql, params).fetchall()
    if len(runs) > 1:  # merged across tenants: the order, offset and limit over all of them
        if order is not Order.ANY:
            out.sort(key=_sort_key(order), reverse=order is Order.NEWEST)
        out = out[offset:] if limit is None else out[offset:offset + limit]
    return out


def count(db: Handle, view: View) -> int:
    total = 0
    for v, r in _each_tenant(db, view):
        w, params = where(v)
        db.use(r)
        total += int(db.execute(f"SELECT count(*) FROM memories m WHERE {w}", params).fetchone()[0])
    return total


def agents(db: Handle, view: View) -> list[str]:
    out: set[str] = set()
    for v, r in _each_tenant(db, view):
        w, params = where(v)
        db.use(r)
        out.update(str(x[0]) for x in db.execute(f"SELECT DISTINCT m.agent FROM memories m WHERE {w}",
                                                 params).fetchall())
    return sorted(out)


def item_namespaces(db: Handle, view: View, limit: int) -> list[str]:
    out: set[str] = set()
    ns = ITEM_NS_SQL.format(a="m")
    for v, r in _each_tenant(db, view):
        w, params = where(v)
        db.use(r)
        out.update(str(x[0]) for x in db.execute(
            f'SELECT DISTINCT {ns} COLLATE "C" AS ns FROM memories m WHERE {w} AND {ns} IS NOT NULL'
            " ORDER BY ns LIMIT %s", (*params, limit)).fetchall())
    return sorted(out)[:limit]


def users(db: Handle, view: View, after: str, limit: int) -> list[str]:
    out: set[str] = set()
    for v, r in _each_tenant(db, view):
        w, params = where(v)
        db.use(r)
        out.update(str(x[0]) for x in db.execute(
            f"SELECT DISTINCT m.user_id FROM memories m WHERE {w} AND m.user_id > %s ORDER BY m.user_id LIMIT %s",
            (*params, after, limit)).fetchall())
    return sorted(out)[:limit]


def _id_reach(db: Handle, memory_id: str) -> tuple[str, str, str] | None:
    row = db.execute("SELECT * FROM memwarden_id_scope(%s)", (memory_id,)).fetchone()
    return None if row is None else (str(row[0]), str(row[1]), str(row[2]))


def history(db: Handle, memory_id: str) -> list[tuple[int, int, str, str, str]]:
    found = _id_reach(db, memory_id)
    if found is None:
        return []
    db.use(scope_reach(found[0], found[1], (found[2],)))
    return [tuple(r) for r in db.execute(  # type: ignore[misc]
        "SELECT version, superseded_at, content, session_id, source_type FROM memory_history"
        f" WHERE {by_id()} ORDER BY version", (memory_id,)).fetchall()]


def usage(db: Handle, scope: Scope, kind: str, *, held: bool = False) -> tuple[int, int]:
    db.use(scope_reach(scope.tenant, scope.user, (scope.agent_key,)))
    if held:
        row = db.execute("SELECT count(*), coalesce(sum(octet_length(m.content)), 0) FROM memories m"
                         " WHERE m.tenant=%s AND m.user_id=%s AND m.agent=%s AND m.kind=%s AND m.status = 'review'",
                         (scope.tenant, scope.user, scope.agent_key, kind)).fetchone()
        return int(row[0]), int(row[1])
    row = db.execute("SELECT entries, bytes FROM scope_usage WHERE tenant=%s AND user_id=%s AND agent=%s"
                     " AND kind=%s", (scope.tenant, scope.user, scope.agent_key, kind)).fetchone()
    return (int(row[0]), int(row[1])) if row else (0, 0)


def repeats(db: Handle, view: View, dup_keys: Sequence[int], exclude: str | None, limit: int = 16
            ) -> list[RecordRow]:
    out: list[RecordRow] = []
    for v, r in _each_tenant(db, view):
        w, params = where(v)
        db.use(r)
        # the probe names the index's scope columns too (memory_dupkeys_dup leads with them), so it is one index
        # range per key, not a scan of every tenant's keys
        dw, dparams = scope_where_of(v, "d")
        out += db.execute(
            f"SELECT {SELECT_COLS} FROM memory_dupkeys d JOIN memories m ON m.rk = d.rk"
            f" WHERE {dw} AND d.dup = ANY (%s) AND {w} AND (m.trust = 'untrusted' OR m.status = 'review')"
            " AND m.id <> %s LIMIT %s", (*dparams, list(dup_keys), *params, exclude or "", limit)).fetchall()
    return out[:limit]


def near_duplicates(db: Handle, scope: Scope, kind: str, sensitivity: int, dup_key: int, now: int, limit: int = 8
                    ) -> list[tuple[RecordRow, str]]:
    db.use(scope_reach(scope.tenant, scope.user, (scope.agent_key,)))
    rows = db.execute(
        f"SELECT {SELECT_COLS}, f.content FROM memory_dupkeys d JOIN memories m ON m.rk = d.rk"
        " JOIN memory_terms f ON f.rk = d.rk"
        " WHERE d.tenant = %s AND d.user_id = %s AND d.agent = %s AND d.dup = %s AND m.status = 'active'"
        " AND m.expires_at > %s AND m.sensitivity = %s AND m.kind = %s LIMIT %s",
        (scope.tenant, scope.user, scope.agent_key, dup_key, now, sensitivity, kind, limit)).fetchall()
    return [(tuple(r[:-1]), str(r[-1])) for r in rows]


def derived(db: Handle, memory_id: str, tenant: str, user: str) -> list[RecordRow]:
    db.use(("user", tenant, user, ()))
    return db.execute(
        f"SELECT {SELECT_COLS} FROM memories m WHERE m.derived_from <> '[]' AND m.tenant = %s AND m.user_id = %s"
        " AND %s IN (SELECT memwarden_json_list(m.derived_from, NULL)) ORDER BY m.id",
        (tenant, user, memory_id)).fetchall()


def lowest_extracted(db: Handle, scope: Scope, kind: str, source_marker: str) -> tuple[str, float] | None:
    db.use(scope_reach(scope.tenant, scope.user, (scope.agent_key,)))
    row = db.execute("SELECT id, confidence FROM memories WHERE tenant=%s AND user_id=%s AND agent=%s AND kind=%s"
                     " AND status = 'active' AND source_type = 'model' AND sources LIKE %s"
                     " ORDER BY confidence, updated_at, id LIMIT 1",
                     (scope.tenant, scope.user, scope.agent_key, kind, f'%"{source_marker}%')).fetchone()
    return None if row is None else (str(row[0]), float(row[1]))


def folded(db: Handle, ids: Sequence[str]) -> set[str]:
    out: set[str] = set()
    if not ids:
        return out
    for tenant in _tenants(db, View.unscoped(ids=tuple(ids))):
        db.use(("tenant", tenant, "", ()))
        rows = db.execute(
            "SELECT l.source_id FROM memory_links l JOIN memories d ON d.id = l.derived_id"
            " WHERE d.source_type = 'consolidation' AND l.source_id = ANY (%s)", (list(ids),)).fetchall()
        out.update(str(r[0]) for r in rows)
    return out


def row_key(db: Handle, memory_id: str) -> int | None:
    found = _id_reach(db, memory_id)
    if found is None:
        return None
    db.use(scope_reach(found[0], found[1], (found[2],)))
    row = db.execute("SELECT rk FROM memories WHERE id = %s", (memory_id,)).fetchone()
    return None if row is None else int(row[0])


# --- writes (inside a transaction) --------------------------------------------------------------------------


def _use_record(tx: Tx, record: Record) -> None:
    p = record.provenance
    tx.use(scope_reach(p.tenant, p.user, (p.agent,)))


def insert(tx: Tx, record: Record) -> None:
    _use_record(tx, record)
    rk = int(tx.execute(_INSERT_SQL, record_to_row(record)).fetchone()[0])
    _index_add(tx, rk, record)
    if record.derived_from:
        p = record.provenance
        tx.executemany("INSERT INTO memory_links VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                       [(p.tenant, p.user, p.agent, record.id, s) for s in record.derived_from])


def replace(tx: Tx, record: Record, superseded_at: int) -> None:
    _use_record(tx, record)
    tx.execute(_HISTORY_SQL, (superseded_at, record.id))
    row = record_to_row(record)
    sets = ", ".join(f"{c} = %s" for c in RECORD_COLUMNS[1:])
    rows = tx.execute(f"UPDATE memories SET {sets} WHERE {by_id()} RETURNING rk", (*row[1:], record.id)).fetchall()
    for (rk,) in rows:
        _index_update(tx, int(rk), record)


def delete(tx: Tx, memory_id: str) -> None:
    found = _id_reach(tx, memory_id)
    if found is None:
        return
    tx.use(scope_reach(found[0], found[1], (found[2],)))
    for (rk,) in tx.execute(f"DELETE FROM memories WHERE {by_id()} RETURNING rk", (memory_id,)).fetchall():
        _index_remove(tx, int(rk))
    tx.execute(f"DELETE FROM memory_history WHERE {by_id()}", (memory_id,))
    tx.execute(f"DELETE FROM memory_links WHERE {by_id('derived_id')}", (memory_id,))
    tx.use(("tenant", found[0], "", ()))  # links from records of other agents or the user's shared scope
    tx.execute(f"DELETE FROM memory_links WHERE {by_id('source_id')}", (memory_id,))


def _terms(tx: Tx, rk: int, p: Any, text: str) -> None:
    tx.execute("INSERT INTO memory_terms (rk, tenant, user_id, agent, content, tsv)"
               " VALUES (%s, %s, %s, %s, %s, to_tsvector('simple', %s))"
               " ON CONFLICT (rk) DO UPDATE SET content = EXCLUDED.content, tsv = EXCLUDED.tsv",
               (rk, p.tenant, p.user, p.agent, text, text))


def _index_add(tx: Tx, rk: int, r: Record) -> None:
    ix = tx.indexer
    p = r.provenance
    _terms(tx, rk, p, ix.index_text(r))
    tx.execute(LOG_SQL, (rk,))
    tx.execute("INSERT INTO memory_dupkeys (rk, tenant, user_id, agent, dup) VALUES (%s, %s, %s, %s, %s)",
               (rk, p.tenant, p.user, p.agent, ix.dup_key(r)))
    if not ix.embedder.dim:
        return
    tx.execute("INSERT INTO memory_vectors (rk, tenant, user_id, agent, session_id, embedder, vec)"
               " VALUES (%s, %s, %s, %s, %s, %s, %s)", (rk, p.tenant, p.user, p.agent, p.session_id,
                                                        ix.embedder.fingerprint, ix.vector(r.content)))


def _index_update(tx: Tx, rk: int, r: Record) -> None:
    ix = tx.indexer
    p = r.provenance
    _terms(tx, rk, p, ix.index_text(r))
    tx.execute(LOG_SQL, (rk,))
    tx.execute("INSERT INTO memory_dupkeys (rk, tenant, user_id, agent, dup) VALUES (%s, %s, %s, %s, %s)"
               " ON CONFLICT (rk) DO UPDATE SET dup = EXCLUDED.dup", (rk, p.tenant, p.user, p.agent, ix.dup_key(r)))
    if not ix.embedder.dim:
        tx.execute("DELETE FROM memory_vectors WHERE rk = %s", (rk,))
        return
    tx.execute("INSERT INTO memory_vectors (rk, tenant, user_id, agent, session_id, embedder, vec)"
               " VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (rk) DO UPDATE SET session_id ="
               " EXCLUDED.session_id, embedder = EXCLUDED.embedder, vec = EXCLUDED.vec",
               (rk, p.tenant, p.user, p.agent, p.session_id, ix.embedder.fingerprint, ix.vector(r.content)))


def _index_remove(tx: Tx, rk: int) -> None:
    tx.execute("DELETE FROM memory_terms WHERE rk = %s", (rk,))
    tx.execute(LOG_SQL, (rk,))
    tx.execute("DELETE FROM memory_dupkeys WHERE rk = %s", (rk,))
    tx.execute("DELETE FROM memory_vectors WHERE rk = %s", (rk,))


def rebuild_indexes(tx: Tx, *, vectors: bool) -> dict[str, int]:
    """Every tenant's index rows recomputed from the records' text, a tenant at a time."""
    ix = tx.indexer
    tx.execute(LOG_SQL, (INDEX_REBUILT,))
    vectors = vectors and ix.embedder.dim > 0
    total = missing = 0
    h = ix.hasher
    for v, r in _each_tenant(tx, View.unscoped()):
        tx.use(r)
        tenant_sql, tenant_params = ("", []) if v.tenant is None else (" WHERE tenant = %s", [v.tenant])
        tx.execute(f"DELETE FROM memory_terms{tenant_sql}", tenant_params)
        tx.execute(f"DELETE FROM memory_dupkeys{tenant_sql}", tenant_params)
        if vectors or not ix.embedder.dim:
            tx.execute(f"DELETE FROM memory_vectors{tenant_sql}", tenant_params)
        rows: list[Any] = tx.execute(f"SELECT rk, tenant, user_id, agent, session_id, content FROM memories"
                                     f"{tenant_sql} ORDER BY rk", tenant_params).fetchall()
        total += len(rows)
        for i in range(0, len(rows), REBUILD_BATCH):
            chunk = rows[i:i + REBUILD_BATCH]
            texts = [(rid, t, u, a, h.index_text(h.tag(t, u, a), c)) for rid, t, u, a, _s, c in chunk]
            tx.executemany("INSERT INTO memory_terms (rk, tenant, user_id, agent, content, tsv)"
                           " VALUES (%s, %s, %s, %s, %s, to_tsvector('simple', %s))",
                           [(*x, x[4]) for x in texts])
            tx.executemany("INSERT INTO memory_dupkeys (rk, tenant, user_id, agent, dup) VALUES (%s, %s, %s, %s, %s)",
                           [(rid, t, u, a, h.dup_key(h.tag(t, u, a), c)) for rid, t, u, a, _s, c in chunk])
            if not vectors:
                continue
            vecs = ix.vectors([c for *_x, c in chunk])
            if vecs is None:
                missing += len(chunk)
            tx.executemany(
                "INSERT INTO memory_vectors (rk, tenant, user_id, agent, session_id, embedder, vec)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s)",
                [(rid, t, u, a, s, ix.embedder.fingerprint, None if vecs is None else vecs[j])
                 for j, (rid, t, u, a, s, _c) in enumerate(chunk)])
    return {"records": total, "without_vector": missing}
