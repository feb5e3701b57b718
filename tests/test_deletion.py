"""D1 capacity, D2 expiry, D3 deletion: what is forgotten is gone from every table, index and derived record.

Deletion is checked the hard way: every table in ``sqlite_master`` (FTS5 shadow tables included) is read
in full and searched for the content and the id.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

import memwarden
from memwarden import audit, doctor
from memwarden.errors import CapacityError, InvalidInput, NotFound
from memwarden.events import Event
from memwarden.prompt_block import parse_blocks
from memwarden.records import content_hash, now_ms
from memwarden.service import Context, MemoryService
from raw_sql import raw_sql

pytestmark = pytest.mark.engines  # the tests that use the store fixture run on SQLite and on PostgreSQL

SCOPE = memwarden.Scope(tenant="acme", user="u-42", agent="support")
DAY_MS = 86_400_000
TOMBSTONE_TABLES = {"audit", "audit_reads"}


def _advance(monkeypatch: pytest.MonkeyPatch, ms: int) -> None:
    """Move memwarden's clock forward (signatures are unaffected: only "now" changes)."""
    import memwarden.audit
    import memwarden.records
    import memwarden.service
    import memwarden.session

    def later() -> int:
        return now_ms() + ms

    for mod in (memwarden.records, memwarden.service, memwarden.session, memwarden.audit):
        if hasattr(mod, "now_ms"):
            monkeypatch.setattr(mod, "now_ms", later)


def _tables(conn: sqlite3.Connection) -> list[str]:
    return [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]


def _tables_holding(db_path: Path, needle: str) -> dict[str, int]:
    """Every table with at least one row holding ``needle`` in any column (text or blob), with a row count."""
    conn = sqlite3.connect(db_path)
    try:
        tables = _tables(conn)
        assert {"memories", "memories_fts", "memories_fts_content", "memories_fts_data", "memory_history",
                "memory_links", "audit"} <= set(tables)
        found: dict[str, int] = {}
        raw = needle.encode()
        for table in tables:
            n = 0
            for row in conn.execute(f'SELECT * FROM "{table}"'):
                cells = (v if isinstance(v, bytes) else str(v).encode() for v in row if v is not None)
                if any(raw in cell for cell in cells):
                    n += 1
            if n:
                found[table] = n
        return found
    finally:
        conn.close()


def _save(s: memwarden.Session, content: str, kind: str = "fact", **kw: object) -> str:
    res = s.save(content, kind=kind, **kw)  # type: ignore[arg-type]
    assert res.status == "accepted" and res.id, res
    return res.id


# --- D1: capacity -------------------------------------------------------------------------------------------


def _capped(db_path: Path, entries: int = 3, max_bytes: int = 10_000) -> MemoryService:
    limits = {"fact": memwarden.KindLimits(max_entries=entries, max_bytes=max_bytes)}
    return memwarden.open(db_path, policy=memwarden.Policy(limits=limits))


def test_d1_capacity_error_lists_every_entry(db_path: Path) -> None:
    with _capped(db_path) as store, store.session(SCOPE) as s:
        contents = ["User likes tea", "User lives in Lyon", "User's long note " + "x" * 200]
        ids = [_save(s, c) for c in contents]
        other_kind = _save(s, "User prefers dark mode", kind="preference")  # other kinds are not counted
        with pytest.raises(CapacityError) as err:
            s.save("User likes coffee")
        e = err.value
        assert e.kind == "fact" and "3 entries" in e.limit
        by_id = {x["id"]: x for x in e.entries}
        assert len(e.entries) == 3 and set(by_id) == set(ids)
        for mid, content in zip(ids, contents, strict=True):
            entry = by_id[mid]
            assert set(entry) >= {"id", "bytes", "preview"}
            assert entry["bytes"] == len(content.encode())
            assert content.startswith(entry["preview"].rstrip("…")) and len(entry["preview"]) <= 80
        assert other_kind not in {x["id"] for x in e.entries}
        assert s.search("coffee") == []
        # the tool dispatcher returns the same thing as a JSON error
        out = s.call_tool("memory_save", {"content": "User likes coffee"})
        assert json.loads(json.dumps(out)) == out
        assert out["error"] == "capacity" and out["entries"] == e.entries and out["kind"] == "fact"
        # removing one makes room
        s.remove(ids[0])
        assert s.save("User likes coffee").status == "accepted"
    with _capped(db_path) as store, store.session(memwarden.Scope("acme", "u-43", "support")) as s:
        assert s.save("Another user's fact").status == "accepted"  # capacity is per scope


