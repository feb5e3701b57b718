"""A1–A3: the hash-chained, append-only audit log; read audit and blast radius; the event bus.

The attacker has the database file but not the key: they drop the append-only triggers and edit, delete,
reorder or forge audit rows. ``audit.verify`` (and ``doctor``) must notice every one of those.
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

import memwarden
from conftest import held_write
from memwarden import audit, doctor
from memwarden.events import Event
from memwarden.service import MemoryService
from pg_helpers import tamper_audit

SCOPE = memwarden.Scope(tenant="acme", user="u-42", agent="support")


pytestmark = pytest.mark.engines  # the tests that use the store fixture run on SQLite and on PostgreSQL


def _normal_use(store: MemoryService) -> dict[str, str]:
    """A bit of everything: sessions, saves, reads, an update, a rejection, a held record, a removal."""
    with store.session(SCOPE) as s:
        a = s.save("User prefers Go for services", kind="preference").id
        b = s.save("User's team is called Falcon", kind="fact").id
        assert a and b
        s.search("Go services")
        s.view(a)
        s.view()
        s.update(b, "User's team is called Osprey", expected_version=1)
        assert s.save("\x00bad", kind="fact").status == "rejected"
        c = s.save("Temporary fact to delete").id
        assert c
        s.remove(c)
    held = held_write(store, SCOPE, "Untrusted page says hi")
    assert held.status == "review"
    with store.session(SCOPE) as s:
        s.system_block()
    return {"a": a, "b": b, "c": c}


def _seqs(store: MemoryService) -> list[int]:
    with store.backend.read() as db:
        return [int(r[0]) for r in db.audit_rows()]


def test_a1_verify_is_clean_after_normal_use(store: MemoryService) -> None:
    _normal_use(store)
    assert len(_seqs(store)) >= 12
    assert _seqs(store) == list(range(1, len(_seqs(store)) + 1))
    assert audit.verify(store.backend, store.signer) == []
    assert doctor.run(store) == []


def test_a1_lifecycle_events_are_in_the_log(store: MemoryService) -> None:
    ids = _normal_use(store)
    events = [(r["event"], r["memory_id"]) for r in audit.log_rows(store.backend, limit=1000)]
    for expected in [("added", ids["a"]), ("added", ids["b"]), ("updated", ids["b"]), ("added", ids["c"]),
                     ("removed", ids["c"])]:
        assert expected in events
    names = {e for e, _ in events}
    assert {"rejected", "held", "read", "injected", "session_started"} <= names
    rejected = audit.log_rows(store.backend, event="rejected")[0]
    assert rejected["details"]["candidate"] == "\x00bad"  # G6: the full candidate is kept
    assert rejected["details"]["rules"]
    added = audit.log_rows(store.backend, event="added", memory_id=ids["a"])[0]
    assert "Go for services" not in str(added["details"])  # id + hash, never content


@pytest.mark.parametrize(("column", "value"), [
    ("event", "promoted"),
    ("ts", 1),
    ("tenant", "globex"),
    ("user_id", "u-1"),
    ("agent", "billing"),
    ("session_id", "01HZZZZZZZZZZZZZZZZZZZZZZZ"),
    ("memory_id", "01HZZZZZZZZZZZZZZZZZZZZZZZ"),
    ("actor", "operator:alice"),
    ("details", '{"ids":[]}'),
    ("prev_hash", "0" * 64),
    ("hash", "f" * 64),
])
def test_a1_edited_audit_row_fails_verify(store: MemoryService, store_url: str, column: str, value: object
                                          ) -> None:
    _normal_use(store)
    middle = _seqs(store)[len(_seqs(store)) // 2]
    tamper_audit(store_url, (f"UPDATE audit SET {column} = ? WHERE seq = ?", (value, middle)))
    problems = audit.verify(store.backend, store.signer)
    assert problems and {p.seq for p in problems} <= {middle, middle + 1}
    assert any(f.check == "audit" for f in doctor.run(store))


@pytest.mark.sqlite_only  # SQLite's JSON functions and triggers (test_postgres.py has PostgreSQL's)
def test_a1_edited_tombstone_hash_fails_verify(store: MemoryService, store_url: str) -> None:
    ids = _normal_use(store)
    seq = next(r["seq"] for r in audit.log_rows(store.backend, event="removed", memory_id=ids["c"]))
    tamper_audit(store_url, ("UPDATE audit SET details = json_set(details, '$.content_hash', ?) WHERE seq = ?",
                             ("0" * 64, seq)))
    assert [p.seq for p in audit.verify(store.backend, store.signer)] == [seq]


@pytest.mark.parametrize("which", ["first", "middle", "second_to_last"])
def test_a1_deleted_audit_row_fails_verify(store: MemoryService, store_url: str, which: str) -> None:
    _normal_use(store)
    seqs = _seqs(store)
    seq = {"first": seqs[0], "middle": seqs[len(seqs) // 2], "second_to_last": seqs[-2]}[which]
    tamper_audit(store_url, ("DELETE FROM audit WHERE seq = ?", (seq,)))
    problems = audit.verify(store.backend, store.signer)
    assert problems and problems[0].seq == seq + 1
    assert any(f.check == "audit" for f in doctor.run(store))


def test_a1_deleted_run_of_rows_fails_verify(store: MemoryService, store_url: str) -> None:
    _normal_use(store)
    seqs = _seqs(store)
    tamper_audit(store_url, ("DELETE FROM audit WHERE seq BETWEEN ? AND ?", (seqs[2], seqs[6])))
    assert audit.verify(store.backend, store.signer)


def test_a1_truncated_tail_of_the_audit_log_fails_verify(store: MemoryService, store_url: str) -> None:
    _normal_use(store)
    last = _seqs(store)[-1]
    tamper_audit(store_url, ("DELETE FROM audit WHERE seq >= ?", (last - 2,)))
    assert audit.verify(store.backend, store.signer)


def test_a1_reordered_audit_rows_fail_verify(store: MemoryService, store_url: str) -> None:
    _normal_use(store)
    seqs = _seqs(store)
    x, y = seqs[3], seqs[4]
    tamper_audit(store_url, ("UPDATE audit SET seq = -1 WHERE seq = ?", (x,)),
         ("UPDATE audit SET seq = ? WHERE seq = ?", (x, y)),
         ("UPDATE audit SET seq = ? WHERE seq = -1", (y,)))
    problems = audit.verify(store.backend, store.signer)
    assert {p.seq for p in problems} & {x, y}
    assert any(f.check == "audit" for f in doctor.run(store))


def test_a1_forged_audit_row_fails_verify(store: MemoryService, store_url: str) -> None:
    _normal_use(store)
    with store.backend.read() as db:
        seq, prev = db.audit_head()
    details = '{"approver":"operator:alice"}'
    forged = hashlib.sha256((prev + details).encode()).hexdigest()  # the attacker has no key
    tamper_audit(store_url, ("INSERT INTO audit (seq, ts, event, actor, details, prev_hash, hash)"
                   " VALUES (?, 1, 'promoted', 'operator:alice', ?, ?, ?)", (seq + 1, details, prev, forged)))
    assert {p.seq for p in audit.verify(store.backend, store.signer)} == {seq + 1}


@pytest.mark.sqlite_only  # SQLite's JSON functions and triggers (test_postgres.py has PostgreSQL's)
def test_a1_audit_rows_cannot_be_updated_or_deleted_through_sql(store: MemoryService, db_path: Path) -> None:
    _normal_use(store)
    conn = sqlite3.connect(db_path)
    try:
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            conn.execute("UPDATE audit SET details = '{}' WHERE seq = 2")
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            conn.execute("DELETE FROM audit WHERE seq = 2")
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            conn.execute("DELETE FROM audit")
        conn.rollback()
    finally:
        conn.close()
    assert audit.verify(store.backend, store.signer) == []


# --- A2: read audit and blast radius ------------------------------------------------------------------------


def test_a2_prompt_and_tool_reads_are_logged_and_reads_of_lists_sessions(store: MemoryService) -> None:
    with store.session(SCOPE) as s:
        mid = s.save("User prefers Go for services", kind="preference").id
        other = s.save("User's cat is called Miso", kind="fact").id
        writer_session = s.id
    assert mid and other
    with store.session(SCOPE) as s1:  # the block injects it
        assert mid in s1.system_block()
    with store.session(SCOPE) as s2:
        assert [r.id for r in s2.search("Go services")] == [mid]
    with store.session(SCOPE) as s3:
        s3.view(mid)
    with store.session(SCOPE) as s4:
        s4.view()
    with store.session(SCOPE) as s5:
        s5.call_tool("memory_search", {"query": "Go"})
        s5.call_tool("memory_view", {"id": mid})
    with store.session(memwarden.Scope("globex", "u-1", "x")) as outsider:
        outsider.search("Go services")  # reads nothing: must not appear
    sessions = [r["session_id"] for r in audit.reads_of(store.backend, mid)]
    # every session started after the save had the memory injected into its block
    assert set(sessions) == {s1.id, s2.id, s3.id, s4.id, s5.id}
    assert writer_session not in sessions and outsider.id not in sessions
    by_event: dict[str, set[str]] = {}
    for r in audit.reads_of(store.backend, mid):
        by_event.setdefault(r["event"], set()).add(r["session_id"])
    assert by_event["injected"] == {s1.id, s2.id, s3.id, s4.id, s5.id}
    assert by_event["read"] == {s2.id, s3.id, s4.id, s5.id}
    read_rows = audit.log_rows(store.backend, event="read", limit=100)
    vias = {(r["session_id"], r["details"]["via"]) for r in read_rows if mid in r["details"]["ids"]}
    assert {(s2.id, "search"), (s3.id, "view"), (s4.id, "list"), (s5.id, "search"), (s5.id, "view")} <= vias
    injected = [r for r in audit.log_rows(store.backend, event="injected", limit=100)
                if r["session_id"] == s1.id]
    assert len(injected) == 1 and set(injected[0]["details"]["ids"]) == {mid, other}
    reads = list(audit.reads_of(store.backend, mid))
    assert all((r["tenant"], r["user"], r["agent"]) == ("acme", "u-42", "support") for r in reads)
    assert audit.verify(store.backend, store.signer) == []


def test_a2_reads_of_survives_deletion_as_blast_radius(store: MemoryService) -> None:
    with store.session(SCOPE) as s:
        mid = s.save("User prefers Go for services", kind="preference").id
        assert mid
    with store.session(SCOPE) as s:
        s.view(mid)
        s.remove(mid)
    assert [r["session_id"] for r in audit.reads_of(store.backend, mid)] == [s.id, s.id]


def test_a2_hiding_a_read_from_the_blast_radius_breaks_the_chain(store: MemoryService, store_url: str) -> None:
    """The blast radius is read from the chained audit rows, so hiding a read means breaking the chain."""
    with store.session(SCOPE) as s:
        mid = s.save("User prefers Go for services", kind="preference").id
    with store.session(SCOPE) as s:
        s.view(mid)
    assert mid and len(list(audit.reads_of(store.backend, mid))) == 2  # injected into the 2nd session + viewed
    tamper_audit(store_url, ("DELETE FROM audit WHERE event = 'read' AND details LIKE ?", (f"%{mid}%",)))
    assert len(list(audit.reads_of(store.backend, mid))) == 1
    assert audit.verify(store.backend, store.signer)
    assert any(f.check == "audit" for f in doctor.run(store))


# --- A3: events reach subscribers ---------------------------------------------------------------------------


def test_a3_lifecycle_events_reach_subscribers(store: MemoryService) -> None:
    got: list[Event] = []
    only_removed: list[Event] = []
    store.events.subscribe(got.append)
    unsubscribe = store.events.subscribe(only_removed.append, events=["removed"])
    with store.session(SCOPE) as s:
        mid = s.save("User prefers Go for services", kind="preference").id
        assert mid
        s.update(mid, "User prefers Rust for services", expected_version=1)
        assert s.save("", kind="fact").status == "rejected"
        s.remove(mid)
        sid = s.id
    held = held_write(store, SCOPE, "Page says hi")
    unsubscribe()
    with store.session(SCOPE) as s:
        gone = s.save("Another one").id
        assert gone
        s.remove(gone)
    seen = [(e.event, e.memory_id) for e in got]
    for expected in [("added", mid), ("updated", mid), ("rejected", None), ("removed", mid),
                     ("held", held.id), ("removed", gone)]:
        assert expected in seen
    assert [e.memory_id for e in only_removed] == [mid]
    rows = {r["seq"]: r for r in audit.log_rows(store.backend, limit=1000)}
    for e in got:  # every published event is the committed audit row
        assert e.seq is not None
        assert (rows[e.seq]["event"], rows[e.seq]["memory_id"]) == (e.event, e.memory_id)
    by = {(e.event, e.memory_id): e for e in got}
    assert by[("added", mid)].session_id == sid and by[("added", mid)].tenant == "acme"
    assert "Go for services" not in str(by[("added", mid)].details)


def test_a3_failing_subscriber_never_breaks_a_write(store: MemoryService) -> None:
    def boom(_: Event) -> None:
        raise RuntimeError("subscriber bug")

    store.events.subscribe(boom)
    with store.session(SCOPE) as s:
        res = s.save("User prefers Go for services", kind="preference")
        assert res.status == "accepted" and res.id
        assert s.view(res.id).content == "User prefers Go for services"
    assert audit.verify(store.backend, store.signer) == []
