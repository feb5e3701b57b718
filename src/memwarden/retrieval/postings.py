"""In-memory postings of each searched scope, kept in step with the FTS5 table: the lexical ranking of
``lexical``/``hybrid`` search (issue 5, Q1).

Why not FTS5's own ``MATCH … ORDER BY rank``: FTS5 computes ``bm25()`` for *every* document a query matches
before it can sort (~4.5 µs each: a docsize lookup and a position-list walk per row), and in a scope of 10,000
records the words of a typical query match thousands — 3.5 ms of a search before anything else. Here the
scope's postings (per index token: which documents, how often) and document lengths live in compact arrays, and
BM25 over every matching document is a few numpy operations (≈ 0.1–0.5 ms at 10k). FTS5 stays the source of
truth: postings are built from its rows (the same tokens) and never written anywhere.

Freshness, across threads and processes: every change of an FTS row appends its ``rowid`` to ``index_log``
in the same transaction (retrieval/index.py). Each search reads, inside its read snapshot, what was logged
since its postings last looked, and re-reads just those rows (rows of other scopes are skipped by the scope
filter of that query); a scope that fell too far behind (or a rebuilt index) is rebuilt from its FTS rows. All of
it is read through the store contract (``Reads.index_head``, ``index_changes``, ``index_rows``, ``vector_rows``).

What they hold: exactly what the caller may see (S3, T2). A scope's postings are built from, and kept in step
with, the rows that pass the visibility filter of the engine's query (a ``View``) — scope, ``status = 'active'``,
``sensitivity <= clearance`` (the caller's clearance is a query parameter and part of the cache key),
``expires_at > now`` — so N, document
frequencies and the average length are statistics of visible documents only: held and above-clearance records
and expired ones never move a score, and the order of a search cannot tell whether a hidden memory holds a word
(issue 12, item 9). A record that later becomes hidden is re-read under that filter (its ``index_log`` entry) and
so left out; one that expires is dropped at its ``expires_at`` (kept beside each document). Postings still only
*rank*: the candidates they return are fetched through SQL whose ``WHERE`` is the service's visibility filter.
They hold keyed hashes of terms (retrieval/tokenize.py), never text.
"""

from __future__ import annotations

import math
import threading
from array import array
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

import numpy as np

from memwarden.records import now_ms
from memwarden.store.base import ACTIVE, INDEX_REBUILT, Reads, View

if TYPE_CHECKING:
    from memwarden.scope import Scope

MAX_ENTRIES = 8_000_000  # postings held over all scopes (~50 MB); least recently searched scopes go first
CHUNK = 500  # rowids per IN (...) when re-reading changed rows
NEVER = (1 << 63) - 1  # the expiry of a document that does not expire (tests build postings without one)
_EMPTY = np.zeros(0, dtype=np.int64)
_EMPTY_F = np.zeros(0, dtype=np.float64)
MAX_CACHED_TERMS = 4_096  # per scope: query terms whose BM25 contributions are kept until the scope changes
MAX_CACHED_QUERIES = 1_024  # per scope: whole queries whose answer is kept until the scope changes (oldest out)


def visible_view(scope: Scope, read_shared: bool, clearance: int, now: int) -> View:
    """The rows that may rank a search: those the caller may see — scope, active, within clearance, unexpired at
    ``now`` (S3). Status and sensitivity changes reach the postings through the index change log."""
    return View.of(scope, shared=read_shared, status=ACTIVE, clearance=clearance, live_at=now)


def _expired(expires: np.ndarray, alive: np.ndarray, rowids: Sequence[int], now: int) -> tuple[list[int], int]:
    """The rowids of alive documents expired at ``now``, and the next expiry among the others."""
    gone = np.flatnonzero(alive & (expires <= now))
    rest = expires[alive & (expires > now)]
    return [int(rowids[int(i)]) for i in gone], int(rest.min()) if len(rest) else NEVER


