"""I2: updates take a precondition; concurrent writers (threads or processes, each with its own connection)
never lose an update, and the audit chain stays intact while they race."""

from __future__ import annotations

import multiprocessing as mp
import os
import threading
from pathlib import Path
from typing import Any

import pytest

import memwarden
from memwarden import audit, doctor
from memwarden.errors import InvalidInput, VersionConflict
from memwarden.service import Context, MemoryService

pytestmark = pytest.mark.engines  # the tests that use the store fixture run on SQLite and on PostgreSQL

SCOPE = memwarden.Scope(tenant="acme", user="u-42", agent="support")
ROUNDS = 5


def _seed(store: MemoryService, n: int) -> list[str]:
    ids = []
    with store.session(SCOPE) as s:
        for i in range(n):
            res = s.save(f"Deploy target number {i} is staging", kind="fact")
            assert res.id
            ids.append(res.id)
    return ids


def _check_one_winner(store: MemoryService, memory_id: str, outcomes: dict[str, str]) -> None:
    assert sorted(outcomes.values()) == ["conflict", "won"], outcomes
    winner = next(label for label, o in outcomes.items() if o == "won")
    with store.session(SCOPE) as s:
        rec = s.view(memory_id)
    assert rec.version == 2
    assert rec.content == f"Deploy target is {winner}"
    hist = store.history(memory_id)
    assert [h["version"] for h in hist] == [1]
    assert hist[0]["content"].startswith("Deploy target number")


def test_i2_two_threads_same_expected_version_exactly_one_wins(db_path: Path) -> None:
    with memwarden.open(db_path) as seed_store:
        ids = _seed(seed_store, ROUNDS)
    stores = {label: memwarden.open(db_path) for label in ("alpha", "beta")}
    try:
        for memory_id in ids:
            barrier = threading.Barrier(2)
            outcomes: dict[str, str] = {}

            def race(label: str, store: MemoryService, memory_id: str = memory_id,
                     barrier: threading.Barrier = barrier, outcomes: dict[str, str] = outcomes) -> None:
                with store.session(SCOPE) as s:
                    assert s.view(memory_id).version == 1
                    barrier.wait()
                    try:
                        res = s.update(memory_id, f"Deploy target is {label}", expected_version=1)
                        outcomes[label] = "won" if res.status == "accepted" else res.status
                    except VersionConflict as exc:
                        assert (exc.expected, exc.actual) == (1, 2)
                        outcomes[label] = "conflict"

            threads = [threading.Thread(target=race, args=(label, st)) for label, st in stores.items()]
            for t in threads:
                t.start()
            for t in threads:
                t.join(30)
            _check_one_winner(stores["alpha"], memory_id, outcomes)
        assert audit.verify(stores["alpha"].backend, stores["alpha"].signer) == []
        assert doctor.run(stores["beta"]) == []
    finally:
        for st in stores.values():
            st.close()


def _proc_race(db_path: str, key: str, ids: list[str], label: str, barrier: Any, results: Any) -> None:
    """Child process: its own memwarden.open(); races the sibling on each id, then saves a burst."""
    os.environ["MEMWARDEN_KEY"] = key
    try:
        with memwarden.open(db_path) as store, store.session(SCOPE) as s:
            for memory_id in ids:
                assert s.view(memory_id).version == 1
                barrier.wait(timeout=30)
                try:
                    s.update(memory_id, f"Deploy target is {label}", expected_version=1)
                    results.put((label, memory_id, "won"))
                except VersionConflict:
                    results.put((label, memory_id, "conflict"))
            barrier.wait(timeout=30)
            for i in range(25):
                saved = s.save(f"Burst note {i} from {label}", kind="episode")
                results.put((label, saved.id, "saved"))
    except BaseException as exc:  # report, so the parent fails with the reason
        results.put((label, "", f"error: {type(exc).__name__}: {exc}"))


def test_i2_two_processes_same_expected_version_exactly_one_wins(db_path: Path) -> None:
    with memwarden.open(db_path) as store:
        ids = _seed(store, ROUNDS)
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(2)
    results = ctx.Queue()
    key = os.environ["MEMWARDEN_KEY"]
    procs = [ctx.Process(target=_proc_race, args=(str(db_path), key, ids, label, barrier, results))
             for label in ("alpha", "beta")]
    for p in procs:
        p.start()
    got: list[tuple[str, str, str]] = []
    expected = 2 * (ROUNDS + 25)
    while len(got) < expected:
        item = results.get(timeout=60)
        assert not item[2].startswith("error"), item
        got.append(item)
    for p in procs:
        p.join(30)
        assert p.exitcode == 0
    with memwarden.open(db_path) as store:
        for memory_id in ids:
            _check_one_winner(store, memory_id, {label: o for label, mid, o in got if mid == memory_id})
        saved = [mid for _, mid, o in got if o == "saved"]
        with store.session(SCOPE) as s:
            assert {r.id for r in s.view(kind="episode", limit=100)} == set(saved)
        assert audit.verify(store.backend, store.signer) == []
        assert doctor.run(store) == []


def test_i2_update_needs_the_current_version(store: MemoryService) -> None:
    (mid,) = _seed(store, 1)
    with store.session(SCOPE) as s:
        with pytest.raises(VersionConflict) as err:
            s.update(mid, "Deploy target is prod", expected_version=2)
        assert (err.value.expected, err.value.actual) == (2, 1)
        assert s.update(mid, "Deploy target is prod", expected_version=1).version == 2
        stale = s.call_tool("memory_update",
                            {"id": mid, "content": "Deploy target is qa", "expected_version": 1})
        assert stale["error"] == "version_conflict"
        assert (stale["expected_version"], stale["actual_version"]) == (1, 2)
        assert s.view(mid).content == "Deploy target is prod"
    with pytest.raises(InvalidInput):
        store.write(Context(SCOPE, session_id="s-x", actor="system:test"), "Deploy target is qa", update_id=mid)
    assert [h["version"] for h in store.history(mid)] == [1]


def test_i2_many_threads_on_one_store_never_lose_an_update(store: MemoryService) -> None:
    (mid,) = _seed(store, 1)
    wins: list[int] = []
    lock = threading.Lock()

    def bump(n: int) -> None:
        with store.session(SCOPE) as s:
            for _ in range(50):
                cur = s.view(mid)
                try:
                    s.update(mid, f"Counter by {n} at {cur.version}", expected_version=cur.version)
                except VersionConflict:
                    continue
                with lock:
                    wins.append(cur.version)
                if len(wins) >= 30:
                    return

    threads = [threading.Thread(target=bump, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    # every accepted update started from a distinct version: none overwrote another
    assert len(wins) == len(set(wins))
    with store.session(SCOPE) as s:
        assert s.view(mid).version == len(wins) + 1
    assert [h["version"] for h in store.history(mid)] == list(range(1, len(wins) + 1))
