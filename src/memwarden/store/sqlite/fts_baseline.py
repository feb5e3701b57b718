"""The plain full-text baseline ``memwarden bench locomo`` compares memwarden's search with: FTS5 BM25 (porter
unicode61) over the texts, every query word OR-ed — the search memwarden shipped before issue 5 — in one
in-memory table, each text tagged with a group (the conversation) that a search is limited to."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence


class PlainBm25:
    def __init__(self) -> None:
        self._db = sqlite3.connect(":memory:")
        self._db.execute("CREATE VIRTUAL TABLE f USING fts5(content, grp UNINDEXED,"
                         " tokenize = 'porter unicode61 remove_diacritics 2')")

    def add(self, text: str, group: int) -> int:
        """Index ``text`` in ``group``; returns its key."""
        cur = self._db.execute("INSERT INTO f (content, grp) VALUES (?, ?)", (text, group))
        return int(cur.lastrowid or 0)

    def search(self, words: Sequence[str], group: int, k: int) -> list[int]:
        """Keys of the ``k`` best texts of ``group`` holding any of ``words`` (each quoted: no operators)."""
        match = " OR ".join(list(dict.fromkeys(f'"{w}"' for w in words))[:32])
        if not match:
            return []
        return [int(r[0]) for r in self._db.execute(
            "SELECT rowid FROM f WHERE f MATCH ? AND grp = ? ORDER BY bm25(f) LIMIT ?", (match, group, k))]
