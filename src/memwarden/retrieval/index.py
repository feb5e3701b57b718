"""The derived indexes of a record — FTS5 terms, its near-duplicate key and its vector — written, rewritten and
deleted inside the record's own transaction (called from :class:`memwarden.store.sqlite.SqliteBackend`
insert/replace/delete).

Both are derived from the record's text and rebuilt by :meth:`Indexer.rebuild` (``memwarden reindex``, and on
open when the tokenizer version of the database is older than this code's). A vector never decides anything
that is stored or deleted (Q2): when the embedder fails the record is stored with no vector (``vec IS NULL``)
and stays findable by its terms; ``reindex`` fills the gap later.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from memwarden.records import Record
from memwarden.retrieval.embedders import Embedder, NoEmbedder, safe_embed
from memwarden.retrieval.tokenize import TOKENIZER_VERSION, TermHasher

if TYPE_CHECKING:
    from memwarden.store.sqlite import Tx

FTS_DDL = "CREATE VIRTUAL TABLE memories_fts USING fts5(content, tokenize = 'unicode61 remove_diacritics 0')"
LOG_SQL = "INSERT INTO index_log (row) VALUES (?)"  # readers of the FTS terms learn what changed (postings.py)
REBUILT = -1  # an index_log row meaning "the whole FTS table was rebuilt"


class Indexer:
    """Keeps ``memories_fts``, ``memory_dupkeys`` and ``memory_vectors`` in step with ``memories`` (same
    transaction), and logs each FTS change in ``index_log`` for the searches' in-memory postings."""

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

    # --- per-record hooks (inside the write transaction) --------------------------------------------------

    def _vector(self, text: str) -> bytes | None:
        m, why = safe_embed(self.embedder, [text])
        if m is None:
            with self._lock:
                self._failures.append(why)
            return None
        return m[0].tobytes()

    def add(self, tx: Tx, rowid: int, r: Record) -> None:
        p = r.provenance
        tx.queue_fts(rowid, self.index_text(r))  # inserted with the transaction's other FTS rows (FtsQueue)
        tx.execute(LOG_SQL, (rowid,))
        tx.execute("INSERT INTO memory_dupkeys (rowid, dup) VALUES (?, ?)", (rowid, self.dup_key(r)))
        if not self.embedder.dim:
            return  # no vectors configured (the default): nothing more to derive
        tx.execute("INSERT INTO memory_vectors (rowid, tenant, user_id, agent, session_id, embedder, vec)"
                   " VALUES (?,?,?,?,?,?,?)", (rowid, p.tenant, p.user, p.agent, p.session_id,
                                               self.embedder.fingerprint, self._vector(r.content)))

    def update(self, tx: Tx, rowid: int, r: Record) -> None:
        p = r.provenance
        tx.flush_fts()  # the row may still be queued
        tx.execute("UPDATE memories_fts SET content = ? WHERE rowid = ?", (self.index_text(r), rowid))
        tx.execute(LOG_SQL, (rowid,))
        tx.execute("INSERT OR REPLACE INTO memory_dupkeys (rowid, dup) VALUES (?, ?)", (rowid, self.dup_key(r)))
        if not self.embedder.dim:  # no vectors configured: an old version's vector must not outlive its text
            tx.execute("DELETE FROM memory_vectors WHERE rowid = ?", (rowid,))
            return
        tx.execute("INSERT OR REPLACE INTO memory_vectors (rowid, tenant, user_id, agent, session_id, embedder,"
                   " vec) VALUES (?,?,?,?,?,?,?)", (rowid, p.tenant, p.user, p.agent, p.session_id,
                                                   self.embedder.fingerprint, self._vector(r.content)))

    @staticmethod
    def remove(tx: Tx, rowid: int) -> None:
        tx.delete_fts(rowid)  # and the index is compacted before the COMMIT: none of its terms stay (D3)
        tx.execute(LOG_SQL, (rowid,))
        tx.execute("DELETE FROM memory_dupkeys WHERE rowid = ?", (rowid,))
        tx.execute("DELETE FROM memory_vectors WHERE rowid = ?", (rowid,))

    def take_failures(self) -> list[str]:
        with self._lock:
            out, self._failures = self._failures, []
        return out

    # --- rebuild (reindex, migration) ---------------------------------------------------------------------

    @staticmethod
    def needs_rebuild(mark: str | None) -> bool:
        """``mark``: the tokenizer version the database's terms were built with (its signed setting), if known."""
        return mark != TOKENIZER_VERSION

    def rebuild(self, tx: Tx, *, vectors: bool = True, batch: int = 256) -> dict[str, int]:
        """Recreate the FTS5 table with this version's tokenizer and (re)compute every vector with the current
        embedder, from the records' text. Held and expired records are indexed too (reads filter them in SQL)."""
        tx.execute("DROP TABLE IF EXISTS memories_fts_vocab")
        tx.execute("DROP TABLE IF EXISTS memories_fts")
        tx.execute(FTS_DDL)
        tx.execute(LOG_SQL, (REBUILT,))  # every reader's in-memory postings are rebuilt
        tx.execute("CREATE VIRTUAL TABLE memories_fts_vocab USING fts5vocab(memories_fts, 'row')")
        tx.execute("DELETE FROM memory_dupkeys")
        vectors = vectors and self.embedder.dim > 0
        if vectors or not self.embedder.dim:
            tx.execute("DELETE FROM memory_vectors")
        rows = tx.execute("SELECT rowid, tenant, user_id, agent, session_id, content FROM memories"
                          " ORDER BY rowid").fetchall()
        missing = 0
        h = self.hasher
        for i in range(0, len(rows), batch):
            chunk = rows[i:i + batch]
            tx.executemany("INSERT INTO memories_fts (rowid, content) VALUES (?, ?)",
                           [(rid, h.index_text(h.tag(t, u, a), c)) for rid, t, u, a, _s, c in chunk])
            tx.executemany("INSERT INTO memory_dupkeys (rowid, dup) VALUES (?, ?)",
                           [(rid, h.dup_key(h.tag(t, u, a), c)) for rid, t, u, a, _s, c in chunk])
            if not vectors:
                continue
            m, why = safe_embed(self.embedder, [c for *_x, c in chunk])
            if m is None:
                with self._lock:
                    self._failures.append(why)
                missing += len(chunk)
            tx.executemany(
                "INSERT INTO memory_vectors (rowid, tenant, user_id, agent, session_id, embedder, vec)"
                " VALUES (?,?,?,?,?,?,?)",
                [(rid, t, u, a, s, self.embedder.fingerprint, None if m is None else m[j].tobytes())
                 for j, (rid, t, u, a, s, _c) in enumerate(chunk)])
        return {"records": len(rows), "without_vector": missing}  # the caller records TOKENIZER_VERSION
