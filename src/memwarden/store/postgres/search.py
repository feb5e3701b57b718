"""SQL of search on PostgreSQL: the index change log, the scope's keyed-term rows and vectors the in-memory
postings are built from (retrieval/postings.py: the same ranking code as on SQLite), candidates, context windows
and the final fetch — each through a ``View``'s ``WHERE`` and with the policies given the same scope — and the
plain full-text baseline: ``tsvector`` / GIN candidates ranked by ``ts_rank`` in the scoped query. The database
holds keyed hashes of terms only, never a plain term."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from memwarden.store.base import CandidateRow, RecordRow, View
from memwarden.store.postgres.views import SELECT_COLS, reach, scope_where, where

if TYPE_CHECKING:
    from memwarden.store.postgres.backend import Handle

CAND_COLS = "m.rk, m.agent, m.session_id, m.kind, m.updated_at"


def _use(db: Handle, view: View) -> None:
    r = reach(view)
    if r is None:
        raise ValueError("search reads one scope at a time")
    db.use(r)


def index_head(db: Handle) -> int:
    return int(db.execute("SELECT coalesce(max(seq), 0) FROM index_log", ()).fetchone()[0])


def index_changes(db: Handle, after: int, limit: int) -> list[tuple[int, int]]:
    return [(int(s), int(r)) for s, r in db.execute(
        "SELECT seq, row FROM index_log WHERE seq > %s ORDER BY seq LIMIT %s", (after, limit)).fetchall()]


def index_rows(db: Handle, view: View, keys: Sequence[int] | None = None) -> list[tuple[int, str, int]]:
    _use(db, view)
    w, params = where(view)
    if keys is None:
        rows = db.execute(f"SELECT f.rk, f.content, m.expires_at FROM memories m JOIN memory_terms f"
                          f" ON f.rk = m.rk WHERE {w}", params).fetchall()
    else:
        rows = db.execute(f"SELECT f.rk, f.content, m.expires_at FROM memories m JOIN memory_terms f"
                          f" ON f.rk = m.rk WHERE m.rk = ANY (%s) AND {w} ORDER BY m.rk",
                          (list(keys), *params)).fetchall()
    return [(int(r), str(c), int(e)) for r, c, e in rows]


def vector_rows(db: Handle, view: View, embedder: str, keys: Sequence[int] | None = None
                ) -> list[tuple[int, bytes | None, int]]:
    if view.tenant is None or view.user is None or view.agents is None:
        raise ValueError("vectors are read one scope at a time")
    _use(db, view)
    sw, sparams = scope_where(view.tenant, view.user, view.agents, "v")
    w, params = where(view)
    extra, kparams = ("", []) if keys is None else (" AND v.rk = ANY (%s)", [list(keys)])
    rows = db.execute(f"SELECT v.rk, v.vec, m.expires_at FROM memory_vectors v JOIN memories m ON m.rk = v.rk"
                      f" WHERE v.embedder = %s{extra} AND {sw} AND {w}",
                      (embedder, *kparams, *sparams, *params)).fetchall()
    return [(int(r), None if v is None else bytes(v), int(e)) for r, v, e in rows]


def has_vectors(db: Handle) -> bool:
    """Whether any vector is stored, in any tenant (a tenant at a time for the application role)."""
    from memwarden.store.postgres.records import _each_tenant

    for _v, r in _each_tenant(db, View.unscoped()):
        db.use(r)
        if db.execute("SELECT 1 FROM memory_vectors LIMIT 1", ()).fetchone() is not None:
            return True
    return False


def candidates(db: Handle, view: View, keys: Sequence[int]) -> list[CandidateRow]:
    _use(db, view)
    w, params = where(view)
    return [tuple(r) for r in db.execute(  # type: ignore[misc]
        f"SELECT {CAND_COLS} FROM memories m WHERE m.rk = ANY (%s) AND {w}", (list(keys), *params)).fetchall()]


def session_windows(db: Handle, view: View, windows: Sequence[tuple[str, int, int, bool, int]]
                    ) -> list[list[CandidateRow]]:
    _use(db, view)
    w, params = where(view)
    base = (f"SELECT {CAND_COLS} FROM memories m WHERE m.rk BETWEEN %s AND %s"
            f" AND m.session_id = %s AND {w} ORDER BY m.rk")
    return [[tuple(r) for r in db.execute(f"{base} {'DESC' if descending else 'ASC'} LIMIT %s",  # type: ignore[misc]
                                          (lo, hi, session_id, *params, limit)).fetchall()]
            for session_id, lo, hi, descending, limit in windows]


def ranked(db: Handle, view: View, keys: Sequence[int]) -> list[tuple[int, RecordRow]]:
    _use(db, view)
    w, params = where(view)
    rows = db.execute(f"SELECT m.rk, {SELECT_COLS} FROM memories m WHERE m.rk = ANY (%s) AND {w}",
                      (list(keys), *params)).fetchall()
    return [(int(r[0]), tuple(r[1:])) for r in rows]


def scope_totals(db: Handle, tenant: str, user: str, agents: Sequence[str]) -> tuple[int, int]:
    db.use(("agents", tenant, user, tuple(agents)))
    n, size = db.execute("SELECT coalesce(sum(entries), 0), coalesce(sum(bytes), 0) FROM scope_usage"
                         " WHERE tenant = %s AND user_id = %s AND agent = ANY (%s)",
                         (tenant, user, list(agents))).fetchone()
    return int(n), int(size)


def term_documents(db: Handle, tokens: Sequence[str]) -> dict[str, int]:
    """Rows holding each token, among the rows the handle's policies admit: the scope the caller's
    ``scope_totals`` (or any scoped read before it in the same snapshot) gave them — tokens carry the scope's
    tag, so a token counts rows of that scope only in either engine; with no scope given, none (RLS)."""
    if not tokens:
        return {}
    rows = db.execute("SELECT t, (SELECT count(*) FROM memory_terms f WHERE f.tsv @@ t::tsquery)"
                      " FROM unnest(%s::text[]) AS t", (list(tokens),)).fetchall()
    return {str(t): int(n) for t, n in rows if n}


def _query(tokens: Sequence[str]) -> str:
    return " | ".join(tokens)  # keyed terms are [a-z2-7]: no tsquery operator can be in one


def text_candidates(db: Handle, view: View, any_of: Sequence[str], also: Sequence[str] | None, pool: int,
                    limit: int | None = None) -> list[tuple[Any, ...]]:
    """The GIN index finds the rows of the scope holding a token (the scope columns lead it); ``ts_rank`` orders
    them (the engine's own rank: the plain baseline). Rank is negated so that, as FTS5's, lower is better."""
    _use(db, view)
    w, params = where(view)
    q = _query(any_of)
    cond = "f.tsv @@ to_tsquery('simple', %s)"
    qparams: list[object] = [q]
    if also is not None:
        cond += " AND f.tsv @@ to_tsquery('simple', %s)"
        qparams.append(_query(also))
    sw, sparams = ("true", []) if view.tenant is None or view.user is None or view.agents is None else \
        scope_where(view.tenant, view.user, view.agents, "f")
    sql = (f"SELECT {CAND_COLS}, f.content, f.r FROM (SELECT f.rk, f.content,"
           f" -ts_rank(f.tsv, to_tsquery('simple', %s)) AS r FROM memory_terms f WHERE {sw} AND {cond}"
           " ORDER BY r LIMIT %s) f JOIN memories m ON m.rk = f.rk"
           f" WHERE {w} ORDER BY f.r")
    args = [q, *sparams, *qparams, pool, *params]
    if limit is not None:
        sql += " LIMIT %s"
        args.append(limit)
    return [tuple(r) for r in db.execute(sql, args).fetchall()]
