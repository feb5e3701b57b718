"""Retrieval (issue 5): scoped hybrid search, derived indexes, embedders, near-duplicate detection.

:class:`Retrieval` is what a :class:`~memwarden.service.MemoryService` delegates search to; it owns the
embedder (shared with the store's :class:`~memwarden.retrieval.index.Indexer`, which writes the derived
indexes inside each record's transaction) and the ranking parameters.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
from typing import TYPE_CHECKING

from memwarden.events import Event
from memwarden.records import now_ms
from memwarden.retrieval.embedders import (
    E5Embedder,
    Embedder,
    EmbedderError,
    HashEmbedder,
    NoEmbedder,
    OpenAIEmbedder,
    from_spec,
)
from memwarden.retrieval.ranking import Ranking

if TYPE_CHECKING:
    from memwarden.records import Record
    from memwarden.service import Context, MemoryService
    from memwarden.store.sqlite import Tx

log = logging.getLogger("memwarden.retrieval")

__all__ = ["E5Embedder", "Embedder", "EmbedderError", "HashEmbedder", "NoEmbedder", "OpenAIEmbedder", "Ranking",
           "Retrieval", "from_spec"]


class Retrieval:
    def __init__(self, service: MemoryService, key: bytes, embedder: Embedder | None = None,
                 ranking: Ranking | None = None) -> None:
        self.service = service
        self.ranking = ranking or Ranking()
        from memwarden.retrieval.hybrid import DfCache
        from memwarden.retrieval.postings import PostingsCache, VectorCache

        self._df = DfCache()  # per-scope term frequencies for the plain-BM25 baseline (mode="bm25")
        self.postings = PostingsCache()  # per-scope postings the ranking reads (kept in step with the FTS rows)
        self.vectors = VectorCache()  # per-scope vectors the hybrid ranking reads (kept in step likewise)
        indexer = service.backend.indexer
        indexer.set_key(hmac.new(key, b"memwarden.fts-terms.v1", hashlib.sha256).digest())
        self._explicit = embedder is not None or bool(os.environ.get("MEMWARDEN_EMBEDDER"))
        indexer.embedder = embedder or from_spec(None)

    def open(self) -> None:
        """After the key check: rebuild the derived indexes if they were made by an older tokenizer (schema 1
        databases, or a new database)."""
        indexer = self.service.backend.indexer
        if not self._explicit:  # the embedder the last `reindex --embedder` chose for this database
            row = self.service.backend.query("SELECT value FROM meta WHERE key = 'embedder'")
            if row:
                try:
                    indexer.embedder = from_spec(str(row[0][0]))
                except ValueError:
                    log.warning("memwarden: unknown embedder %r in the database; using the default", row[0][0])
        def migrate(tx: Tx) -> dict[str, int] | None:
            if not indexer.needs_rebuild(tx):
                return None
            # a new tokenizer changes the terms, not the vectors: existing vectors are kept (reindex redoes them)
            return indexer.rebuild(tx, vectors=tx.execute("SELECT 1 FROM memory_vectors LIMIT 1").fetchone() is None)

        rebuilt = self.service._transact(migrate)
        if rebuilt and rebuilt["records"]:
            log.info("memwarden: rebuilt the search index of %d records (new tokenizer)", rebuilt["records"])

    @property
    def embedder(self) -> Embedder:
        return self.service.backend.indexer.embedder

    def set_embedder(self, embedder: Embedder) -> None:
        """New writes use ``embedder``; search compares only vectors of its fingerprint (run ``reindex``)."""
        self.service.backend.indexer.embedder = embedder

    def search(self, ctx: Context, query: str, k: int, kind: str | None = None,
               ranking: Ranking | None = None) -> list[Record]:
        from memwarden.retrieval.hybrid import HybridSearch

        rk = ranking or self.ranking
        found, skipped = HybridSearch(self.service, self.embedder, rk, self._df, self.postings,
                                       self.vectors).search(ctx, query, k, kind)
        if rk.mode == "hybrid" and skipped:
            self._embedder_failed(ctx, "search", skipped)
        self.flush()
        return found

    def flush(self, ctx: Context | None = None) -> None:
        """Publish the embedder failures the indexer met on writes (after their commit)."""
        for why in self.service.backend.indexer.take_failures():
            self._embedder_failed(ctx, "write", why)

    def _embedder_failed(self, ctx: Context | None, where: str, why: str) -> None:
        log.warning("memwarden: embedder failed during %s (%s); lexical only", where, why)
        s = ctx.scope if ctx is not None else None
        self.service.events.publish([Event(
            "embedder_failed", now_ms(), session_id=ctx.session_id if ctx else None,
            tenant=s.tenant if s else None, user=s.user if s else None, agent=s.agent_key if s else None,
            actor=ctx.actor if ctx else "", details={"where": where, "error": why,
                                                     "embedder": self.embedder.fingerprint})])

    def reindex(self, *, vectors: bool = True, spec: str | None = None) -> dict[str, int]:
        """Rebuild the FTS terms and (with ``vectors``) every vector with the current embedder; ``spec`` (as
        for :func:`from_spec`) also becomes the database's embedder for later opens without $MEMWARDEN_EMBEDDER."""
        indexer = self.service.backend.indexer

        def work(tx: Tx) -> dict[str, int]:
            if spec is not None:
                tx.execute("INSERT OR REPLACE INTO meta VALUES ('embedder', ?)", (spec,))
            return indexer.rebuild(tx, vectors=vectors)

        out = self.service._transact(work)
        self.flush()
        self.service.backend.scrub(compact_index=True)
        return out
