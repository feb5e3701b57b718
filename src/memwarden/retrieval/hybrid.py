"""Hybrid ranking inside one scope (Q1): BM25 over the scope's terms, exact cosine over the scope's vectors,
fused, widened to neighbouring turns of the same session, weighted by kind and recency. docs/retrieval.md
explains each signal and how it was tuned.

Every candidate comes from SQL whose ``WHERE`` is :meth:`MemoryService._visible` (scope, ``status='active'``,
expiry, clearance: S3, D2) — the lexical query, the vector scan, the neighbour lookups and the final fetch —
and every returned row then passes ``_check`` (signature and audit history, I1/T6). If the embedder fails or
is unavailable, the vector signal is skipped and the search is lexical-only, with an ``embedder_failed`` event;
it never raises into the agent's path (Q2).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from memwarden.records import Kind, now_ms
from memwarden.retrieval.embedders import Embedder, HashEmbedder, safe_embed
from memwarden.retrieval.index import vectors_matrix
from memwarden.retrieval.ranking import Ranking
from memwarden.retrieval.tokenize import TAG_LEN, query_terms
from memwarden.store.sqlite import SELECT_COLS

if TYPE_CHECKING:
    import sqlite3

    from memwarden.records import Record
    from memwarden.scope import Scope
    from memwarden.service import Context, MemoryService

DAY_MS = 86_400_000


@dataclass(slots=True)
class _Cand:
    rowid: int
    agent: str
    session_id: str
    kind: str
    updated_at: int
    lex: float = 0.0
    dense: float = 0.0
    score: float = 0.0
    bonus: float = 0.0


def _cand(row: tuple[Any, ...]) -> _Cand:
    return _Cand(int(row[0]), str(row[1]), str(row[2]), str(row[3]), int(row[4]))


_CAND_COLS = "m.rowid, m.agent, m.session_id, m.kind, m.updated_at"


class HybridSearch:
    def __init__(self, service: MemoryService, embedder: Embedder, ranking: Ranking | None = None) -> None:
        self.service = service
        self.embedder = embedder
        self.ranking = ranking or Ranking()

    # --- the query ----------------------------------------------------------------------------------------

    def search(self, ctx: Context, query: str, k: int, kind: str | None = None) -> tuple[list[Record], str]:
        """The ``k`` best visible records and ``why`` the vector signal was skipped (``""`` when it was used)."""
        rk = self.ranking
        svc = self.service
        where, params = svc._visible(ctx)
        if kind is not None:
            where += " AND m.kind = ?"
            params.append(kind)
        # records folded into an active consolidation are represented by it (Q4)
        where += (" AND NOT EXISTS (SELECT 1 FROM memory_links l JOIN memories d ON d.id = l.derived_id"
                  " WHERE l.source_id = m.id AND d.source_type = 'consolidation' AND d.status = 'active'"
                  " AND d.expires_at > ?)")
        params.append(now_ms())
        scope = ctx.scope
        agents = [scope.agent_key] + ([""] if ctx.read_shared and not scope.is_shared else [])
        hasher = svc.backend.indexer.hasher
        tags = [hasher.tag(scope.tenant, scope.user, a) for a in agents]
        qterms = [hasher.token(t) for t in query_terms(query)]
        qvec, skipped = None, "lexical mode"
        if rk.mode == "hybrid":
            m, skipped = safe_embed(self.embedder, [query], query=True)
            qvec = None if m is None else m[0]
        cands: dict[int, _Cand] = {}
        with svc.backend.read() as conn:
            if qterms:
                self._lexical(conn, where, params, scope, tags, qterms, agents, cands)
            if qvec is not None:
                self._dense(conn, where, params, qvec, cands)
            if not cands:
                return [], skipped
            self._fuse(cands, qvec is not None)
            if rk.mode != "bm25" and rk.expand > 0:
                self._expand(conn, where, params, scope, cands)
            self._weigh(cands)
            best = sorted(cands.values(), key=lambda c: (-c.score, c.rowid))[:k]
            order = {c.rowid: i for i, c in enumerate(best)}
            marks = ",".join("?" * len(best))
            rows = conn.execute(f"SELECT m.rowid, {SELECT_COLS} FROM memories m WHERE m.rowid IN ({marks})"
                                f" AND {where}", (*order, *params)).fetchall()
            rows.sort(key=lambda r: order[r[0]])
            good, bad = svc._check(conn, [r[1:] for r in rows])
        svc._integrity_events(ctx, bad)
        return good, skipped

    # --- signals ------------------------------------------------------------------------------------------

    def _lexical(self, conn: sqlite3.Connection, where: str, params: list[object], scope: Scope, tags: list[str],
                 qterms: list[str], agents: list[str], cands: dict[int, _Cand]) -> None:
        rk = self.ranking
        match = " OR ".join(f'"{tag}{t}"' for tag in tags for t in qterms)  # terms are [a-z0-9…]: no injection
        # FTS5 ranks the scope's postings (terms carry the scope tag); the outer WHERE is the visibility filter.
        rows = conn.execute(
            f"SELECT {_CAND_COLS}, f.content, f.r FROM (SELECT rowid, content, rank AS r FROM memories_fts"
            " WHERE memories_fts MATCH ? ORDER BY rank LIMIT ?) f JOIN memories m ON m.rowid = f.rowid"
            f" WHERE {where} ORDER BY f.r", (match, rk.pool, *params)).fetchall()
        if len(rows) < rk.pool // 2:  # held/expired rows may have crowded the inner LIMIT: read deeper once
            rows = conn.execute(
                f"SELECT {_CAND_COLS}, f.content, f.r FROM (SELECT rowid, content, rank AS r FROM memories_fts"
                " WHERE memories_fts MATCH ? ORDER BY rank LIMIT ?) f JOIN memories m ON m.rowid = f.rowid"
                f" WHERE {where} ORDER BY f.r LIMIT ?", (match, rk.pool * 20, *params, rk.pool)).fetchall()
        if not rows:
            return
        if rk.mode == "bm25":  # FTS5's own bm25 (global N): the plain baseline
            for row in rows:
                c = _cand(row)
                c.lex = -float(row[6])
                cands[c.rowid] = c
            return
        # Per-scope BM25: N and document frequencies of this scope, term frequencies from the candidates.
        marks = ",".join("?" * len(agents))
        n_docs = int(conn.execute(f"SELECT coalesce(sum(entries), 0) FROM scope_usage WHERE tenant = ?"
                                  f" AND user_id = ? AND agent IN ({marks})",
                                  (scope.tenant, scope.user, *agents)).fetchone()[0])
        keyed = [tag + t for tag in tags for t in qterms]
        df: Counter[str] = Counter()
        for term, doc in conn.execute(f"SELECT term, doc FROM memories_fts_vocab WHERE term IN"
                                      f" ({','.join('?' * len(keyed))})", keyed):
            df[str(term)[TAG_LEN:]] += int(doc)
        n_docs = max(n_docs, max(df.values(), default=0), 1)
        idf = {t: max(math.log((n_docs - df[t] + 0.5) / (df[t] + 0.5)), 1e-6) for t in qterms if df[t]}
        docs = [(row, str(row[5]).split()) for row in rows]
        avgdl = sum(len(toks) for _, toks in docs) / len(docs) or 1.0
        for row, toks in docs:
            tf = Counter(tok[TAG_LEN:] for tok in toks)
            dl = len(toks)
            s = 0.0
            for t, w in idf.items():
                f = tf.get(t)
                if f:
                    s += w * f * (rk.k1 + 1) / (f + rk.k1 * (1 - rk.b + rk.b * dl / avgdl))
            c = _cand(row)
            c.lex = s
            cands[c.rowid] = c

    def _dense(self, conn: sqlite3.Connection, where: str, params: list[object], qvec: np.ndarray,
               cands: dict[int, _Cand]) -> None:
        rk = self.ranking
        rows = conn.execute(f"SELECT v.rowid, v.vec FROM memory_vectors v JOIN memories m ON m.rowid = v.rowid"
                            f" WHERE v.embedder = ? AND v.vec IS NOT NULL AND {where}",
                            (self.embedder.fingerprint, *params)).fetchall()
        ids, mat = vectors_matrix(rows, self.embedder.dim)
        if not len(ids):
            return
        cos = mat @ qvec.astype(np.float32)
        top = np.argsort(-cos, kind="stable")[:rk.dense_pool]
        floor = rk.dense_floor
        if floor is None:
            floor = 0.25 if isinstance(self.embedder, HashEmbedder) else 0.75
        base = max(float(np.median(cos)), floor)  # only cosines above the scope's median and the floor count
        span = float(cos[top[0]]) - base
        if span <= 1e-9:
            return
        dense = {int(ids[i]): (float(cos[i]) - base) / span for i in top if cos[i] > base}
        for rid, c in cands.items():  # lexical candidates get their cosine too
            j = np.searchsorted(ids, rid) if len(ids) else 0
            if j < len(ids) and ids[j] == rid:
                c.dense = max(0.0, (float(cos[j]) - base) / span)
        missing = [rid for rid in dense if rid not in cands]
        if missing:
            marks = ",".join("?" * len(missing))
            for row in conn.execute(f"SELECT {_CAND_COLS} FROM memories m WHERE m.rowid IN ({marks})"
                                    f" AND {where}", (*missing, *params)):
                c = _cand(row)
                cands[c.rowid] = c
        for rid, d in dense.items():
            if rid in cands:
                cands[rid].dense = d

    def _fuse(self, cands: dict[int, _Cand], dense_used: bool) -> None:
        w = self.ranking.dense_weight
        if w is None:
            w = 0.3 if isinstance(self.embedder, HashEmbedder) else 0.5
        top = max((c.lex for c in cands.values()), default=0.0)
        for c in cands.values():
            c.score = (c.lex / top if top > 0 else 0.0) + (w * c.dense if dense_used else 0.0)

    def _expand(self, conn: sqlite3.Connection, where: str, params: list[object], scope: Scope,
                cands: dict[int, _Cand]) -> None:
        """Context expansion: a turn next to a matching turn of the same session shares part of its score."""
        rk = self.ranking
        tenant, user = scope.tenant, scope.user
        seeds = sorted((c for c in cands.values() if c.kind == Kind.EPISODE and c.score > 0),
                       key=lambda c: (-c.score, c.rowid))[:rk.expand_top]
        base = f"SELECT {_CAND_COLS} FROM memory_vectors v JOIN memories m ON m.rowid = v.rowid WHERE v.tenant = ?" \
               f" AND v.user_id = ? AND v.agent = ? AND v.session_id = ? AND m.kind = 'episode' AND {where}"
        for seed in seeds:
            key = (tenant, user, seed.agent, seed.session_id)
            for op, order in (("<", "DESC"), (">", "ASC")):
                rows = conn.execute(f"{base} AND v.rowid {op} ? ORDER BY v.rowid {order} LIMIT ?",
                                    (*key, *params, seed.rowid, rk.expand)).fetchall()
                for dist, row in enumerate(rows, start=1):
                    rid = int(row[0])
                    c = cands.get(rid)
                    if c is None:
                        c = cands[rid] = _cand(row)
                    c.bonus += seed.score * rk.expand_decay ** dist
        for c in cands.values():
            c.score += c.bonus

    def _weigh(self, cands: dict[int, _Cand]) -> None:
        rk = self.ranking
        now = now_ms()
        for c in cands.values():
            age_days = max(0.0, (now - c.updated_at) / DAY_MS)
            c.score *= rk.kind_weights.get(c.kind, 1.0) * (
                1.0 + rk.recency_boost * 0.5 ** (age_days / rk.recency_half_life_days))
