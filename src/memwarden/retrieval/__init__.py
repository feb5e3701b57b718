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
    EndpointNotConfigured,
    HashEmbedder,
    NoEmbedder,
    OpenAIEmbedder,
    from_spec,
    from_stored_spec,
)
from memwarden.retrieval.ranking import Ranking
from memwarden.retrieval.tokenize import TOKENIZER_VERSION

# The signed settings this module reads (memwarden.settings; not imported here: it imports the store, which
# imports the indexer from this package).
EMBEDDER_SETTING, TOKENIZER_SETTING = "embedder", "fts_tokenizer"

if TYPE_CHECKING:
    from memwarden.records import Record
    from memwarden.service import Context, MemoryService
    from memwarden.store.base import Writes as Tx

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
        self.refused_embedder: str | None = None  # why the database's embedder setting was not used (I4)
        indexer.embedder = embedder or from_spec(None)

    def open(self) -> None:
        """After the key check: rebuild the derived indexes if they were made by an older tokenizer (schema 1
        databases, or a new database)."""
        indexer = self.service.backend.indexer
        settings = self.service.settings
        if not self._explicit:  # the embedder the last `reindex --embedder` chose for this database (signed, I4)
            with self.service.backend.read() as conn:
                spec = settings.get(conn, EMBEDDER_SETTING)
            if spec is not None:
                try:
                    indexer.embedder = from_stored_spec(spec)
                except EndpointNotConfigured as exc:
                    self.refused_embedder = str(exc)
                    log.warning("memwarden: %s", exc)
                except ValueError:
                    log.warning("memwarden: unknown embedder %r in the database; using the default", spec)

        def migrate(tx: Tx) -> dict[str, int] | None:
            if not indexer.needs_rebuild(settings.get(tx, TOKENIZER_SETTING)):
                return None
            # a new tokenizer changes the terms, not the vectors: existing vectors are kept (reindex redoes them)
            out = tx.rebuild_indexes(vectors=not tx.has_vectors())
            settings.put(tx, TOKENIZER_SETTING, TOKENIZER_VERSION)
            return out

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

    def reindex(self, *, vectors: bool = True, spec: str | None = None,
                actor: str = "operator:cli") -> dict[str, int]:
        """Rebuild the FTS terms and (with ``vectors``) every vector with the current embedder; ``spec`` (as
        for :func:`from_spec`) also becomes the database's embedder for later opens without $MEMWARDEN_EMBEDDER
        (a signed setting, audited as ``setting_changed``; one naming an endpoint is used by later opens only
        where the process configuration names that endpoint too)."""
        from memwarden import audit

        settings = self.service.settings
        events: list[Event] = []

        def work(tx: Tx) -> dict[str, int]:
            if spec is not None:
                settings.put(tx, EMBEDDER_SETTING, spec)
                events.append(audit.append(tx, self.service.signer, "setting_changed", actor=actor,
                                           details={"name": EMBEDDER_SETTING, "value": spec}))
            out = tx.rebuild_indexes(vectors=vectors)
            settings.put(tx, TOKENIZER_SETTING, TOKENIZER_VERSION)
            return out

        out = self.service._transact(work)
        if spec is not None:
            self.refused_embedder = None
        self.service.events.publish(events)
        self.flush()
        self.service.backend.scrub(compact_index=True)
        return out
