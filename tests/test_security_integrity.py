"""Issue 12, integrity findings: rollback from history (I1, I5, T6), whole-file restore and audit truncation
(D3, A1, I5), unsigned derivation links (S4, I4).

Every attack is the one the red team reported, done the way they did it: a plain sqlite3 connection (or a file
copy) on the database, with no access to the signing key or to anything beside it.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path

import memwarden
from memwarden import audit, doctor
from memwarden.errors import IntegrityError
from memwarden.prompt_block import parse_blocks
from memwarden.service import MemoryService
from raw_sql import raw_sql

SCOPE = memwarden.Scope(tenant="acme", user="u-42", agent="support")
OLD = "User prefers the legacy billing API v1"
NEW = "User prefers the billing API v2"


def _save(store: MemoryService, content: str, scope: memwarden.Scope = SCOPE, kind: str = "preference") -> str:
    with store.session(scope) as s:
        res = s.save(content, kind=kind)
    assert res.status == "accepted" and res.id, res
    return res.id


def _saved_and_updated(store: MemoryService) -> str:
    mid = _save(store, OLD)
    with store.session(SCOPE) as s:
        assert s.update(mid, NEW, expected_version=1).status == "accepted"
    return mid


def _copy_history_back(db_path: Path, mid: str, version: int = 1) -> dict[str, object]:
    """Put a record's older signed version from memory_history back into memories (the FTS row too)."""
    conn = sqlite3.connect(db_path)
    try:
        cols = [r[1] for r in conn.execute("PRAGMA table_info(memories)")]
        old = conn.execute(f"SELECT {','.join(cols)} FROM memory_history WHERE id = ? AND version = ?",
                           (mid, version)).fetchone()
        assert old is not None
        conn.execute(f"UPDATE memories SET {', '.join(c + ' = ?' for c in cols[1:])} WHERE id = ?",
                     (*old[1:], mid))
        rowid = conn.execute("SELECT rowid FROM memories WHERE id = ?", (mid,)).fetchone()[0]
        conn.execute("DELETE FROM memories_fts WHERE rowid = ?", (rowid,))
        conn.commit()
    finally:
        conn.close()
    return dict(zip(cols, old, strict=True))


def _served(store: MemoryService, mid: str) -> list[str]:
    """What a fresh session serves of ``mid``: through view(id), the listing and the prompt block."""
    out: list[str] = []
    with store.session(SCOPE) as s:
        with contextlib.suppress(IntegrityError):  # refused: not served
            out.append(s.view(mid).content)
        out += [r.content for r in s.view() if r.id == mid]
        out += [e.content for b in parse_blocks(s.system_block()) for e in b.entries if e.id == mid]
    return out


# --- item 1: rollback is served (I1, T6, I5) ----------------------------------------------------------------


def test_I1_rollback_from_history_with_an_unchained_audit_row_is_not_served(store: MemoryService,
                                                                            db_path: Path) -> None:
    """The finding as reported: the v1 row from memory_history is put back, and one audit row appended that
    claims v1 is current (the attacker cannot compute its MAC or link it: any hash will do)."""
    mid = _saved_and_updated(store)
    old = _copy_history_back(db_path, mid)
    seq, prev = store.backend.conn.execute("SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1").fetchone()
    details = json.dumps({"version": 1, "content_hash": old["content_hash"], "kind": "preference"},
                         sort_keys=True, separators=(",", ":"))
    raw_sql(db_path, ("INSERT INTO audit (seq, ts, event, tenant, user_id, agent, session_id, memory_id, actor,"
                      " details, prev_hash, hash) VALUES (?, ?, 'updated', 'acme', 'u-42', 'support', 's', ?,"
                      " 'agent', ?, ?, ?)", (seq + 1, 1, mid, details, prev, "ab" * 32)))
    assert OLD not in _served(store, mid)
    assert NEW not in _served(store, mid)  # the row now holds v1: nothing of it is served
    # and a process that opens the store afresh refuses it too
    with memwarden.open(db_path) as again:
        assert _served(again, mid) == []
        findings = doctor.run(again)
    assert any(f.subject == mid for f in findings), findings


def test_I1_rollback_with_the_newer_audit_event_deleted_is_not_served(store: MemoryService,
                                                                      db_path: Path) -> None:
    """Variant without forging anything: delete the genuine "updated" row, so the genuine "added" row of v1 is
    the newest lifecycle event. The gap breaks the chain after that event: the evidence no longer vouches."""
    mid = _saved_and_updated(store)
    _save(store, "User's team is called Falcon", kind="fact")  # rows after the deleted one
    _copy_history_back(db_path, mid)
    raw_sql(db_path, "DROP TRIGGER audit_no_delete",
            ("DELETE FROM audit WHERE memory_id = ? AND event = 'updated'", (mid,)))
    with memwarden.open(db_path) as fresh:
        assert _served(fresh, mid) == []
    assert _served(store, mid) == []


def test_I1_rollback_with_the_newer_audit_event_renamed_is_not_served(store: MemoryService,
                                                                      db_path: Path) -> None:
    """Variant: edit the genuine "updated" row into a read event so the lookup skips it (its MAC breaks)."""
    mid = _saved_and_updated(store)
    _copy_history_back(db_path, mid)
    raw_sql(db_path, "DROP TRIGGER audit_no_update",
            ("UPDATE audit SET event = 'read' WHERE memory_id = ? AND event = 'updated'", (mid,)))
    with memwarden.open(db_path) as fresh:
        assert _served(fresh, mid) == []


def test_I1_genuine_records_are_still_served_and_the_chain_walk_is_incremental(store: MemoryService) -> None:
    mid = _saved_and_updated(store)
    assert _served(store, mid) == [NEW, NEW, NEW]
    walked = store.chain.seq
    assert walked > 0 and store.chain.breaks == []
    _served(store, mid)
    head = store.backend.conn.execute("SELECT max(seq) FROM audit").fetchone()[0]
    assert walked < store.chain.seq <= head  # only the new rows were walked
    assert audit.verify(store.backend, store.signer) == []
