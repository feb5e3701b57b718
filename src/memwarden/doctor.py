"""``memwarden doctor``: prove the store is sound (D3, I1, A1). Any finding means a non-zero exit.

Checks: SQLite's own integrity check; zombies (index or history rows whose record is gone, links to deleted
records or missing links, usage counters and sizes that disagree with the rows); injected links (not backed by
the record's signed ``derived_from``, or across tenants or users); every record's signature and its agreement
with verified audit history (no rollback to an old signed version, no deleted row put back, no record
vouched for by a forged, edited or deleted audit row); the audit hash chain and its head anchor; the store
against its anchor outside the database (an older copy of the file, a truncated audit log: I5); settings and
token rows that fail verification (or a revoked token put back as live), an embedder setting naming an endpoint
the process configuration does not, and files or a data directory that group or others can read.
"""

from __future__ import annotations

from dataclasses import dataclass

from memwarden import audit, auth
from memwarden.service import MemoryService
from memwarden.store.sqlite import SELECT_COLS
from memwarden.store.sqlite.files import loose_modes


@dataclass(frozen=True, slots=True)
class Finding:
    check: str  # sqlite | zombie | link | signature | audit | usage | anchor | settings | token | files
    subject: str  # memory id, table or audit seq
    problem: str

    def __str__(self) -> str:
        return f"[{self.check}] {self.subject}: {self.problem}"


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


def run(service: MemoryService) -> list[Finding]:
    findings: list[Finding] = []
    with service.backend.read() as conn:
        for (msg,) in conn.execute("PRAGMA integrity_check").fetchall():
            if msg != "ok":
                findings.append(Finding("sqlite", str(service.path), msg))
        vectors = service.retrieval.embedder.dim > 0  # with no embedder configured, no record has a vector
        for table, sql in _ZOMBIE_QUERIES.items():
            if table == _NO_VECTOR and not vectors:
                continue
            for (subject,) in conn.execute(sql).fetchall():
                findings.append(Finding("zombie", str(subject), f"row in {table} without its live record"))
        usage = conn.execute(
            "SELECT u.tenant, u.user_id, u.agent, u.kind, u.entries, u.bytes, count(m.id),"
            " coalesce(sum(m.size_bytes), 0) FROM scope_usage u LEFT JOIN memories m ON m.tenant = u.tenant"
            " AND m.user_id = u.user_id AND m.agent = u.agent AND m.kind = u.kind"
            " GROUP BY u.tenant, u.user_id, u.agent, u.kind").fetchall()
        for tenant, user, agent, kind, entries, size, real_n, real_b in usage:
            if (entries, size) != (real_n, real_b):
                findings.append(Finding("usage", f"{tenant}/{user}/{agent or '*shared*'}/{kind}",
                                        f"counter says {entries} entries/{size} bytes, rows say "
                                        f"{real_n}/{real_b}"))
        for (subject,) in conn.execute(_MISSING_LINKS).fetchall():
            findings.append(Finding("zombie", str(subject), "derived_from edge missing from memory_links"))
        for (subject,) in conn.execute(_UNBACKED_LINKS).fetchall():
            findings.append(Finding("link", str(subject), "memory_links row not backed by the record's signed "
                                    "derived_from, or across scopes (injected)"))
        for (mid,) in conn.execute(_BAD_SIZES).fetchall():
            findings.append(Finding("usage", str(mid), "size_bytes does not match the content"))
        rows = conn.execute(f"SELECT {SELECT_COLS} FROM memories m ORDER BY m.id").fetchall()
    for mid, why in service.refused(rows):
        findings.append(Finding("signature", mid, why))
    for problem in audit.verify(service.backend, service.signer):
        findings.append(Finding("audit", f"seq {problem.seq}", problem.problem))
    if service.rollback is not None:
        findings.append(Finding("anchor", str(service.path), service.rollback + "; if this copy was put back on"
                                " purpose: `memwarden audit accept-restore --reason …`"))
    if service.anchor.error is not None:
        findings.append(Finding("anchor", str(service.anchor.file.path), service.anchor.error))
    findings += _settings_tokens_files(service)
    return findings


def _settings_tokens_files(service: MemoryService) -> list[Finding]:
    """I4, T3, I6: settings and token rows that fail verification, an embedder setting naming an endpoint this
    process does not, and files others can read."""
    out: list[Finding] = []
    with service.backend.read() as conn:
        out += [Finding("settings", name, why) for name, why in service.settings.check(conn)]
    if service.retrieval.refused_embedder:
        out.append(Finding("settings", "embedder", service.retrieval.refused_embedder))
    out += [Finding("token", subject, why) for subject, why in auth.check_rows(service)]
    out += [Finding("files", path, why) for path, why in loose_modes(service.path)]
    return out