def test_d1_byte_limit(db_path: Path) -> None:
    with _capped(db_path, entries=100, max_bytes=60) as store, store.session(SCOPE) as s:
        a = _save(s, "a" * 30)
        b = _save(s, "b" * 25)
        with pytest.raises(CapacityError) as err:
            s.save("c" * 10)
        assert "60 bytes" in err.value.limit
        assert sorted((x["id"], x["bytes"]) for x in err.value.entries) == sorted([(a, 30), (b, 25)])
        with pytest.raises(CapacityError):  # an update that grows past the limit is refused too
            s.update(b, "b" * 40, expected_version=1)
        assert s.update(b, "b" * 30, expected_version=1).status == "accepted"
        assert s.call_tool("memory_save", {"content": "d" * 5})["error"] == "capacity"


def test_d1_expired_records_free_capacity(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with _capped(db_path) as store:
        events: list[Event] = []
        store.events.subscribe(events.append, events=["expired"])
        with store.session(SCOPE) as s:
            short = [_save(s, f"Short lived fact {i}", ttl_days=1) for i in range(2)]
            keep = _save(s, "Long lived fact", ttl_days=30)
            with pytest.raises(CapacityError):
                s.save("One too many")
        _advance(monkeypatch, DAY_MS + 1000)
        with store.session(SCOPE) as s:
            assert s.save("Fits once the old ones expired").status == "accepted"
            assert keep in {r.id for r in s.view()}
        tombs = audit.log_rows(store.backend, event="expired", limit=100)
        assert {r["memory_id"] for r in tombs} == set(short)
        assert all(r["details"]["tombstone"] and r["details"]["content_hash"] for r in tombs)
        assert doctor.run(store) == []


def test_d1_expiry_at_capacity_publishes_expired_events(db_path: Path, monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    with _capped(db_path, entries=1) as store:
        events: list[Event] = []
        store.events.subscribe(events.append, events=["expired"])
        with store.session(SCOPE) as s:
            short = _save(s, "Short lived fact", ttl_days=1)
        _advance(monkeypatch, DAY_MS + 1000)
        with store.session(SCOPE) as s:
            assert s.save("Fits once the old one expired").status == "accepted"
        assert [e.memory_id for e in events] == [short]


# --- D2: expiry ---------------------------------------------------------------------------------------------


@pytest.mark.sqlite_only  # reads or edits SQLite's own tables (test_postgres.py covers PostgreSQL)
def test_d2_expired_record_is_invisible_before_gc_and_gc_purges_it(store: MemoryService, db_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    with store.session(SCOPE) as s:
        pref = _save(s, "User prefers ephemerald fonts", kind="preference", ttl_days=1)
        fact = _save(s, "User's ephemerald project is due", ttl_days=1)
        remind = _save(s, "Ephemerald review call", kind="reminder", ttl_days=1, due=now_ms() + 3_600_000)
        keep = _save(s, "User prefers ephemerald tea", kind="preference", ttl_days=30)
    short = {pref, fact, remind}
    with store.session(SCOPE) as s:
        assert short <= {e.id for b in parse_blocks(s.system_block()) for e in b.entries}

    _advance(monkeypatch, DAY_MS + 1000)
    with store.session(SCOPE) as s:
        block = s.system_block()
        assert {e.id for b in parse_blocks(block) for e in b.entries} == {keep}
        assert "project is due" not in block and "review call" not in block
        assert {r.id for r in s.search("ephemerald", k=10)} == {keep}
        assert {r.id for r in s.view()} == {keep}
        for mid in short:
            with pytest.raises(NotFound):
                s.view(mid)
            with pytest.raises(NotFound):
                s.update(mid, "Revived", expected_version=1)
            assert s.call_tool("memory_view", {"id": mid})["error"] == "not_found"
        assert "project" not in json.dumps(s.call_tool("memory_search", {"query": "ephemerald project"}))
    conn = store.backend.conn
    assert conn.execute("SELECT count(*) FROM memories").fetchone()[0] == 4  # invisible, not yet purged

    events: list[Event] = []
    store.events.subscribe(events.append)
    assert set(store.gc()) == short
    assert {e.memory_id for e in events if e.event == "expired"} == short
    tomb = {r["memory_id"]: r for r in audit.log_rows(store.backend, event="expired", limit=100)}
    assert set(tomb) == short and all(r["details"]["content_hash"] for r in tomb.values())
    for needle in ("ephemerald fonts", "ephemerald project", "Ephemerald review", *short):
        assert set(_tables_holding(db_path, needle)) <= TOMBSTONE_TABLES, needle
    assert doctor.run(store) == []
    assert store.gc() == []


@pytest.mark.parametrize("days", [0, -1, 366, 10_000])
def test_d2_retention_outside_1_to_365_days_is_refused(store: MemoryService, days: int) -> None:
    with store.session(SCOPE) as s:
        with pytest.raises(InvalidInput):
            s.save("User likes tea", ttl_days=days)
        assert s.call_tool("memory_save", {"content": "User likes tea", "ttl_days": days})["error"] \
            == "invalid_arguments"
        assert s.view() == []


# --- D3: deletion reaches every table and every derived record ----------------------------------------------


def _populate(store: MemoryService) -> dict[str, str]:
    """A record with history, read in sessions, and a chain of records derived from it; plus a bystander."""
    with store.session(SCOPE) as s:
        target = _save(s, "User's favourite bird is the zebracornius")
        s.search("zebracornius")
        s.view(target)
        s.update(target, "User's favourite bird is the plumbatronic", expected_version=1)
        summary = Context(SCOPE, session_id=s.id, source_type="consolidation", actor="consolidator")
        d1 = store.write(summary, "Summary: bird lover, kestrelwing", derived_from=[target]).id
        assert d1
        d2 = store.write(summary, "Digest of digest: marmosettle", derived_from=[d1]).id
        assert d2
        bystander = _save(s, "User's favourite fish is the carp")
    with store.session(SCOPE) as s:  # injected into a later session's block too
        assert target in s.system_block()
    return {"target": target, "d1": d1, "d2": d2, "bystander": bystander}


REMOVED_TEXT = ("favourite bird is the zebracornius", "favourite bird is the plumbatronic",
                "bird lover, kestrelwing", "digest: marmosettle")


def _assert_gone(store: MemoryService, db_path: Path, ids: dict[str, str]) -> None:
    gone = [ids["target"], ids["d1"], ids["d2"]]
    for text in REMOVED_TEXT:
        assert _tables_holding(db_path, text) == {}, text
    for mid in gone:
        assert set(_tables_holding(db_path, mid)) <= TOMBSTONE_TABLES, mid
        tombs = audit.log_rows(store.backend, memory_id=mid, event="removed")
        assert len(tombs) == 1 and tombs[0]["details"]["tombstone"] is True
        assert tombs[0]["details"]["content_hash"]
    final = audit.log_rows(store.backend, memory_id=ids["target"], event="removed")[0]
    assert final["details"]["content_hash"] == content_hash(
        "User's favourite bird is the plumbatronic")
    with store.session(SCOPE) as s:
        assert s.search("zebracornius plumbatronic kestrelwing marmosettle", k=10) == []
        assert [r.id for r in s.view()] == [ids["bystander"]]
        for mid in gone:
            with pytest.raises(NotFound):
                s.view(mid)
    assert doctor.run(store) == []


@pytest.mark.sqlite_only  # reads or edits SQLite's own tables (test_postgres.py covers PostgreSQL)
def test_d3_remove_deletes_record_history_index_and_derived_records(store: MemoryService, db_path: Path
                                                                    ) -> None:
    ids = _populate(store)
    assert _tables_holding(db_path, "zebracornius")  # sanity: the scan does see live data
    events: list[Event] = []
    store.events.subscribe(events.append, events=["removed"])
    with store.session(SCOPE) as s:
        removed = s.remove(ids["target"])
    assert set(removed) == {ids["target"], ids["d1"], ids["d2"]}
    assert {e.memory_id for e in events} == set(removed)
    _assert_gone(store, db_path, ids)


@pytest.mark.sqlite_only  # reads or edits SQLite's own tables (test_postgres.py covers PostgreSQL)
def test_d3_remove_through_the_tool_dispatcher(store: MemoryService, db_path: Path) -> None:
    ids = _populate(store)
    with store.session(SCOPE) as s:
        out = s.call_tool("memory_remove", {"id": ids["target"]})
    assert out["status"] == "removed" and set(out["ids"]) == {ids["target"], ids["d1"], ids["d2"]}
    _assert_gone(store, db_path, ids)


@pytest.mark.sqlite_only  # reads or edits SQLite's own tables (test_postgres.py covers PostgreSQL)
@pytest.mark.parametrize("how", ["session", "tool"])
def test_d3_clear_leaves_no_row_in_any_table(store: MemoryService, db_path: Path, how: str) -> None:
    ids = _populate(store)
    neighbour = memwarden.Scope("acme", "u-42", "billing")
    with store.session(neighbour) as s:
        kept = _save(s, "Neighbour agent notes the zebracornius too")
    with store.session(SCOPE) as s:
        cleared = s.clear() if how == "session" else s.call_tool("memory_clear", {"confirm": True})["ids"]
    assert set(cleared) == set(ids.values())
    for text in (*REMOVED_TEXT, "favourite fish is the carp"):
        assert _tables_holding(db_path, text) == {}, text
    for mid in ids.values():
        assert set(_tables_holding(db_path, mid)) <= TOMBSTONE_TABLES
    with store.session(neighbour) as s:
        assert s.view(kept).content == "Neighbour agent notes the zebracornius too"
    assert doctor.run(store) == []


@pytest.mark.sqlite_only  # reads or edits SQLite's own tables (test_postgres.py covers PostgreSQL)
def test_d3_removing_a_shared_record_removes_what_agents_derived_from_it(store: MemoryService,
                                                                         db_path: Path) -> None:
    shared = memwarden.Scope("acme", "u-42")
    with store.session(shared) as s:
        src = _save(s, "User's employer is Quillbright Ltd")
    with store.session(SCOPE, read_shared=True) as s:
        ctx = Context(SCOPE, session_id=s.id, source_type="consolidation", read_shared=True)
        derived = store.write(ctx, "Works at Quillbright, a small firm", derived_from=[src]).id
    assert derived
    with store.session(shared) as s:
        assert set(s.remove(src)) == {src, derived}
    assert _tables_holding(db_path, "Quillbright") == {}
    tomb = audit.log_rows(store.backend, memory_id=derived, event="removed")[0]
    assert (tomb["tenant"], tomb["user"], tomb["agent"]) == ("acme", "u-42", "support")
    assert doctor.run(store) == []


@pytest.mark.sqlite_only  # reads or edits SQLite's own tables (test_postgres.py covers PostgreSQL)
def test_d3_derived_record_removed_even_if_its_link_row_was_deleted(store: MemoryService, db_path: Path
                                                                    ) -> None:
    with store.session(SCOPE) as s:
        src = _save(s, "User's address is 12 Wrenfield Road")
        ctx = Context(SCOPE, session_id=s.id, source_type="consolidation")
        derived = store.write(ctx, "Lives on Wrenfield Road", derived_from=[src]).id
    raw_sql(db_path, ("DELETE FROM memory_links WHERE source_id = ?", (src,)))
    with store.session(SCOPE) as s:
        assert set(s.remove(src)) == {src, derived}
    assert _tables_holding(db_path, "Wrenfield") == {}


def test_d3_derived_from_another_scope_is_refused(store: MemoryService) -> None:
    with store.session(memwarden.Scope("globex", "u-42", "support")) as s:
        foreign = _save(s, "Globex secret roadmap")
    with pytest.raises(InvalidInput):
        store.write(Context(SCOPE, session_id="s-x", source_type="consolidation", actor="system:consolidate"),
                    "Summary", derived_from=[foreign])


@pytest.mark.sqlite_only  # reads or edits SQLite's own tables (test_postgres.py covers PostgreSQL)
def test_d3_doctor_reports_planted_zombies(store: MemoryService, db_path: Path) -> None:
    with store.session(SCOPE) as s:
        mid = _save(s, "User likes tea")
        s.update(mid, "User likes green tea", expected_version=1)
    conn = sqlite3.connect(db_path)
    try:
        conn.execute("INSERT INTO memories_fts (rowid, content) VALUES (999999, 'zombie text')")
        cols = [r[1] for r in conn.execute("PRAGMA table_info(memory_history)")]
        picked = ", ".join("'GHOST'" if c == "id" else c for c in cols)
        conn.execute(f"INSERT INTO memory_history ({', '.join(cols)}) SELECT {picked} FROM memory_history"
                     " WHERE id = ?", (mid,))
        conn.execute("INSERT INTO memory_links VALUES (?, 'GONE')", (mid,))
        conn.commit()
    finally:
        conn.close()
    zombies = {f.subject for f in doctor.run(store) if f.check == "zombie"}
    assert {"999999", "GHOST", f"{mid} <- GONE"} <= zombies


@pytest.mark.sqlite_only  # reads or edits SQLite's own tables (test_postgres.py covers PostgreSQL)
def test_d3_fts_index_keeps_no_term_of_a_removed_record_after_gc(store: MemoryService, db_path: Path) -> None:
    ids = _populate(store)
    with store.session(SCOPE) as s:
        s.remove(ids["target"])
    store.gc()  # gc compacts the FTS5 index: until then FTS5 keeps delete markers next to the old terms
    for token in ("zebracorn", "plumbatron", "kestrelw", "marmosett"):  # stems, as FTS5 stores them
        assert _tables_holding(db_path, token) == {}, token


def test_d3_removed_content_not_recoverable_from_the_live_files(store: MemoryService, db_path: Path) -> None:
    ids = _populate(store)
    with store.session(SCOPE) as s:
        s.remove(ids["target"])
    # the store is still open, as in a running service: read its files as a thief with file access would
    blob = b"".join(p.read_bytes() for p in db_path.parent.glob(db_path.name + "*"))
    for text in ("zebracornius", "plumbatronic", "kestrelwing", "marmosettle"):
        assert text.encode() not in blob, text
