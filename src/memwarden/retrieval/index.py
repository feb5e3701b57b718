"""The derived index entries of a record — its keyed terms (the full-text row), its near-duplicate key and its
vector — as the engine stores them with the record, in the record's own transaction (``Writes.insert``,
``replace``, ``delete``; SQLite: ``store/sqlite/records.py``).

All are derived from the record's text and rebuilt by ``Writes.rebuild_indexes`` (``memwarden reindex``, and on
open when the tokenizer version of the database is older than this code's). A vector never decides anything
that is stored or deleted (Q2): when the embedder fails the record is stored with no vector and stays findable
by its terms; ``reindex`` fills the gap later. This module computes entries; it stores nothing.
"""

from __future__ import annotations

import threading

from memwarden.records import Record
from memwarden.retrieval.embedders import Embedder, NoEmbedder, safe_embed
from memwarden.retrieval.tokenize import TOKENIZER_VERSION, TermHasher


class Indexer:
    """What a record's index entries are: its index text, near-duplicate key and vector (with the configured
    embedder); the embedder failures met while computing them are kept for events after the commit."""

    def __init__(self, embedder: Embedder | None = None) -> None:
        self.embedder: Embedder = embedder or NoEmbedder()
        self._hasher: TermHasher | None = None
        self._lock = threading.Lock()
        self._failures: list[str] = []  # why the embedder failed on a write (published as events later)

    def set_key(self, key: bytes) -> None:
        """The key the FTS terms are hashed with (derived from the store's signing key by the service)."""
        self._hasher = TermHasher(key)

    @property
    def hasher(self) -> TermHasher:
        if self._hasher is None:
            raise RuntimeError("the indexer has no term key yet (the service sets it when it opens)")
        return self._hasher

    def index_text(self, r: Record) -> str:
        p = r.provenance
        h = self.hasher
        return h.index_text(h.tag(p.tenant, p.user, p.agent), r.content)

    def dup_key(self, r: Record) -> int:
        p = r.provenance
        h = self.hasher
        return h.dup_key(h.tag(p.tenant, p.user, p.agent), r.content)

    def vectors(self, texts: list[str]) -> list[bytes] | None:
        """float32 vectors of ``texts``, or ``None`` when the embedder fails (kept for :meth:`take_failures`)."""
        m, why = safe_embed(self.embedder, texts)
        if m is None:
            with self._lock:
                self._failures.append(why)
            return None
        return [row.tobytes() for row in m]

    def vector(self, text: str) -> bytes | None:
        found = self.vectors([text])
        return None if found is None else found[0]

    def take_failures(self) -> list[str]:
        with self._lock:
            out, self._failures = self._failures, []
        return out

    @staticmethod
    def needs_rebuild(mark: str | None) -> bool:
        """``mark``: the tokenizer version the database's terms were built with (its signed setting), if known."""
        return mark != TOKENIZER_VERSION
