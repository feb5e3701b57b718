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
filter of that query); a scope that fell too far behind (or a rebuilt index) is rebuilt from its FTS rows.

What this may not do: decide visibility. Postings only *rank*: they hold a scope's documents whatever their
status, kind, expiry or sensitivity, and the candidates they return are fetched through SQL whose ``WHERE`` is
the service's visibility filter (S3). They hold keyed hashes of terms (retrieval/tokenize.py), never text.
"""

from __future__ import annotations

import math
import threading
from array import array
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from memwarden.retrieval.index import REBUILT
from memwarden.store.sqlite import scope_clause

if TYPE_CHECKING:
    import sqlite3

    from memwarden.scope import Scope

MAX_ENTRIES = 8_000_000  # postings held over all scopes (~50 MB); least recently searched scopes go first
CHUNK = 500  # rowids per IN (...) when re-reading changed rows
_EMPTY = np.zeros(0, dtype=np.int64)


class ScopePostings:
    """One scope's documents (local index → rowid, length, alive) and its token → (locals, tf) postings."""

    __slots__ = (
        "_base",
        "_docs",
        "_np",
        "alive",
        "entries",
        "lengths",
        "local",
        "n_alive",
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
        self.alive = bytearray()
        self.n_alive = 0
        self.total_len = 0
        # postings of the documents built in one go: token -> id, offsets, locals, tf (CSR, sorted by local)
        self._base: tuple[dict[str, int], np.ndarray, np.ndarray, np.ndarray] = ({}, _EMPTY, _EMPTY, _EMPTY)
        self.postings: dict[str, tuple[array[int], array[int]]] = {}  # of documents added after that
        self._np: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # numpy copies of queried postings
        self._docs: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  # rowids, lengths, alive as numpy
        self.entries = 0

    @classmethod
    def build(cls, seq: int, rows: Sequence[tuple[int, str]]) -> ScopePostings:
        """Postings of ``rows`` (rowid, FTS content) in one numpy pass (10k rows: ~36 ms, against ~62 ms by
        :meth:`add` one at a time)."""
        sp = cls(seq)
        contents = [c for _, c in rows]
        tokens = " ".join(contents).split()
        lengths = [c.count(" ") + 1 if c else 0 for c in contents]  # an FTS row is tokens joined by one space
        if sum(lengths) != len(tokens):  # not that shape (edited around memwarden): one document at a time
            for rowid, content in rows:
                sp.add(rowid, content)
            return sp
        n = len(rows)
        sp.rowids = array("q", (r for r, _ in rows))
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

    def add(self, rowid: int, content: str) -> None:
        if rowid in self.local:
            self.drop(rowid)
        tokens = content.split()
        loc = len(self.rowids)
        self.rowids.append(rowid)
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
        rowids, lengths, alive = self._docs
        avgdl = self.total_len / n or 1.0
        locs_all, contrib_all = [], []
        for tokens in terms:
            found = [a for a in map(self._arrays, tokens) if a is not None]
            if not found:
                continue
            locs = np.concatenate([a[0] for a in found]) if len(found) > 1 else found[0][0]
            tf = np.concatenate([a[1] for a in found]) if len(found) > 1 else found[0][1]
            if self.dead:
                keep = alive[locs]
                locs, tf = locs[keep], tf[keep]
            df = len(locs)
            if not df:
                continue
            idf = max(math.log((n - df + 0.5) / (df + 0.5)), 1e-6)
            norm = k1 * (1.0 - b + b * lengths[locs] / avgdl)
            locs_all.append(locs)
            contrib_all.append(idf * tf * (k1 + 1.0) / (tf + norm))
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


class PostingsCache:
    """Per-service cache of :class:`ScopePostings`, keyed by the scope searched (with or without the user's
    shared records)."""

    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self.max_entries = max_entries
        self._scopes: dict[tuple[str, ...], ScopePostings] = {}  # insertion order = least recently used first
        self.lock = threading.Lock()  # held by a search while it syncs and scores
        self.builds = 0  # full builds (tests and the benchmark read it)

    def get(self, conn: sqlite3.Connection, scope: Scope, read_shared: bool) -> ScopePostings:
        """The scope's postings as of ``conn``'s read snapshot (call inside one, holding :attr:`lock`). The scope
        is a parameter of every query that reads rows for them (S3): ``scope_clause``, as for any read."""
        where, params = scope_clause(scope, read_shared)
        key = (where, *map(str, params))
        head = int(conn.execute("SELECT coalesce(max(seq), 0) FROM index_log").fetchone()[0])
        sp = self._scopes.pop(key, None)
        if sp is not None and sp.seq != head:
            sp = self._catch_up(conn, sp, head, where, params)
        if sp is None:
            sp = self._build(conn, head, where, params)
        self._scopes[key] = sp
        self._evict(keep=key)
        return sp

    def _build(self, conn: sqlite3.Connection, head: int, where: str, params: list[object]) -> ScopePostings:
        self.builds += 1
        rows = conn.execute(f"SELECT f.rowid, f.content FROM memories m JOIN memories_fts f ON f.rowid = m.rowid"
                            f" WHERE {where}", params).fetchall()
        return ScopePostings.build(head, [(int(r), str(c)) for r, c in rows])

    def _catch_up(self, conn: sqlite3.Connection, sp: ScopePostings, head: int, where: str, params: list[object]
                  ) -> ScopePostings | None:
        """``sp`` brought to ``head``, or None when a rebuild is cheaper (or required)."""
        limit = max(2_048, len(sp.local) // 4)
        rows = conn.execute("SELECT seq, row FROM index_log WHERE seq > ? ORDER BY seq LIMIT ?",
                            (sp.seq, limit + 1)).fetchall()
        if not rows or rows[0][0] != sp.seq + 1 or len(rows) > limit or sp.dead > max(1_024, len(sp.local)):
            return None  # pruned past us, a different database state, too much to replay, or mostly dead
        changed = sorted({int(r[1]) for r in rows})
        if changed and changed[0] == REBUILT:
            return None
        for rowid in changed:
            sp.drop(rowid)
        for i in range(0, len(changed), CHUNK):
            part = changed[i:i + CHUNK]
            for rowid, content in conn.execute(
                    "SELECT f.rowid, f.content FROM memories m NOT INDEXED JOIN memories_fts f ON f.rowid = m.rowid"
                    f" WHERE m.rowid IN ({','.join('?' * len(part))}) AND {where} ORDER BY m.rowid",
                    (*part, *params)):
                sp.add(int(rowid), str(content))
        sp.seq = head
        return sp

    def _evict(self, keep: tuple[str, ...]) -> None:
        total = sum(sp.entries for sp in self._scopes.values())
        for key in list(self._scopes):
            if total <= self.max_entries:
                break
            if key != keep:
                total -= self._scopes.pop(key).entries
