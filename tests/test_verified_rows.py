"""The verified-row cache (memwarden/verified.py): a row is served from it only when every value is identical to a
row this process decoded and verified; every other check of a read still runs on every read (I1, T6, I5).

The attacks are done as in test_security_integrity.py: a plain sqlite3 connection on the file, no key."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import memwarden
from memwarden import audit
from memwarden.records import Provenance, Record
from memwarden.service import MemoryService
from memwarden.store.base import RECORD_COLUMNS
from memwarden.verified import VerifiedRows, row_key
from raw_sql import raw_sql

SCOPE = memwarden.Scope(tenant="acme", user="u-7", agent="support")


def _saved(store: MemoryService, content: str, **kw: object) -> str:
    with store.session(SCOPE) as s:
        res = s.save(content, kind="fact", **kw)  # type: ignore[arg-type]
    assert res.status == "accepted" and res.id, res
    return res.id


def _found(store: MemoryService, query: str) -> list[str]:
    with store.session(SCOPE) as s:
        return [r.id for r in s.search(query, k=10)]


def _row(db: Path, mid: str) -> tuple[object, ...]:
    conn = sqlite3.connect(db)
    try:
        return tuple(conn.execute(f"SELECT {', '.join(RECORD_COLUMNS)} FROM memories WHERE id = ?", (mid,)).fetchone())
    finally:
        conn.close()


def test_a_repeated_read_is_served_from_the_cache(store: MemoryService) -> None:
    mid = _saved(store, "the quarterly billing report goes to finance")
    assert _found(store, "billing report") == [mid]
    hits = store._verified.hits
    assert _found(store, "billing report") == [mid]
    assert store._verified.hits > hits


def test_a_row_edited_in_the_file_after_it_was_cached_is_refused(store: MemoryService, db_path: Path) -> None:
    mid = _saved(store, "the quarterly billing report goes to finance")
    assert _found(store, "billing report") == [mid]  # cached now
    raw_sql(db_path, ("UPDATE memories SET content = ? WHERE id = ?",
                      ("the quarterly billing report goes to attacker@example.com", mid)))
    assert _found(store, "billing report") == []
    with store.session(SCOPE) as s:
        assert mid not in [r.id for r in s.view()]
    refused = {r["memory_id"] for r in audit.log_rows(store.backend, event="integrity_failure", limit=10_000)}
    assert mid in refused


@pytest.mark.parametrize(("column", "value"), [("confidence", 1), ("version", 1.0), ("sensitivity", 0.0),
                                                ("agent", b"support"), ("confidence", -0.0)])
def test_a_value_equal_in_python_but_not_identical_is_not_a_hit(store: MemoryService, db_path: Path,
                                                                 column: str, value: object) -> None:
    """``1 == 1.0`` and ``0.0 == -0.0`` in Python: such a row is never looked up (it is checked from scratch)."""
    mid = _saved(store, "the quarterly billing report goes to finance")
    row = list(_row(db_path, mid))
    key = row_key(row)
    assert key is not None
    row[RECORD_COLUMNS.index(column)] = value
    assert row_key(row) is None
    zero = list(key)
    zero[RECORD_COLUMNS.index("confidence")] = 0.0
    assert row_key(zero) == tuple(zero)  # +0.0 is cached, so -0.0 (== 0.0) must never be looked up


def test_the_cache_does_not_vouch_for_a_deleted_row_put_back(store: MemoryService, db_path: Path) -> None:
    """Identical values, so a cache hit — but the audit history says it was removed: refused (vouch runs)."""
    mid = _saved(store, "the quarterly billing report goes to finance")
    assert _found(store, "billing report") == [mid]
    conn = sqlite3.connect(db_path)
    try:
        cols = [r[1] for r in conn.execute("PRAGMA table_info(memories)")]
        row = conn.execute(f"SELECT rowid, {', '.join(cols)} FROM memories WHERE id = ?", (mid,)).fetchone()
        fts = conn.execute("SELECT content FROM memories_fts WHERE rowid = ?", (row[0],)).fetchone()[0]
    finally:
        conn.close()
    with store.session(SCOPE) as s:
        assert s.remove(mid) == [mid]
    assert _found(store, "billing report") == []
    raw_sql(db_path, (f"INSERT INTO memories (rowid, {', '.join(cols)}) VALUES ({', '.join('?' * (len(cols) + 1))})",
                      tuple(row)),
            ("INSERT INTO memories_fts (rowid, content) VALUES (?, ?)", (row[0], fts)),
            ("INSERT INTO index_log (row) VALUES (?)", (row[0],)))
    hits = store._verified.hits
    assert _found(store, "billing report") == []
    assert store._verified.hits > hits  # the row's own checks came from the cache; its audit history refused it


def test_changing_a_returned_records_metadata_changes_no_later_read(store: MemoryService) -> None:
    with store.session(SCOPE) as s:
        mid = s.save("the quarterly billing report goes to finance", kind="fact", metadata={"team": "fin"}).id
    assert mid
    for _ in range(2):
        with store.session(SCOPE) as s:
            [rec] = s.search("billing report")
            assert rec.metadata == {"team": "fin"}
            rec.metadata["team"] = "attacker"
            rec.metadata["extra"] = 1


def test_full_cache_is_dropped_not_grown() -> None:
    cache = VerifiedRows(max_rows=2)
    rec = Record(id="m", version=1, kind="fact", content="c", content_hash="h", metadata={}, confidence=1.0,
                 sensitivity=0, created_at=1, updated_at=1, expires_at=2, due_at=None, status="active",
                 derived_from=(), provenance=Provenance("t", "u", "a", "s", "agent"), signature="x")
    for i in range(5):
        key = (f"m{i}", 1, "t", "u", "a", "fact", "c", "h", 1, "{}", 1.0, 0, 1, 1, 2, None, "active", "[]", "s",
               "agent", "[]", "trusted", "none", "x")
        assert row_key(key) == key
        cache.put(key, rec)
        assert len(cache._rows) <= 2
