"""In-process event bus (A3): subscribers see committed lifecycle events; a failing subscriber never breaks a
write."""

from __future__ import annotations

import logging

import pytest

import memwarden
from memwarden.events import Event, EventBus
from memwarden.gate import REVIEW, RuleHit
from memwarden.service import MemoryService

pytestmark = pytest.mark.engines  # the tests that use the store fixture run on SQLite and on PostgreSQL

def test_a3_subscribe_receives_lifecycle_events(store: MemoryService, scope: memwarden.Scope) -> None:
    got: list[Event] = []
    store.events.subscribe(got.append)
    with store.session(scope) as s:
        mid = s.save("User prefers tea", kind="preference").id or ""
        s.update(mid, "User prefers green tea", expected_version=1)
        s.save("", kind="fact")
        s.view(mid)
        s.remove(mid)
    names = [e.event for e in got]
    for want in ("session_started", "injected", "added", "updated", "rejected", "read", "removed"):
        assert want in names, names
    added = next(e for e in got if e.event == "added")
    assert added.memory_id == mid and added.session_id == s.id
    assert (added.tenant, added.user, added.agent) == ("acme", "u-42", "support")
    assert "content" not in added.details  # events carry hashes, not content
    seqs = [e.seq for e in got]
    assert seqs == sorted(seqs) and None not in seqs
    assert all(isinstance(e.to_dict(), dict) for e in got)


def test_a3_unsubscribe(store: MemoryService, scope: memwarden.Scope) -> None:
    got: list[str] = []
    unsubscribe = store.events.subscribe(lambda e: got.append(e.event))
    with store.session(scope) as s:
        s.save("User prefers tea", kind="preference")
        n = len(got)
        assert n > 0
        unsubscribe()
        unsubscribe()  # idempotent
        s.save("User prefers coffee", kind="preference")
        assert len(got) == n


def test_a3_filtered_subscription(store: MemoryService, scope: memwarden.Scope) -> None:
    rejected: list[Event] = []
    added: list[Event] = []
    store.events.subscribe(rejected.append, events=["rejected"])
    store.events.subscribe(added.append, events=("added", "removed"))
    with store.session(scope) as s:
        mid = s.save("User prefers tea", kind="preference").id or ""
        s.save("bad \x00", kind="fact")
        s.search("tea")
        s.remove(mid)
    assert [e.event for e in rejected] == ["rejected"]
    assert rejected[0].details["candidate"] == "bad \x00"
    assert [e.event for e in added] == ["added", "removed"]


def test_a3_raising_subscriber_does_not_break_write(store: MemoryService, scope: memwarden.Scope,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    after: list[str] = []

    def boom(e: Event) -> None:
        raise RuntimeError("subscriber exploded")

    store.events.subscribe(boom)
    store.events.subscribe(lambda e: after.append(e.event))
    with caplog.at_level(logging.ERROR, logger="memwarden.events"), store.session(scope) as s:
        r = s.save("User prefers tea", kind="preference")
        assert r.status == "accepted" and r.id is not None
        assert s.view(r.id).content == "User prefers tea"
        assert s.call_tool("memory_save", {"content": "User works at Acme"})["status"] == "accepted"
    assert "added" in after  # later subscribers still run
    assert any("subscriber" in rec.getMessage() for rec in caplog.records)
    with store.session(scope) as s2:
        assert len(s2.view()) == 2


def test_a3_events_published_after_commit(store: MemoryService, scope: memwarden.Scope) -> None:
    seen: list[str] = []

    def check(e: Event) -> None:
        if e.event == "added" and e.memory_id:
            seen.append(store.operator_get(e.memory_id).content)  # the row is already committed

    store.events.subscribe(check)
    with store.session(scope) as s:
        s.save("User prefers tea", kind="preference")
    assert seen == ["User prefers tea"]


def test_a3_subscriber_can_unsubscribe_during_publish() -> None:
    bus = EventBus()
    got: list[str] = []
    unsub = None

    def once(e: Event) -> None:
        got.append(e.event)
        assert unsub is not None
        unsub()

    unsub = bus.subscribe(once)
    bus.publish([Event("a", 1), Event("b", 2)])
    bus.publish([Event("c", 3)])
    assert got == ["a"]


def test_a3_held_event(store: MemoryService, scope: memwarden.Scope) -> None:
    store.gate.add_scanner(lambda c, p: [RuleHit("t.flag", REVIEW, "x")] if "FLAG" in str(c.content) else [])
    held: list[Event] = []
    store.events.subscribe(held.append, events=["held"])
    with store.session(scope) as s:
        r = s.save("FLAG this", kind="fact")
    assert [e.memory_id for e in held] == [r.id]
