"""The SQLite engine's own soundness checks for ``doctor`` (D3, D1, I4): SQLite's integrity check; zombies
(index or history rows whose record is gone, links to deleted records or missing links); usage counters and sizes
that disagree with the rows; links not backed by the record's signed ``derived_from`` or across tenants or users
(injected). And a record's footprint in every table that can hold it (the guided demo shows it)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memwarden.store.sqlite.backend import Handle

_NO_VECTOR = "memories (no vector row)"
_ZOMBIE_QUERIES = {
    "memories_fts": "SELECT f.rowid FROM memories_fts f LEFT JOIN memories m ON m.rowid = f.rowid"
                    " WHERE m.rowid IS NULL",
    "memories (unindexed)": "SELECT m.id FROM memories m LEFT JOIN memories_fts f ON f.rowid = m.rowid"
                            " WHERE f.rowid IS NULL",
    "memory_dupkeys": "SELECT d.rowid FROM memory_dupkeys d LEFT JOIN memories m ON m.rowid = d.rowid"
                      " WHERE m.rowid IS NULL",
    "memories (no near-duplicate key)": "SELECT m.id FROM memories m LEFT JOIN memory_dupkeys d"
                                        " ON d.rowid = m.rowid WHERE d.rowid IS NULL",
    "memory_history": "SELECT DISTINCT h.id FROM memory_history h LEFT JOIN memories m ON m.id = h.id"
                      " WHERE m.id IS NULL",
    "memory_vectors": "SELECT v.rowid FROM memory_vectors v LEFT JOIN memories m ON m.rowid = v.rowid"
                      " WHERE m.rowid IS NULL OR m.tenant != v.tenant OR m.user_id != v.user_id"
                      " OR m.agent != v.agent",
    _NO_VECTOR: "SELECT m.id FROM memories m LEFT JOIN memory_vectors v ON v.rowid = m.rowid"
                                " WHERE v.rowid IS NULL",
    "memory_links": "SELECT l.derived_id || ' <- ' || l.source_id FROM memory_links l"
                    " LEFT JOIN memories a ON a.id = l.derived_id LEFT JOIN memories b ON b.id = l.source_id"
                    " WHERE a.id IS NULL OR b.id IS NULL",
}
_USAGE = ("SELECT u.tenant, u.user_id, u.agent, u.kind, u.entries, u.bytes, count(m.id),"
          " coalesce(sum(m.size_bytes), 0) FROM scope_usage u LEFT JOIN memories m ON m.tenant = u.tenant"
          " AND m.user_id = u.user_id AND m.agent = u.agent AND m.kind = u.kind"
          " GROUP BY u.tenant, u.user_id, u.agent, u.kind")
_MISSING_LINKS = (
    "SELECT m.id || ' <- ' || j.value FROM memories m,"
    " json_each(CASE WHEN json_valid(m.derived_from) THEN m.derived_from ELSE '[]' END) j"
    " WHERE m.derived_from != '[]' AND NOT EXISTS"
    " (SELECT 1 FROM memory_links l WHERE l.derived_id = m.id AND l.source_id = j.value)"
)
# A link the signed derived_from of its record does not back, or one across tenants or users: injected (I4, S4).
_UNBACKED_LINKS = (
    "SELECT l.derived_id || ' <- ' || l.source_id FROM memory_links l JOIN memories d ON d.id = l.derived_id"
    " JOIN memories s ON s.id = l.source_id WHERE d.tenant != s.tenant OR d.user_id != s.user_id OR NOT EXISTS"
    " (SELECT 1 FROM json_each(CASE WHEN json_valid(d.derived_from) THEN d.derived_from ELSE '[]' END) j"
    " WHERE j.value = l.source_id)"
)
_BAD_SIZES = "SELECT id FROM memories WHERE size_bytes IS NOT length(CAST(content AS BLOB))"


def check(db: Handle, location: str, *, vectors: bool) -> list[tuple[str, str, str]]:
    """``(check, subject, problem)`` findings: check is sqlite | zombie | usage | link."""
    out: list[tuple[str, str, str]] = []
    for (msg,) in db.execute("PRAGMA integrity_check").fetchall():
        if msg != "ok":
            out.append(("sqlite", location, msg))
    for table, sql in _ZOMBIE_QUERIES.items():
        if table == _NO_VECTOR and not vectors:
            continue  # with no embedder configured, no record has a vector
        for (subject,) in db.execute(sql).fetchall():
            out.append(("zombie", str(subject), f"row in {table} without its live record"))
    for tenant, user, agent, kind, entries, size, real_n, real_b in db.execute(_USAGE).fetchall():
        if (entries, size) != (real_n, real_b):
            out.append(("usage", f"{tenant}/{user}/{agent or '*shared*'}/{kind}",
                        f"counter says {entries} entries/{size} bytes, rows say {real_n}/{real_b}"))
    for (subject,) in db.execute(_MISSING_LINKS).fetchall():
        out.append(("zombie", str(subject), "derived_from edge missing from memory_links"))
    for (subject,) in db.execute(_UNBACKED_LINKS).fetchall():
        out.append(("link", str(subject), "memory_links row not backed by the record's signed derived_from, or "
                                          "across scopes (injected)"))
    for (mid,) in db.execute(_BAD_SIZES).fetchall():
        out.append(("usage", str(mid), "size_bytes does not match the content"))
    return out


def footprint(db: Handle, memory_id: str, row_key: int | None) -> dict[str, tuple[int, int]]:
    """(rows of this record, rows in total) in every table that can hold a memory, and the full-text index."""
    key = -1 if row_key is None else row_key
    per_table: dict[str, tuple[str, tuple[object, ...]]] = {  # every table of schema.MEMORY_TABLES, and FTS
        "memories": ("SELECT count(*) FROM memories WHERE id = ?", (memory_id,)),
        "memories_fts": ("SELECT count(*) FROM memories_fts WHERE rowid = ?", (key,)),
        "memory_dupkeys": ("SELECT count(*) FROM memory_dupkeys WHERE rowid = ?", (key,)),
        "memory_vectors": ("SELECT count(*) FROM memory_vectors WHERE rowid = ?", (key,)),
        "memory_history": ("SELECT count(*) FROM memory_history WHERE id = ?", (memory_id,)),
        "memory_links": ("SELECT count(*) FROM memory_links WHERE derived_id = ? OR source_id = ?",
                         (memory_id, memory_id)),
    }
    out = {}
    for table, (sql, params) in per_table.items():
        mine = db.execute(sql, params).fetchone()[0]
        total = db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        out[table] = (int(mine), int(total))
    return out
