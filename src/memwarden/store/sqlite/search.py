"""SQL of search (retrieval/): the index change log, the scope's FTS rows and vectors the in-memory postings are
built from, candidate rows, context-expansion windows and the final fetch — each through a ``View``'s ``WHERE``
(S3) — and the plain FTS5 BM25 baseline. Every lookup of ``memories`` by rowid says NOT INDEXED: otherwise the
planner may walk the scope's index (the whole scope) instead."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from memwarden.store.base import CandidateRow, RecordRow, View
from memwarden.store.sqlite.views import SELECT_COLS, marks, scope_where, where

if TYPE_CHECKING:
    from memwarden.store.sqlite.backend import Handle

CAND_COLS = "m.rowid, m.agent, m.session_id, m.kind, m.updated_at"


def index_head(db: Handle) -> int:
    return int(db.execute("SELECT coalesce(max(seq), 0) FROM index_log").fetchone()[0])


def index_changes(db: Handle, after: int, limit: int) -> list[tuple[int, int]]:
    return db.execute("SELECT seq, row FROM index_log WHERE seq > ? ORDER BY seq LIMIT ?", (after, limit)).fetchall()


def index_rows(db: Handle, view: View, keys: Sequence[int] | None = None) -> list[tuple[int, str, int]]:
    w, params = where(view)
    if keys is None:
        rows = db.execute(f"SELECT f.rowid, f.content, m.expires_at FROM memories m JOIN memories_fts f"
                          f" ON f.rowid = m.rowid WHERE {w}", params).fetchall()
    else:
        rows = db.execute(f"SELECT f.rowid, f.content, m.expires_at FROM memories m NOT INDEXED JOIN memories_fts f"
                          f" ON f.rowid = m.rowid WHERE m.rowid IN ({marks(len(keys))}) AND {w} ORDER BY m.rowid",
                          (*keys, *params)).fetchall()
    return [(int(r), str(c), int(e)) for r, c, e in rows]


def vector_rows(db: Handle, view: View, embedder: str, keys: Sequence[int] | None = None
                ) -> list[tuple[int, bytes | None, int]]:
    """The scope filter is on the vector rows' own scope columns and on their record's (status, clearance and
    expiry on the record's)."""
    if view.tenant is None or view.user is None or view.agents is None:
        raise ValueError("vectors are read one scope at a time")
    sw, sparams = scope_where(view.tenant, view.user, view.agents, "v")
    w, params = where(view)
    if keys is None:
        return db.execute(f"SELECT v.rowid, v.vec, m.expires_at FROM memory_vectors v JOIN memories m"
                          f" ON m.rowid = v.rowid WHERE v.embedder = ? AND {sw} AND {w}",
                          (embedder, *sparams, *params)).fetchall()
    return db.execute(f"SELECT v.rowid, v.vec, m.expires_at FROM memory_vectors v JOIN memories m NOT INDEXED"
                      f" ON m.rowid = v.rowid WHERE v.rowid IN ({marks(len(keys))}) AND v.embedder = ? AND {sw}"
                      f" AND {w}", (*keys, embedder, *sparams, *params)).fetchall()


def has_vectors(db: Handle) -> bool:
    return db.execute("SELECT 1 FROM memory_vectors LIMIT 1").fetchone() is not None


def _key_list(keys: Sequence[int]) -> str:
    """Row keys as one JSON array parameter (``IN (SELECT value FROM json_each(?))``): one statement text for any
    number of keys, so it is prepared once and stays in the connection's statement cache (an ``IN (?, ?, …)`` list
    is a new statement, parsed and planned again, for every distinct length)."""
    return "[" + ",".join(str(int(k)) for k in keys) + "]"


_IN_KEYS = "m.rowid IN (SELECT value FROM json_each(?))"


def candidates(db: Handle, view: View, keys: Sequence[int]) -> list[CandidateRow]:
    w, params = where(view)
    return db.execute(f"SELECT {CAND_COLS} FROM memories m NOT INDEXED WHERE {_IN_KEYS} AND {w}",
                      (_key_list(keys), *params)).fetchall()


def session_windows(db: Handle, view: View, windows: Sequence[tuple[str, int, int, bool, int]]
                    ) -> list[list[CandidateRow]]:
    """NOT INDEXED: walk the rowid range (at most hi - lo + 1 rows), never the scope's index (the whole scope)."""
    w, params = where(view)
    base = (f"SELECT {CAND_COLS} FROM memories m NOT INDEXED WHERE m.rowid BETWEEN ? AND ?"
            f" AND m.session_id = ? AND {w} ORDER BY m.rowid")
    return [db.execute(f"{base} {'DESC' if descending else 'ASC'} LIMIT ?",
                       (lo, hi, session_id, *params, limit)).fetchall()
            for session_id, lo, hi, descending, limit in windows]


def ranked(db: Handle, view: View, keys: Sequence[int]) -> list[tuple[int, RecordRow]]:
    w, params = where(view)
    rows = db.execute(f"SELECT m.rowid, {SELECT_COLS} FROM memories m NOT INDEXED WHERE {_IN_KEYS} AND {w}",
                      (_key_list(keys), *params)).fetchall()
    return [(int(r[0]), tuple(r[1:])) for r in rows]


def scope_totals(db: Handle, tenant: str, user: str, agents: Sequence[str]) -> tuple[int, int]:
    n, size = db.execute(f"SELECT coalesce(sum(entries), 0), coalesce(sum(bytes), 0) FROM scope_usage"
                         f" WHERE tenant = ? AND user_id = ? AND agent IN ({marks(len(agents))})",
                         (tenant, user, *agents)).fetchone()
    return int(n), int(size)


def term_documents(db: Handle, tokens: Sequence[str]) -> dict[str, int]:
    if not tokens:
        return {}
    return {str(term): int(doc) for term, doc in db.execute(
        f"SELECT term, doc FROM memories_fts_vocab WHERE term IN ({marks(len(tokens))})", list(tokens))}


def text_candidates(db: Handle, view: View, any_of: Sequence[str], also: Sequence[str] | None, pool: int,
                    limit: int | None = None) -> list[tuple[Any, ...]]:
    """FTS5 preselects the best ``pool`` by its bm25 (cheap to compute; reading every match's text is not); the
    outer WHERE is the visibility filter (S3). Tokens are [a-z0-9…]: quoting them is enough (no operator
    injection)."""
    match = " OR ".join(f'"{k}"' for k in any_of)
    if also is not None:
        match = f"({match}) AND ({' OR '.join(chr(34) + k + chr(34) for k in also)})"
    w, params = where(view)
    sql = (f"SELECT {CAND_COLS}, f.content, f.r FROM (SELECT rowid, content, rank AS r FROM memories_fts"
           " WHERE memories_fts MATCH ? ORDER BY rank LIMIT ?) f JOIN memories m NOT INDEXED ON m.rowid = f.rowid"
           f" WHERE {w} ORDER BY f.r")
    if limit is None:
        return db.execute(sql, (match, pool, *params)).fetchall()
    return db.execute(f"{sql} LIMIT ?", (match, pool, *params, limit)).fetchall()
