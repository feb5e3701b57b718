"""I2/I3 under group commit (store/sqlite/backend.py): writers of one process that queue up share a commit, and still
every acknowledged write is durable, a failing write undoes only itself, a failed commit fails every write it
held, and readers never see a group's uncommitted work."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

import memwarden
from memwarden import audit, doctor
from memwarden.service import MemoryService
from memwarden.store.sqlite import NotCommitted, SqliteBackend, Tx

SCOPE = memwarden.Scope(tenant="acme", user="u-gc", agent="writer")


def _queued(backend: SqliteBackend, n: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while len(backend._pending) < n:
        assert time.monotonic() < deadline, "writers did not queue"
        time.sleep(0.001)


def _grouped(backend: SqliteBackend, others: list[Callable[[Tx], Any]]) -> tuple[list[Any], list[Any]]:
    """Run ``others`` as one group: a first write holds the combiner role until all of them have queued."""
    def blocker(tx: Tx) -> str:
        _queued(backend, len(others))
        tx.execute("INSERT INTO meta VALUES ('blocker', '1')")
        return "blocker"

    results: list[Any] = [None] * len(others)
    errors: list[Any] = [None] * len(others)

    def submit(i: int) -> None:
        try:
            results[i] = backend.run_write(others[i])
        except BaseException as exc:
            errors[i] = exc

    def first_write() -> None:
        try:
            results.append(backend.run_write(blocker))
        except BaseException as exc:
            errors.append(exc)

    first = threading.Thread(target=first_write)
    first.start()
    while not backend._busy:
        time.sleep(0.001)
    threads = [threading.Thread(target=submit, args=(i,)) for i in range(len(others))]
    for t in threads:
        t.start()
    for t in [first, *threads]:
        t.join(30)
    return results, errors


def _meta(key: str) -> Callable[[Tx], str]:
    def work(tx: Tx) -> str:
        tx.execute("INSERT INTO meta VALUES (?, 'v')", (key,))
        return key
    return work


def test_i3_group_commit_one_commit_for_queued_writers(store: MemoryService) -> None:
    backend = store.backend
    before = backend.commits
    results, errors = _grouped(backend, [_meta(f"k{i}") for i in range(5)])
    assert errors == [None] * 5
    assert results[:5] == [f"k{i}" for i in range(5)]
    assert backend.commits - before == 1  # the five queued while the first ran joined its transaction
    keys = {r[0] for r in backend.query("SELECT key FROM meta WHERE value = 'v'")}
    assert keys == {f"k{i}" for i in range(5)}


def test_i2_group_commit_a_failing_write_undoes_only_itself(store: MemoryService) -> None:
    def failing(tx: Tx) -> None:
        tx.execute("INSERT INTO meta VALUES ('bad', 'v')")
        raise ValueError("this write fails after writing")

    results, errors = _grouped(store.backend, [_meta("a"), failing, _meta("b")])
    assert results[0] == "a" and results[2] == "b"
    assert isinstance(errors[1], ValueError) and errors[0] is None and errors[2] is None
    keys = {r[0] for r in store.backend.query("SELECT key FROM meta WHERE value = 'v'")}
    assert keys == {"a", "b"}


class _FailingCommit:
    """The write connection, except that its next COMMIT fails (as a full disk or an I/O error would)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self.commits = 0

    def execute(self, sql: str, params: Any = ()) -> Any:
        if sql == "COMMIT":
            self.commits += 1
            if self.commits == 1:
                raise sqlite3.OperationalError("disk I/O error")
        return self._conn.execute(sql, params)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def test_i3_group_commit_a_failed_commit_fails_every_write_it_held(store: MemoryService,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    backend = store.backend
    proxy = _FailingCommit(backend.conn)
    monkeypatch.setattr(backend, "conn", proxy)
    results, errors = _grouped(backend, [_meta("x"), _meta("y")])
    assert results == [None, None]  # nothing succeeded: the first write and the two that joined it
    assert len(errors) == 3 and all(isinstance(e, NotCommitted) for e in errors), errors
    assert backend.query("SELECT key FROM meta WHERE key IN ('x', 'y', 'blocker')") == []
    assert not backend.conn.in_transaction
    monkeypatch.undo()
    with store.session(SCOPE) as s:  # the store keeps working
        assert s.save("Saved after a failed commit", kind="fact").status == "accepted"
    assert audit.verify(backend, store.signer) == []


def test_i3_readers_never_see_uncommitted_group_work(store: MemoryService) -> None:
    seen: list[Any] = []

    def work(tx: Tx) -> None:
        tx.execute("INSERT INTO meta VALUES ('pending', 'v')")
        seen.append(store.backend.query("SELECT key FROM meta WHERE key = 'pending'"))

    store.backend.run_write(work)
    assert seen == [[]]
    assert store.backend.query("SELECT key FROM meta WHERE key = 'pending'") == [("pending",)]


def test_i2_nested_write_is_refused_not_deadlocked(store: MemoryService) -> None:
    def outer(tx: Tx) -> None:
        store.backend.run_write(lambda inner: None)

    with pytest.raises(RuntimeError, match="nested write"):
        store.backend.run_write(outer)
    store.backend.run_write(_meta("after"))  # the combiner role was handed back


def test_i3_many_threads_saving_lose_nothing_and_keep_the_chain(store: MemoryService) -> None:
    ids: list[str] = []
    lock = threading.Lock()
    failures: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            with store.session(memwarden.Scope("acme", f"u-{n}", "writer")) as s:
                for i in range(40):
                    r = s.save(f"Thread {n} remembers item {i} about the kiln", kind="episode")
                    assert r.status == "accepted", r.message
                    with lock:
                        ids.append(r.id or "")
        except BaseException as exc:
            failures.append(exc)

    commits_before = store.backend.commits
    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert failures == []
    assert len(ids) == 320
    rows = store.backend.query(f"SELECT count(*) FROM memories WHERE id IN ({','.join('?' * len(ids))})", ids)
    assert rows == [(320,)]
    assert store.backend.commits - commits_before <= 320 + 16  # saves plus session starts/ends, at most
    assert audit.verify(store.backend, store.signer) == []
    assert doctor.run(store) == []


# --- FTS rows are queued until the group's COMMIT (store/sqlite/backend.py FtsQueue) --------------------------------


def _fts_rows(store: MemoryService) -> set[int]:
    return {int(r[0]) for r in store.backend.query("SELECT rowid FROM memories_fts")}  # type: ignore[arg-type]


def _record_rows(store: MemoryService) -> set[int]:
    return {int(r[0]) for r in store.backend.query("SELECT rowid FROM memories")}  # type: ignore[arg-type]


def _save_work(store: MemoryService, text: str, *, fail: bool = False) -> Callable[[Tx], Any]:
    """A real save's transaction work (gate → … → audit); ``fail``: it raises after storing its row."""
    from memwarden.service import Context

    ctx = Context(SCOPE, session_id="s-gc", source_type="user", actor="system:test")
    inner = store._write_work(ctx, text, [], kind="fact")

    def work(tx: Tx) -> Any:
        res = inner(tx)
        if fail:
            raise ValueError("this save fails after storing its record")
        return res
    return work


def test_i2_group_commit_fts_rows_of_a_failed_write_are_dropped_with_it(store: MemoryService) -> None:
    works = [_save_work(store, "The billing service runs on Kubernetes"),
             _save_work(store, "The payroll job runs every Friday", fail=True),
             _save_work(store, "The dashboard moved to Grafana")]
    _results, errors = _grouped(store.backend, works)
    assert errors[0] is None and errors[2] is None and isinstance(errors[1], ValueError)
    assert _fts_rows(store) == _record_rows(store) and len(_record_rows(store)) == 2
    with store.session(SCOPE) as s:
        assert [r.content for r in s.search("billing kubernetes")] == ["The billing service runs on Kubernetes"]
        assert s.search("payroll friday") == []
    assert [f for f in doctor.run(store) if f.severity == "error"] == []


def test_i2_write_many_item_that_fails_leaves_no_fts_row(store: MemoryService, monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    from memwarden.errors import InvalidInput
    from memwarden.service import Context

    indexer = store.backend.indexer
    dup_key = indexer.dup_key

    def fail_after_the_fts_row(r: Any) -> int:
        # the record's FTS row is queued before its near-duplicate key is computed (store/sqlite/records.py) ...
        if "payroll" in r.content:
            raise InvalidInput("this item fails after indexing")  # ... and its savepoint is rolled back
        return dup_key(r)

    monkeypatch.setattr(indexer, "dup_key", fail_after_the_fts_row)
    ctx = Context(SCOPE, session_id="s-gc", source_type="user", actor="system:test")
    out = store.write_many(ctx, [{"content": "The billing service runs on Kubernetes", "kind": "fact"},
                                 {"content": "The payroll job runs every Friday", "kind": "fact"},
                                 {"content": "The dashboard moved to Grafana", "kind": "fact"}])
    assert [getattr(r, "status", "error") for r in out] == ["accepted", "error", "accepted"]
    assert _fts_rows(store) == _record_rows(store) and len(_record_rows(store)) == 2


def test_fts_queue_rows_executed_inside_a_rolled_back_savepoint_are_run_again() -> None:
    """A flush inside a savepoint (an FTS read, update or delete) runs earlier writes' rows too; rolling the
    savepoint back undoes those inserts, so they must run again at the COMMIT."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute("CREATE VIRTUAL TABLE memories_fts USING fts5(content)")
    tx = Tx(conn)
    conn.execute("BEGIN")
    tx.queue_fts(1, "first write")
    with pytest.raises(ValueError), tx.savepoint("w"):
        tx.queue_fts(2, "second write")
        tx.flush_fts()
        assert conn.execute("SELECT count(*) FROM memories_fts").fetchone()[0] == 2
        raise ValueError("the second write fails")
    assert conn.execute("SELECT count(*) FROM memories_fts").fetchone()[0] == 0  # both inserts undone ...
    with tx.savepoint("w"):
        tx.queue_fts(3, "third write")
    tx.flush_fts()
    conn.execute("COMMIT")
    assert [r[0] for r in conn.execute("SELECT rowid FROM memories_fts ORDER BY rowid")] == [1, 3]  # ... 1 redone


def test_q3_near_duplicate_written_earlier_in_the_same_group_is_found(store: MemoryService) -> None:
    """The first save's FTS row is still queued when the second one (same group) looks for near-duplicates."""
    results, errors = _grouped(store.backend, [_save_work(store, "The billing service runs on Kubernetes"),
                                               _save_work(store, "the billing service RUNS on kubernetes!")])
    assert errors[:2] == [None, None]
    assert results[1].id == results[0].id and "near-duplicate" in results[1].message
    assert len(_record_rows(store)) == 1 and _fts_rows(store) == _record_rows(store)
