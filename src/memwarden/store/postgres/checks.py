"""The PostgreSQL engine's soundness checks for ``doctor`` (D3, D1, I4), a tenant at a time (the policies
admit one tenant per statement): zombies (index, vector or history rows whose record is gone), records without
their index rows, usage counters that disagree with the rows, links not backed by the signed ``derived_from``.
And a record's footprint in every table that can hold it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memwarden.store.base import View

if TYPE_CHECKING:
    from memwarden.store.postgres.backend import Handle

_NO_VECTOR = "memories (no vector row)"
_ZOMBIE_QUERIES = {
    "memory_terms": "SELECT f.rk::text FROM memory_terms f LEFT JOIN memories m ON m.rk = f.rk WHERE m.rk IS NULL",
    "memories (unindexed)": "SELECT m.id FROM memories m LEFT JOIN memory_terms f ON f.rk = m.rk WHERE f.rk IS NULL",
    "memory_dupkeys": "SELECT d.rk::text FROM memory_dupkeys d LEFT JOIN memories m ON m.rk = d.rk"
                      " WHERE m.rk IS NULL",
    "memories (no near-duplicate key)": "SELECT m.id FROM memories m LEFT JOIN memory_dupkeys d ON d.rk = m.rk"
                                        " WHERE d.rk IS NULL",
    "memory_history": "SELECT DISTINCT h.id FROM memory_history h LEFT JOIN memories m ON m.id = h.id"
                      " WHERE m.id IS NULL",
    "memory_vectors": "SELECT v.rk::text FROM memory_vectors v LEFT JOIN memories m ON m.rk = v.rk"
                      " WHERE m.rk IS NULL OR m.tenant <> v.tenant OR m.user_id <> v.user_id OR m.agent <> v.agent",
    _NO_VECTOR: "SELECT m.id FROM memories m LEFT JOIN memory_vectors v ON v.rk = m.rk WHERE v.rk IS NULL",
    "memory_links": "SELECT l.derived_id || ' <- ' || l.source_id FROM memory_links l"
                    " LEFT JOIN memories a ON a.id = l.derived_id LEFT JOIN memories b ON b.id = l.source_id"
                    " WHERE a.id IS NULL OR b.id IS NULL",
}
_USAGE = ("SELECT u.tenant, u.user_id, u.agent, u.kind, u.entries, u.bytes, count(m.id),"
          " coalesce(sum(m.size_bytes), 0) FROM scope_usage u LEFT JOIN memories m ON m.tenant = u.tenant"
          " AND m.user_id = u.user_id AND m.agent = u.agent AND m.kind = u.kind"
          " GROUP BY u.tenant, u.user_id, u.agent, u.kind, u.entries, u.bytes")
_MISSING_LINKS = (
    "SELECT m.id || ' <- ' || j FROM memories m, memwarden_json_list(m.derived_from, NULL) j"
    " WHERE m.derived_from <> '[]' AND NOT EXISTS"
    " (SELECT 1 FROM memory_links l WHERE l.derived_id = m.id AND l.source_id = j)"
)
_UNBACKED_LINKS = (
    "SELECT l.derived_id || ' <- ' || l.source_id FROM memory_links l JOIN memories d ON d.id = l.derived_id"
    " JOIN memories s ON s.id = l.source_id WHERE d.tenant <> s.tenant OR d.user_id <> s.user_id OR"
    " l.source_id NOT IN (SELECT memwarden_json_list(d.derived_from, NULL))"
)
_BAD_SIZES = "SELECT id FROM memories WHERE size_bytes IS DISTINCT FROM octet_length(content)"


def check(db: Handle, location: str, *, vectors: bool) -> list[tuple[str, str, str]]:
    from memwarden.store.postgres.records import _each_tenant

    out: list[tuple[str, str, str]] = []
    for _v, r in _each_tenant(db, View.unscoped()):
        db.use(r)
        for table, sql in _ZOMBIE_QUERIES.items():
            if table == _NO_VECTOR and not vectors:
                continue
            for (subject,) in db.execute(sql, ()).fetchall():
                out.append(("zombie", str(subject), f"row in {table} without its live record"))
        for tenant, user, agent, kind, entries, size, real_n, real_b in db.execute(_USAGE, ()).fetchall():
            if (int(entries), int(size)) != (int(real_n), int(real_b)):
                out.append(("usage", f"{tenant}/{user}/{agent or '*shared*'}/{kind}",
                            f"counter says {entries} entries/{size} bytes, rows say {real_n}/{real_b}"))
        for (subject,) in db.execute(_MISSING_LINKS, ()).fetchall():
            out.append(("zombie", str(subject), "derived_from edge missing from memory_links"))
        for (subject,) in db.execute(_UNBACKED_LINKS, ()).fetchall():
            out.append(("link", str(subject), "memory_links row not backed by the record's signed derived_from, "
                                              "or across scopes (injected)"))
        for (mid,) in db.execute(_BAD_SIZES, ()).fetchall():
            out.append(("usage", str(mid), "size_bytes does not match the content"))
    return out


def footprint(db: Handle, memory_id: str, row_key: int | None) -> dict[str, tuple[int, int]]:
    """(rows of this record, rows in total of its tenant) in every table that can hold a memory."""
    from memwarden.store.postgres.records import _id_reach

    key = -1 if row_key is None else row_key
    found = _id_reach(db, memory_id)
    if found is not None:
        db.use(("tenant", found[0], "", ()))
    per_table: dict[str, tuple[str, tuple[object, ...]]] = {
        "memories": ("SELECT count(*) FROM memories WHERE id = %s", (memory_id,)),
        "memory_terms": ("SELECT count(*) FROM memory_terms WHERE rk = %s", (key,)),
        "memory_dupkeys": ("SELECT count(*) FROM memory_dupkeys WHERE rk = %s", (key,)),
        "memory_vectors": ("SELECT count(*) FROM memory_vectors WHERE rk = %s", (key,)),
        "memory_history": ("SELECT count(*) FROM memory_history WHERE id = %s", (memory_id,)),
        "memory_links": ("SELECT count(*) FROM memory_links WHERE derived_id = %s OR source_id = %s",
                         (memory_id, memory_id)),
    }
    out = {}
    for table, (sql, params) in per_table.items():
        mine = db.execute(sql, params).fetchone()[0]
        total = db.execute(f"SELECT count(*) FROM {table}", ()).fetchone()[0]
        out[table] = (int(mine), int(total))
    return out
