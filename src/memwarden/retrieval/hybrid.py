"""Hybrid ranking inside one scope (Q1): BM25 over the scope's terms, exact cosine over the scope's vectors,
fused, widened to neighbouring turns of the same session, weighted by kind and recency. docs/retrieval.md
explains each signal and how it was tuned.

Every candidate comes through the store contract with the ``View`` of :meth:`MemoryService._visible` (scope,
``status='active'``, expiry, clearance: S3, D2) as a parameter of the engine's query — the lexical candidates,
the vector scan, the neighbour lookups and the final fetch — and every returned row then passes ``_check``
(signature and audit history, I1/T6). If the embedder fails or is unavailable, the vector signal is skipped and
the search is lexical-only, with an ``embedder_failed`` event; it never raises into the agent's path (Q2).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from memwarden.records import Kind, now_ms
from memwarden.retrieval.embedders import Embedder, HashEmbedder, safe_embed
from memwarden.retrieval.postings import PostingsCache, VectorCache
from memwarden.retrieval.ranking import Ranking
from memwarden.retrieval.tokenize import query_terms
from memwarden.store.base import Reads, View

if TYPE_CHECKING:
    from memwarden.records import Record
    from memwarden.scope import Scope
    from memwarden.service import Context, MemoryService

DAY_MS = 86_400_000
_IN_CHUNK = 5_000  # rowids per IN (...) when reading candidates through the visibility filter


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


class DfCache:
    """Per-scope document frequencies of index tokens (``fts5vocab`` counts a token's whole doclist: for a
    word in a third of a 100k scope, milliseconds per term and query). Entries are valid for one state of the
    scope — its record count and bytes — and dropped as soon as either changes; a stale frequency could only
    shift a score (it holds counts of keyed hashes, never text)."""

    MAX_SCOPES = 256
    MAX_TERMS = 20_000  # per scope

    def __init__(self) -> None:
        self._scopes: dict[tuple[str, ...], tuple[tuple[int, int], dict[str, int]]] = {}

    def lookup(self, db: Reads, key: tuple[tuple[str, ...], int, int], tokens: list[str]) -> dict[str, int]:
        tags, state = key[0], key[1:]
        entry = self._scopes.get(tags)
        if entry is None or entry[0] != state:
            if len(self._scopes) >= self.MAX_SCOPES:
                self._scopes.pop(next(iter(self._scopes)))
            entry = self._scopes[tags] = (state, {})
        known = entry[1]
        missing = [t for t in tokens if t not in known]
        if missing:
            found = db.term_documents(missing)
            if len(known) + len(missing) > self.MAX_TERMS:
                known.clear()
            for t in missing:
                known[t] = found.get(t, 0)
        return {t: known[t] for t in tokens}


class HybridSearch:
    def __init__(self, service: MemoryService, embedder: Embedder, ranking: Ranking | None = None,
                 df_cache: DfCache | None = None, postings: PostingsCache | None = None,
                 vectors: VectorCache | None = None) -> None:
        self.service = service
        self.embedder = embedder
        self.ranking = ranking or Ranking()
        self.df_cache = df_cache or DfCache()
        self.postings = postings or PostingsCache()
        self.vectors = vectors or VectorCache()

    # --- the query ----------------------------------------------------------------------------------------

    def search(self, ctx: Context, query: str, k: int, kind: str | None = None) -> tuple[list[Record], str]:
        """The ``k`` best visible records and ``why`` the vector signal was skipped (``""`` when it was used)."""
        rk = self.ranking
        svc = self.service
        # records folded into an active consolidation are represented by it (Q4)
        view = svc._visible(ctx, kind=kind, unfolded_at=now_ms())  # visibility at the service's clock
        scope = ctx.scope
        agents = [scope.agent_key] + ([""] if ctx.read_shared and not scope.is_shared else [])
        hasher = svc.backend.indexer.hasher
        tags = [hasher.tag(scope.tenant, scope.user, a) for a in agents]
        qterms = [hasher.token(t) for t in query_terms(query)]
        qvec, skipped = None, ""  # skipped: why a configured vector signal could not be used (a failure)
        if rk.mode == "hybrid" and self.embedder.dim:
            m, skipped = safe_embed(self.embedder, [query], query=True)
            qvec = None if m is None else m[0]
        cands: dict[int, _Cand] = {}
        refused: set[int] = set()  # row keys the view's query was asked for and did not return (not visible)
        with svc.backend.read() as db:
            if qterms:
                self._lexical(db, view, scope, ctx.clearance, tags, qterms, agents, cands, refused)
            if qvec is not None:
                self._dense(db, view, qvec, scope, ctx.clearance, agents, cands, refused)
            if not cands:
                return [], skipped
            self._fuse(cands, qvec is not None)
            if rk.mode != "bm25" and rk.expand > 0:
                episodes = svc._visible(ctx, view.live_at, kind=Kind.EPISODE, unfolded_at=view.unfolded_at)
                # what the first reads learned holds for the episodes' view when it is the search's own view
                # narrowed to episodes (the search has no kind, or asks for episodes): a candidate episode passes
                # it, any other candidate and every refused row do not
                known = view.kind in (None, Kind.EPISODE) and episodes == view._replace(kind=Kind.EPISODE)
                self._expand(db, episodes, cands, refused if known else None)
            self._weigh(cands)
            order = {rowid: i for i, (rowid, _score) in enumerate(self._best(cands, k))}
            rows = db.ranked(view, list(order))
            rows.sort(key=lambda r: order[r[0]])
            good, bad = svc._check(db, [r[1] for r in rows])
        svc._integrity_events(ctx, bad)
        return good, skipped

    # --- signals ------------------------------------------------------------------------------------------

    def _lexical(self, db: Reads, view: View, scope: Scope, clearance: int, tags: list[str], qterms: list[str],
                 agents: list[str], cands: dict[int, _Cand], refused: set[int]) -> None:
        """BM25 over the in-memory postings of what the caller may see in the scope (retrieval/postings.py): N,
        document frequencies and the average length count visible documents only (S3, T2: a hidden record
        never moves a score); every document holding a query term is scored. The best ``pool`` are then read
        through the visibility filter (S3); when filtered rows (kind, consolidated) leave fewer than half of
        that, deeper candidates are read, in score order, until enough are visible or none are left."""
        if self.ranking.mode == "bm25":
            self._lexical_fts(db, view, scope, tags, qterms, agents, cands)
            return
        rk = self.ranking
        terms = [[tag + t for tag in tags] for t in qterms]
        cache = self.postings
        visible, start, depth = 0, 0, rk.pool
        while True:
            with cache.lock:
                ranked = cache.get(db, scope, len(agents) > 1, clearance).top(terms, rk.k1, rk.b, depth)
            score = dict(ranked[start:])
            part = list(score)
            for i in range(0, len(part), _IN_CHUNK):
                chunk = part[i:i + _IN_CHUNK]
                for row in db.candidates(view, chunk):
                    rowid = int(row[0])
                    cands[rowid] = _Cand(rowid, str(row[1]), str(row[2]), str(row[3]), int(row[4]), score[rowid])
                    visible += 1
                refused.update(r for r in chunk if r not in cands)
            if visible >= rk.pool // 2 or len(ranked) < depth:  # enough, or every candidate was read
                return
            start, depth = depth, depth * 20

    def _lexical_fts(self, db: Reads, view: View, scope: Scope, tags: list[str], qterms: list[str],
                     agents: list[str], cands: dict[int, _Cand]) -> None:
        """Plain BM25, FTS5's own order (``mode='bm25'``: the baseline ``bench locomo`` reports)."""
        rk = self.ranking
        keyed = [tag + t for tag in tags for t in qterms]
        n_docs, n_bytes = db.scope_totals(scope.tenant, scope.user, agents)
        # Per-term document frequencies in this scope (terms carry the scope tag): BM25's IDF, and which terms
        # are rare enough to find candidates with.
        df_keyed = self.df_cache.lookup(db, (tuple(tags), n_docs, n_bytes), keyed)
        present = sorted((k for k in keyed if df_keyed.get(k)), key=lambda k: (df_keyed[k], k))
        if not present:
            return
        # Candidates come from the rarest terms until their postings reach the budget: FTS5 ranks every document
        # it matches before its LIMIT, and a term in a third of the scope would make that thousands. Documents
        # that only share common terms with the query score little and are left out; every candidate is scored
        # on all the query's terms below. A scope no larger than the budget uses every term.
        used, postings = [], 0
        for k in present:
            if used and postings + df_keyed[k] > rk.postings_budget and n_docs > rk.postings_budget:
                break
            used.append(k)
            postings += df_keyed[k]
        # When the budget left terms out, the match is "holds a candidate term", ranked on every term: a document
        # with all of the query's common words still comes first. The engine preselects the best ``pool`` by its
        # own full-text rank, then the visibility filter applies (S3).
        also = present if len(used) < len(present) else None
        rows = db.text_candidates(view, used, also, rk.pool)
        if len(rows) < rk.pool // 2 and postings > rk.pool:  # held/expired rows crowded the inner LIMIT: deeper
            rows = db.text_candidates(view, used, also, rk.pool * 20, limit=rk.pool)
        if not rows:
            return
        for row in rows:  # FTS5's own bm25 (the whole table's N and average length): the plain baseline
            c = _cand(row)
            c.lex = -float(row[6])
            cands[c.rowid] = c

    def _dense(self, db: Reads, view: View, qvec: np.ndarray, scope: Scope, clearance: int, agents: list[str],
               cands: dict[int, _Cand], refused: set[int]) -> None:
        """Cosine over the scope's vectors of this embedder, held in memory (retrieval/postings.py
        ``VectorCache``, kept in step through ``index_log``). The best ``dense_pool`` join the candidates only
        through the visibility filter (S3); lexical candidates (already visible) get their cosine too."""
        rk = self.ranking
        cache = self.vectors
        with cache.lock:
            sv = cache.get(db, scope, len(agents) > 1, clearance, self.embedder.fingerprint, self.embedder.dim)
            ids, cos, every = sv.cosines(qvec)
            # the lexical candidates' cosines, while no other search can change ``sv.local``
            lex_cos = {rid: float(every[j]) for rid in cands if (j := sv.local.get(rid)) is not None}
        if not len(ids):
            return
        top = np.argpartition(-cos, rk.dense_pool)[:rk.dense_pool] if len(cos) > rk.dense_pool else np.arange(len(cos))
        top = top[np.lexsort((ids[top], -cos[top]))]  # best first, ties by rowid
        floor = rk.dense_floor
        if floor is None:
            floor = 0.25 if isinstance(self.embedder, HashEmbedder) else 0.75
        base = max(float(np.median(cos)), floor)  # only cosines above the visible rows' median and the floor count
        span = float(cos[top[0]]) - base
        if span <= 1e-9:
            return
        dense = {int(ids[i]): (float(cos[i]) - base) / span for i in top if cos[i] > base}
        for rid, v in lex_cos.items():  # lexical candidates get their cosine too
            cands[rid].dense = max(0.0, (v - base) / span)
        missing = [rid for rid in dense if rid not in cands]
        if missing:
            for row in db.candidates(view, missing):
                c = _cand(row)
                cands[c.rowid] = c
            refused.update(r for r in missing if r not in cands)
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

    def _expand(self, db: Reads, episodes: View, cands: dict[int, _Cand], refused: set[int] | None) -> None:
        """Context expansion: a turn next to a matching turn of the same session shares part of its score.
        Neighbours are the nearest visible episodes of the seed's session in write order (``rowid``), looked
        for within ``expand_window`` rows on each side (sessions written interleaved with many others may lose
        their expansion, never their results). ``refused``: when given, rows known not to pass ``episodes`` —
        and then the candidates' kinds say which of them do — so only the other neighbours are read."""
        rk = self.ranking
        expand = rk.expand
        seeds = sorted((c for c in cands.values() if c.kind == Kind.EPISODE and c.score > 0),
                       key=lambda c: (-c.score, c.rowid))[:rk.expand_top]
        if not seeds:
            return  # seeds are episodes: a search of another kind has none (``episodes``: its view, of episodes)
        found: dict[int, tuple[Any, ...]] = {}
        # First the rows right next to every seed, in one query: a session written in one go (the common case)
        # has its neighbours there. Only a side that comes up short is then searched within the window.
        near = {seed.rowid + d for seed in seeds for d in range(-expand, expand + 1) if d}
        if refused is not None:
            for rid in [r for r in near if r in cands]:
                c = cands[rid]
                if c.kind == Kind.EPISODE:
                    found[rid] = (c.rowid, c.agent, c.session_id, c.kind, c.updated_at)
                near.discard(rid)
            near.difference_update(refused)
        if near:
            for row in db.candidates(episodes, sorted(near)):
                found[int(row[0])] = row
        window = rk.expand_window
        runs: list[list[tuple[Any, ...]]] = []
        short: list[tuple[int, tuple[str, int, int, bool, int]]] = []  # the sides to search within the window
        get = found.get
        for seed in seeds:
            rowid, session = seed.rowid, seed.session_id
            for step in (-1, 1):
                run = []
                for d in range(1, expand + 1):  # consecutive same-session rows found next to the seed
                    row = get(rowid + step * d)
                    if row is None or row[2] != session:
                        break
                    run.append(row)
                if len(run) < expand:
                    lo, hi = (rowid - window, rowid - 1) if step < 0 else (rowid + 1, rowid + window)
                    short.append((len(runs), (session, lo, hi, step < 0, expand)))
                runs.append(run)
        if short:  # one read for all of them (each: its own query, nearest first)
            for (i, _w), got in zip(short, db.session_windows(episodes, [w for _i, w in short]), strict=True):
                runs[i] = got
        decay = [rk.expand_decay ** dist for dist in range(expand + 1)]
        i = 0
        for seed in seeds:  # the bonuses in seed, side order
            score = seed.score
            for _side in (-1, 1):
                for dist, row in enumerate(runs[i], start=1):
                    rid = int(row[0])
                    c = cands.get(rid)
                    if c is None:
                        c = cands[rid] = _cand(row)
                    c.bonus += score * decay[dist]
                i += 1

    def _weigh(self, cands: dict[int, _Cand]) -> None:
        """Each candidate's score: (fused score + expansion bonus) × its kind's weight × the recency boost."""
        rk = self.ranking
        now = now_ms()
        weights, boost, half_life = rk.kind_weights, rk.recency_boost, rk.recency_half_life_days
        for c in cands.values():
            age_days = max(0.0, (now - c.updated_at) / DAY_MS)
            c.score = (c.score + c.bonus) * (weights.get(c.kind, 1.0) * (1.0 + boost * 0.5 ** (age_days / half_life)))

    def _best(self, cands: dict[int, _Cand], k: int) -> list[tuple[int, float]]:
        """The ``k`` best ``(row key, score)``, best first, ties by row key."""
        return [(rowid, -neg) for neg, rowid in heapq.nsmallest(k, [(-c.score, c.rowid) for c in cands.values()])]