class ScopePostings:
    """One scope's documents (local index → rowid, length, alive) and its token → (locals, tf) postings."""

    __slots__ = (
        "_base",
        "_contrib",
        "_docs",
        "_np",
        "_tops",
        "alive",
        "entries",
        "expires",
        "lengths",
        "local",
        "n_alive",
        "next_expiry",
        "postings",
        "rowids",
        "seq",
        "total_len",
    )

    def __init__(self, seq: int) -> None:
        self.seq = seq  # the index_log position these postings reflect
        self.rowids = array("q")
        self.local: dict[int, int] = {}  # rowid -> local index (alive documents only)
        self.lengths = array("I")
        self.expires = array("q")  # each document's expires_at: it leaves the statistics then (D2)
        self.next_expiry = NEVER  # the soonest expires_at of an alive document
        self.alive = bytearray()
        self.n_alive = 0
        self.total_len = 0
        # postings of the documents built in one go: token -> id, offsets, locals, tf (CSR, sorted by local)
        self._base: tuple[dict[str, int], np.ndarray, np.ndarray, np.ndarray] = ({}, _EMPTY, _EMPTY, _EMPTY)
        self.postings: dict[str, tuple[array[int], array[int]]] = {}  # of documents added after that
        self._np: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # numpy copies of queried postings
        self._docs: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  # rowids, lengths, alive as numpy
        # per query term (its tokens, k1, b): the alive documents holding it and their BM25 contributions. Valid
        # while ``_docs`` is (every add and drop resets both: N, df and the average length are then unchanged)
        self._contrib: dict[tuple[tuple[str, ...], float, float], tuple[np.ndarray, np.ndarray]] = {}
        # per whole query (its terms' tokens, k1, b, depth): what :meth:`top` returned, valid exactly as long as
        # ``_contrib`` (the same documents, so the same scores and order)
        self._tops: dict[tuple[object, ...], list[tuple[int, float]]] = {}
        self.entries = 0

    @classmethod
    def build(cls, seq: int, rows: Sequence[tuple[int, str]], expires: Sequence[int] | None = None
              ) -> ScopePostings:
        """Postings of ``rows`` (rowid, FTS content) in one numpy pass (10k rows: ~36 ms, against ~62 ms by
        :meth:`add` one at a time); ``expires``: each row's expires_at (default: never)."""
        sp = cls(seq)
        exp = list(expires) if expires is not None else [NEVER] * len(rows)
        contents = [c for _, c in rows]
        tokens = " ".join(contents).split()
        lengths = [c.count(" ") + 1 if c else 0 for c in contents]  # an FTS row is tokens joined by one space
        if sum(lengths) != len(tokens):  # not that shape (edited around memwarden): one document at a time
            for (rowid, content), e in zip(rows, exp, strict=True):
                sp.add(rowid, content, e)
            return sp
        n = len(rows)
        sp.rowids = array("q", (r for r, _ in rows))
        sp.expires = array("q", exp)
        sp.next_expiry = min(exp, default=NEVER)
        sp.lengths = array("I", lengths)
        sp.alive = bytearray(b"\x01") * n
        sp.local = {r: i for i, (r, _) in enumerate(rows)}
        sp.n_alive, sp.total_len = n, len(tokens)
        vocab = {t: i for i, t in enumerate(dict.fromkeys(tokens))}
        ids = np.fromiter(map(vocab.__getitem__, tokens), dtype=np.int64, count=len(tokens))
        docs = np.repeat(np.arange(n, dtype=np.int64), lengths)
        pairs, tf = np.unique(ids * max(n, 1) + docs, return_counts=True)  # sorted by token, then document
        offsets = np.searchsorted(pairs // max(n, 1), np.arange(len(vocab) + 1))
        sp._base = (vocab, offsets, pairs % max(n, 1), np.minimum(tf, 0xFFFF).astype(np.float64))
        sp.entries = len(pairs)
        return sp

    def add(self, rowid: int, content: str, expires_at: int = NEVER) -> None:
        if rowid in self.local:
            self.drop(rowid)
        tokens = content.split()
        loc = len(self.rowids)
        self.rowids.append(rowid)
        self.expires.append(expires_at)
        self.next_expiry = min(self.next_expiry, expires_at)
        self.lengths.append(len(tokens))
        self.alive.append(1)
        self.local[rowid] = loc
        self.n_alive += 1
        self.total_len += len(tokens)
        counts: dict[str, int] = {}
        for t in tokens:
            counts[t] = counts.get(t, 0) + 1
        postings, cached = self.postings, self._np
        for t, c in counts.items():
            p = postings.get(t)
            if p is None:
                p = postings[t] = (array("I"), array("H"))
            p[0].append(loc)
            p[1].append(min(c, 0xFFFF))
            if cached:
                cached.pop(t, None)
        self.entries += len(counts)
        self._docs = None

    def drop(self, rowid: int) -> None:
        loc = self.local.pop(rowid, None)
        if loc is None:
            return
        self.alive[loc] = 0
        self.n_alive -= 1
        self.total_len -= self.lengths[loc]
        self._docs = None

    def expire(self, now: int) -> None:
        """Drop the documents expired at ``now`` from the statistics (they are invisible to every read, D2)."""
        if now < self.next_expiry:
            return
        n = len(self.rowids)
        gone, self.next_expiry = _expired(np.frombuffer(self.expires, dtype=np.int64)[:n],
                                          np.frombuffer(bytes(self.alive), dtype=np.bool_), self.rowids, now)
        for rowid in gone:
            self.drop(rowid)

    @property
    def dead(self) -> int:
        return len(self.rowids) - self.n_alive

    def _arrays(self, token: str) -> tuple[np.ndarray, np.ndarray] | None:
        got = self._np.get(token)
        if got is None:
            vocab, offsets, locs, tfs = self._base
            i = vocab.get(token)
            p = self.postings.get(token)
            if i is None and p is None:
                return None
            parts = [] if i is None else [(locs[offsets[i]:offsets[i + 1]], tfs[offsets[i]:offsets[i + 1]])]
            if p is not None:
                parts.append((np.array(p[0], dtype=np.int64), np.array(p[1], dtype=np.float64)))
            got = parts[0] if len(parts) == 1 else (np.concatenate([parts[0][0], parts[1][0]]),
                                                    np.concatenate([parts[0][1], parts[1][1]]))
            self._np[token] = got
        return got

    def top(self, terms: Sequence[Sequence[str]], k1: float, b: float, depth: int) -> list[tuple[int, float]]:
        """The ``depth`` best documents by BM25 over ``terms`` (each query term: its index tokens, one per scope
        tag), as ``(rowid, score)``, best first, ties by rowid. Every document holding a term is scored."""
        n = self.n_alive
        if not n or not terms:
            return []
        if self._docs is None:
            self._docs = (np.array(self.rowids, dtype=np.int64), np.array(self.lengths, dtype=np.float64),
                          np.frombuffer(bytes(self.alive), dtype=np.bool_))
            self._contrib = {}
            self._tops = {}
        query = (tuple(tuple(tokens) for tokens in terms), k1, b, depth)
        done = self._tops.get(query)
        if done is not None:
            return list(done)
        ranked = self._top(terms, k1, b, depth)
        if len(self._tops) >= MAX_CACHED_QUERIES:  # callers hold the cache's lock: no other thread is here
            del self._tops[next(iter(self._tops))]
        self._tops[query] = ranked
        return list(ranked)

    def _top(self, terms: Sequence[Sequence[str]], k1: float, b: float, depth: int) -> list[tuple[int, float]]:
        """:meth:`top`, computed (``_docs`` set)."""
        assert self._docs is not None
        rowids = self._docs[0]
        locs_all, contrib_all = [], []
        cache = self._contrib
        for tokens in terms:
            key = (tuple(tokens), k1, b)
            got = cache.get(key)
            if got is None:
                if len(cache) >= MAX_CACHED_TERMS:
                    cache.clear()
                got = cache[key] = self._contribution(tokens, k1, b)
            if len(got[0]):
                locs_all.append(got[0])
                contrib_all.append(got[1])
        if not locs_all:
            return []
        scores = np.bincount(np.concatenate(locs_all), np.concatenate(contrib_all), minlength=len(rowids))
        hit = np.flatnonzero(scores)
        s = scores[hit]
        if len(hit) > depth:  # the depth best, and at the boundary the lowest rowids among equal scores
            kth = np.partition(s, len(s) - depth)[len(s) - depth]
            above = s > kth
            tied = hit[s == kth]
            tied = tied[np.argsort(rowids[tied], kind="stable")][:depth - int(above.sum())]
            hit = np.concatenate([hit[above], tied])
            s = scores[hit]
        order = np.lexsort((rowids[hit], -s))
        return [(int(rowids[i]), float(scores[i])) for i in hit[order]]


    def _contribution(self, tokens: Sequence[str], k1: float, b: float) -> tuple[np.ndarray, np.ndarray]:
        """The alive documents holding a query term (any of its ``tokens``) and the term's BM25 contribution to
        each: empty when none does. Call with ``_docs`` set."""
        assert self._docs is not None
        _rowids, lengths, alive = self._docs
        n = self.n_alive
        found = [a for a in map(self._arrays, tokens) if a is not None]
        if not found:
            return _EMPTY, _EMPTY_F
        locs = np.concatenate([a[0] for a in found]) if len(found) > 1 else found[0][0]
        tf = np.concatenate([a[1] for a in found]) if len(found) > 1 else found[0][1]
        if self.dead:
            keep = alive[locs]
            locs, tf = locs[keep], tf[keep]
        df = len(locs)
        if not df:
            return _EMPTY, _EMPTY_F
        avgdl = self.total_len / n or 1.0
        idf = max(math.log((n - df + 0.5) / (df + 0.5)), 1e-6)
        norm = k1 * (1.0 - b + b * lengths[locs] / avgdl)
        return locs, idf * tf * (k1 + 1.0) / (tf + norm)


class _Entry(Protocol):
    seq: int
    entries: int  # what the entry costs against its cache's budget
    local: dict[int, int]

    @property
    def dead(self) -> int: ...

    def drop(self, rowid: int) -> None: ...


E = TypeVar("E", bound=_Entry)


class _LogSyncedCache(Generic[E]):
    """Per-scope entries kept in step with the database through ``index_log`` (see the module docstring): on
    each use, the rows changed since the entry's ``seq`` are dropped and read again under the scope filter; an
    entry too far behind (or after a rebuilt index) is built anew. Subclasses say how to build and add rows."""

    def __init__(self, max_entries: int) -> None:
        self.max_entries = max_entries
        self._scopes: dict[tuple[object, ...], E] = {}  # insertion order = least recently used first
        self.lock = threading.Lock()  # held by a search while it syncs and scores
        self.builds = 0  # full builds (tests and the benchmark read it)

    def _get(self, db: Reads, key: tuple[object, ...], build: Callable[[int], E],
             add: Callable[[E, list[int]], None]) -> E:
        """The entry of ``key`` as of ``db``'s read snapshot; ``build(head)`` makes a new one from scratch,
        ``add(entry, rowids)`` reads changed rows into it (each under the scope's visibility filter)."""
        head = db.index_head()
        entry = self._scopes.pop(key, None)
        if entry is not None and entry.seq != head and not self._catch_up(db, entry, head, add):
            entry = None
        if entry is None:
            self.builds += 1
            entry = build(head)
        self._scopes[key] = entry
        total = sum(e.entries for e in self._scopes.values())
        for k in list(self._scopes):  # least recently used first, never the one being used
            if total <= self.max_entries:
                break
            if k != key:
                total -= self._scopes.pop(k).entries
        return entry

    def _catch_up(self, db: Reads, entry: E, head: int, add: Callable[[E, list[int]], None]) -> bool:
        """Bring ``entry`` to ``head``; False when a rebuild is cheaper (or required)."""
        limit = max(2_048, len(entry.local) // 4)
        rows = db.index_changes(entry.seq, limit + 1)
        if not rows or rows[0][0] != entry.seq + 1 or len(rows) > limit or entry.dead > max(1_024, len(entry.local)):
            return False  # pruned past us, a different database state, too much to replay, or mostly dead
        changed = sorted({int(r[1]) for r in rows})
        if changed[0] == INDEX_REBUILT:
            return False
        for rowid in changed:
            entry.drop(rowid)
        for i in range(0, len(changed), CHUNK):
            add(entry, changed[i:i + CHUNK])
        entry.seq = head
        return True


class PostingsCache(_LogSyncedCache[ScopePostings]):
    """Per-service cache of :class:`ScopePostings`, keyed by the scope searched (with or without the user's
    shared records)."""

    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        super().__init__(max_entries)

    def get(self, db: Reads, scope: Scope, read_shared: bool, clearance: int,
            now: int | None = None) -> ScopePostings:
        """The postings of what a caller of ``clearance`` may see in the scope, as of ``db``'s read snapshot
        (call inside one, holding :attr:`lock`). Scope, status, clearance and expiry are parameters of every
        query that reads rows for them (S3): the :func:`visible_view`, as for any read."""
        now = now_ms() if now is None else now
        view = visible_view(scope, read_shared, clearance, now)

        def build(head: int) -> ScopePostings:
            rows = db.index_rows(view)
            return ScopePostings.build(head, [(r, c) for r, c, _e in rows], [e for _r, _c, e in rows])

        def add(entry: ScopePostings, rowids: list[int]) -> None:
            for rowid, content, expires_at in db.index_rows(view, rowids):
                entry.add(rowid, content, expires_at)

        entry = self._get(db, (view.tenant, view.user, view.agents, clearance), build, add)
        entry.expire(now)
        return entry


class ScopeVectors:
    """One scope's vectors of one embedder: a growable float32 matrix, its rowids, and which rows are alive."""

    __slots__ = ("_ids", "alive", "dim", "entries", "expires", "local", "mat", "n", "next_expiry", "rowids", "seq")

    def __init__(self, seq: int, dim: int) -> None:
        self.seq = seq
        self.dim = dim
        self.mat = np.zeros((0, dim), dtype=np.float32)
        self.alive = np.zeros(0, dtype=np.bool_)
        self.rowids = np.zeros(0, dtype=np.int64)
        self.expires = np.zeros(0, dtype=np.int64)  # each row's expires_at: it leaves the cosine statistics then
        self.next_expiry = NEVER
        self.local: dict[int, int] = {}  # rowid -> row of ``mat`` (alive rows only)
        self.n = 0  # rows of ``mat`` in use
        self.entries = 0  # bytes of vectors held
        self._ids: np.ndarray | None = None  # rowids of the alive rows, in row order

    @property
    def dead(self) -> int:
        return self.n - len(self.local)

    def add_many(self, rows: Sequence[tuple[int, bytes]], expires: Sequence[int] | None = None) -> None:
        """Add (or replace) ``(rowid, vector)`` rows; ``expires``: each row's expires_at (default: never)."""
        size = self.dim * 4
        exp = list(expires) if expires is not None else [NEVER] * len(rows)
        good = [(int(r), v, int(e)) for (r, v), e in zip(rows, exp, strict=True)
                if isinstance(v, bytes) and len(v) == size]  # others: no vector
        for rowid, _, _e in good:
            self.drop(rowid)
        need = self.n + len(good)
        if need > len(self.mat):  # grow by doubling
            cap = max(need, 2 * len(self.mat), 64)
            self.mat = np.concatenate([self.mat[:self.n], np.zeros((cap - self.n, self.dim), dtype=np.float32)])
            self.alive = np.concatenate([self.alive[:self.n], np.zeros(cap - self.n, dtype=np.bool_)])
            self.rowids = np.concatenate([self.rowids[:self.n], np.zeros(cap - self.n, dtype=np.int64)])
            self.expires = np.concatenate([self.expires[:self.n], np.zeros(cap - self.n, dtype=np.int64)])
        if good:
            block = np.frombuffer(b"".join(v for _, v, _e in good), dtype=np.float32).reshape(len(good), self.dim)
            self.mat[self.n:need] = block
            self.alive[self.n:need] = True
            self.rowids[self.n:need] = [r for r, _, _e in good]
            self.expires[self.n:need] = [e for _, _, e in good]
            self.next_expiry = min(self.next_expiry, min(e for _, _, e in good))
            for i, (rowid, _, _e) in enumerate(good):
                self.local[rowid] = self.n + i
            self.n = need
            self.entries = self.n * size
            self._ids = None

    def drop(self, rowid: int) -> None:
        i = self.local.pop(rowid, None)
        if i is not None:
            self.alive[i] = False
            self._ids = None

    def expire(self, now: int) -> None:
        """Drop the rows expired at ``now`` (invisible to every read, D2), so the median no longer counts them."""
        if now < self.next_expiry:
            return
        gone, self.next_expiry = _expired(self.expires[:self.n], self.alive[:self.n], self.rowids, now)
        for rowid in gone:
            self.drop(rowid)

    def cosines(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(rowids, cosines)`` of the alive vectors with ``q`` (unit vectors: dot products), and the cosine of
        every row of the matrix (``local[rowid]`` indexes it).

        ``einsum`` rather than ``@``: BLAS matrix-vector kernels sum a row differently depending on where it sits in
        the matrix (rows in the last block take another path), so a vector re-added at the end after an update got
        a cosine one float32 ulp away from what a fresh build computes, and exact ties (identical embeddings)
        ranked differently in the cache than after a restart (found by the property test of Q1). ``einsum``
        reduces every row with the same loop: the cosine of a vector does not depend on the cache's history.
        It costs ~1 ms more per 100k vectors (d = 128) than BLAS."""
        every = np.einsum("ij,j->i", self.mat[:self.n], q.astype(np.float32))
        alive = self.alive[:self.n]
        if self._ids is None:
            self._ids = self.rowids[:self.n][alive]
        return self._ids, every[alive], every


MAX_VECTOR_BYTES = 256 << 20  # vectors held over all scopes (d = 128: ~500k records)


class VectorCache(_LogSyncedCache[ScopeVectors]):
    """Per-service cache of :class:`ScopeVectors`, keyed by the scope searched and the embedder's fingerprint.
    Vectors change exactly where FTS rows do (``Indexer.add/update/remove/rebuild``), so ``index_log`` keeps
    these in step too."""

    def __init__(self, max_entries: int = MAX_VECTOR_BYTES) -> None:
        super().__init__(max_entries)

    def get(self, db: Reads, scope: Scope, read_shared: bool, clearance: int, fingerprint: str,
            dim: int, now: int | None = None) -> ScopeVectors:
        """As :meth:`PostingsCache.get`, for the vectors of ``fingerprint`` of what the caller may see (the scope
        filter is on the vector rows' own scope columns and on their record's; status, clearance and expiry on
        the record's), so the median the cosines are normalised by counts no hidden row."""
        now = now_ms() if now is None else now
        view = visible_view(scope, read_shared, clearance, now)

        def build(head: int) -> ScopeVectors:
            sv = ScopeVectors(head, dim)
            rows = db.vector_rows(view, fingerprint)
            sv.add_many([(r, v) for r, v, _e in rows], [e for _r, _v, e in rows])  # type: ignore[misc]
            return sv

        def add(entry: ScopeVectors, rowids: list[int]) -> None:
            rows = db.vector_rows(view, fingerprint, rowids)
            entry.add_many([(r, v) for r, v, _e in rows], [e for _r, _v, e in rows])  # type: ignore[misc]

        entry = self._get(db, (dim, fingerprint, view.tenant, view.user, view.agents, clearance), build, add)
        entry.expire(now)
        return entry
