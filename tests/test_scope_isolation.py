"""S1–S4: scope isolation through every API, identity binding, and the scope filter living in SQL.

Each test plays the attacker: a session bound to another tenant, user or agent (or with a lower clearance)
tries to read, change or wipe a victim's memory through every entry point. Every attempt must find nothing,
and the error for another scope's id must be indistinguishable from the error for an id that never existed.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import memwarden
from conftest import held_write
from memwarden.errors import IdentityRequired, InvalidInput, NotFound
from memwarden.ids import new_id
from memwarden.prompt_block import parse_blocks
from memwarden.service import MemoryService

pytestmark = pytest.mark.engines  # issue 14: the store tests run on SQLite and PostgreSQL

VICTIM = memwarden.Scope(tenant="acme", user="u-1", agent="support")
SHARED = memwarden.Scope(tenant="acme", user="u-1")  # agent=None: shared by all agents of u-1
ATTACKERS = {
    "other_tenant": memwarden.Scope(tenant="globex", user="u-1", agent="support"),
    "other_user": memwarden.Scope(tenant="acme", user="u-2", agent="support"),
    "other_agent": memwarden.Scope(tenant="acme", user="u-1", agent="billing"),
    "shared_scope_reading_agent_scope": SHARED,
}
SECRET = "Victim prefers zanzibarite keyboards"
TOKEN = "zanzibarite"
IDENTITY_NAMES = {"tenant", "tenant_id", "user", "user_id", "agent", "agent_id", "scope", "session_id",
                  "identity", "owner", "namespace"}


def _normalise(message: str, memory_id: str) -> str:
    return message.replace(memory_id, "<ID>")


def _save_victim(store: MemoryService) -> str:
    with store.session(VICTIM) as s:
        res = s.save(SECRET, kind="preference")
    assert res.status == "accepted" and res.id
    return res.id


def _victim_intact(store: MemoryService, memory_id: str) -> None:
    with store.session(VICTIM) as s:
        rec = s.view(memory_id)
    assert (rec.content, rec.version) == (SECRET, 1)


# --- S1/S3: cross-scope reads return nothing through every API ---------------------------------------------


@pytest.mark.parametrize("who", sorted(ATTACKERS))
def test_s1_cross_scope_reads_return_nothing_through_session_api(store: MemoryService, who: str) -> None:
    victim_id = _save_victim(store)
    ghost = new_id()
    with store.session(ATTACKERS[who], read_shared=True) as s:
        assert TOKEN not in s.system_block() and victim_id not in s.system_block()
        assert s.search(TOKEN) == []
        assert s.search(SECRET, k=100) == []
        assert victim_id not in {r.id for r in s.view()}
        assert victim_id not in {r.id for r in s.view(kind="preference")}
        with pytest.raises(NotFound) as real:
            s.view(victim_id)
        with pytest.raises(NotFound) as fake:
            s.view(ghost)
        assert _normalise(str(real.value), victim_id) == _normalise(str(fake.value), ghost)
    _victim_intact(store, victim_id)


@pytest.mark.parametrize("who", sorted(ATTACKERS))
def test_s4_cross_scope_update_and_remove_fail_like_a_missing_id(store: MemoryService, who: str) -> None:
    victim_id = _save_victim(store)
    ghost = new_id()
    with store.session(ATTACKERS[who], read_shared=True) as s:
        for attempt in (
            lambda mid: s.update(mid, "Victim prefers nothing", expected_version=1),
            lambda mid: s.remove(mid),
        ):
            with pytest.raises(NotFound) as real:
                attempt(victim_id)
            with pytest.raises(NotFound) as fake:
                attempt(ghost)
            assert type(real.value) is type(fake.value)
            assert _normalise(str(real.value), victim_id) == _normalise(str(fake.value), ghost)
    _victim_intact(store, victim_id)


@pytest.mark.parametrize("who", sorted(ATTACKERS))
def test_s1_cross_scope_reads_return_nothing_through_tool_dispatcher(store: MemoryService, who: str) -> None:
    victim_id = _save_victim(store)
    ghost = new_id()
    with store.session(ATTACKERS[who], read_shared=True) as s:
        assert s.call_tool("memory_search", {"query": TOKEN}) == {"results": []}
        assert s.call_tool("memory_search", json.dumps({"query": SECRET, "k": 50})) == {"results": []}
        listed = s.call_tool("memory_view", {})
        assert victim_id not in json.dumps(listed) and TOKEN not in json.dumps(listed)
        calls: list[tuple[str, dict[str, Any]]] = [
            ("memory_view", {"id": "<ID>"}),
            ("memory_update", {"id": "<ID>", "content": "Victim prefers nothing", "expected_version": 1}),
            ("memory_remove", {"id": "<ID>"}),
        ]
        for name, template in calls:
            real = s.call_tool(name, {k: victim_id if v == "<ID>" else v for k, v in template.items()})
            fake = s.call_tool(name, {k: ghost if v == "<ID>" else v for k, v in template.items()})
            assert real["error"] == fake["error"] == "not_found", (name, real)
            assert _normalise(real["message"], victim_id) == _normalise(fake["message"], ghost)
            assert TOKEN not in json.dumps(real)
    _victim_intact(store, victim_id)


@pytest.mark.parametrize("who", sorted(ATTACKERS))
def test_s1_held_record_of_another_scope_is_not_found(store: MemoryService, who: str) -> None:
    held = held_write(store, VICTIM, "Victim held note")
    assert held.status == "review" and held.id
    ghost = new_id()
    with store.session(ATTACKERS[who], read_shared=True) as s:
        with pytest.raises(NotFound) as real:  # not HeldForReview: that would confirm it exists
            s.view(held.id)
        with pytest.raises(NotFound) as fake:
            s.view(ghost)
        assert _normalise(str(real.value), held.id) == _normalise(str(fake.value), ghost)
        assert s.call_tool("memory_view", {"id": held.id})["error"] == "not_found"


@pytest.mark.parametrize("who", sorted(ATTACKERS))
def test_s4_clear_in_one_scope_leaves_every_other_scope_intact(store: MemoryService, who: str) -> None:
    victim_id = _save_victim(store)
    others: dict[str, str] = {}
    for name, sc in ATTACKERS.items():
        if name != who:
            with store.session(sc) as s:
                res = s.save(f"Neighbour {name} likes tea", kind="fact")
                assert res.id
                others[name] = res.id
    with store.session(ATTACKERS[who], read_shared=True) as s:
        mine = s.save("Attacker note to be cleared", kind="fact").id
        assert s.clear() == [mine]
        assert s.call_tool("memory_clear", {"confirm": True}) == {"status": "cleared", "count": 0, "ids": []}
        assert s.call_tool("memory_clear", {"confirm": True, "kind": "preference"})["count"] == 0
    _victim_intact(store, victim_id)
    for name, mid in others.items():
        with store.session(ATTACKERS[name]) as s:
            assert s.view(mid).id == mid


# --- S1: shared (agent=None) records and the read_shared opt-in ---------------------------------------------


def test_s1_shared_records_visible_to_agents_only_with_read_shared(store: MemoryService) -> None:
    with store.session(SHARED) as s:
        shared_id = s.save("User prefers quetzalcoatl themed examples", kind="preference").id
    assert shared_id
    with store.session(VICTIM) as s:  # policy default: read_shared=False
        assert "quetzalcoatl" not in s.system_block()
        assert s.search("quetzalcoatl") == []
        assert shared_id not in {r.id for r in s.view()}
        with pytest.raises(NotFound):
            s.view(shared_id)
        assert s.call_tool("memory_view", {"id": shared_id})["error"] == "not_found"
    with store.session(VICTIM, read_shared=True) as s:
        assert shared_id in s.system_block()
        assert [r.id for r in s.search("quetzalcoatl")] == [shared_id]
        assert shared_id in {r.id for r in s.view()}
        assert s.view(shared_id).content == "User prefers quetzalcoatl themed examples"
        assert s.call_tool("memory_view", {"id": shared_id})["memory"]["id"] == shared_id
        # reading shared records does not grant writing them (S4): only the shared scope itself may
        with pytest.raises(NotFound):
            s.remove(shared_id)
        with pytest.raises(NotFound):
            s.update(shared_id, "User prefers nothing", expected_version=1)
        s.clear()
    # read_shared never crosses users or tenants
    for sc in (ATTACKERS["other_user"], ATTACKERS["other_tenant"]):
        with store.session(sc, read_shared=True) as s:
            assert s.search("quetzalcoatl") == [] and shared_id not in s.system_block()
    with store.session(SHARED) as s:
        assert s.view(shared_id).version == 1


def test_s1_policy_read_shared_opt_in(db_path: Path) -> None:
    with memwarden.open(db_path, policy=memwarden.Policy(read_shared=True)) as store:
        with store.session(SHARED) as s:
            shared_id = s.save("User works in the harpsichord team", kind="fact").id
        with store.session(VICTIM) as s:
            assert [r.id for r in s.search("harpsichord")] == [shared_id]
        with store.session(VICTIM, read_shared=False) as s:
            assert s.search("harpsichord") == []


# --- S3: sensitivity <= clearance ---------------------------------------------------------------------------


def test_s3_confidential_record_invisible_below_clearance(store: MemoryService) -> None:
    with store.session(VICTIM, clearance="confidential") as s:
        conf_id = s.save("Salary band is obsidianite seven", kind="fact", sensitivity="confidential").id
    assert conf_id
    ghost = new_id()
    with store.session(VICTIM) as s:  # default clearance: internal
        assert "obsidianite" not in s.system_block()
        assert s.search("obsidianite") == []
        assert conf_id not in {r.id for r in s.view()}
        with pytest.raises(NotFound) as real:
            s.view(conf_id)
        with pytest.raises(NotFound) as fake:
            s.view(ghost)
        assert _normalise(str(real.value), conf_id) == _normalise(str(fake.value), ghost)
        with pytest.raises(NotFound):
            s.update(conf_id, "Salary band is public", expected_version=1)
        assert s.call_tool("memory_search", {"query": "obsidianite"}) == {"results": []}
        assert s.call_tool("memory_view", {"id": conf_id})["error"] == "not_found"
    with store.session(VICTIM, clearance="confidential") as s:
        assert conf_id in s.system_block()
        assert [r.id for r in s.search("obsidianite")] == [conf_id]
        assert s.view(conf_id).sensitivity_name == "confidential"
        assert conf_id in {r.id for r in s.view()}
    with store.session(VICTIM, clearance="secret") as s:
        assert [r.id for r in s.search("obsidianite")] == [conf_id]


def test_s3_remove_above_clearance_fails_like_a_missing_id(store: MemoryService) -> None:
    with store.session(VICTIM, clearance="confidential") as s:
        conf_id = s.save("Salary band is obsidianite seven", sensitivity="confidential").id
    assert conf_id
    with store.session(VICTIM) as s:
        with pytest.raises(NotFound):
            s.remove(conf_id)
        assert s.call_tool("memory_remove", {"id": conf_id})["error"] == "not_found"
    with store.session(VICTIM, clearance="confidential") as s:
        assert s.view(conf_id).version == 1


def test_s3_capacity_error_does_not_preview_records_above_clearance(db_path: Path) -> None:
    policy = memwarden.Policy(limits={"fact": memwarden.KindLimits(max_entries=2, max_bytes=10_000)})
    with memwarden.open(db_path, policy=policy) as store:
        with store.session(VICTIM, clearance="confidential") as s:
            s.save("Salary band is obsidianite seven", sensitivity="confidential")
        with store.session(VICTIM) as s:
            s.save("User likes tea")
            with pytest.raises(memwarden.CapacityError) as err:
                s.save("User likes coffee")
            assert "obsidianite" not in json.dumps(err.value.to_dict())
            out = s.call_tool("memory_save", {"content": "User likes juice"})
            assert "obsidianite" not in json.dumps(out)


# --- S2: identity comes from the application, never from the model ------------------------------------------


@pytest.mark.parametrize("kwargs", [
    {"tenant": "", "user": "u-1"},
    {"tenant": "acme", "user": ""},
    {"tenant": None, "user": "u-1"},
    {"tenant": "acme", "user": None},
    {"tenant": "acme", "user": None, "agent": "support"},
])
def test_s2_scope_without_tenant_or_user_is_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises(IdentityRequired):
        memwarden.Scope(**kwargs)


def test_s2_session_needs_a_bound_scope(store: MemoryService) -> None:
    bad: Any = {"tenant": "acme", "user": "u-1"}
    with pytest.raises(InvalidInput):
        store.session(bad)


def _property_names(schema: Any) -> set[str]:
    names: set[str] = set()
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "properties" and isinstance(value, dict):
                names |= set(value)
            names |= _property_names(value)
    elif isinstance(schema, list):
        for item in schema:
            names |= _property_names(item)
    return names


@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
def test_s2_tool_schemas_have_no_identity_parameters(store: MemoryService, fmt: str) -> None:
    with store.session(VICTIM) as s:
        schemas = s.tool_schemas(fmt)
    names = {t["function"]["name"] if fmt == "openai" else t["name"] for t in schemas}
    assert {"memory_save", "memory_update", "memory_remove", "memory_clear", "memory_search",
            "memory_view"} <= names
    for tool in schemas:
        params = tool["function"]["parameters"] if fmt == "openai" else tool["input_schema"]
        assert params.get("additionalProperties") is False
        assert not (_property_names(params) & IDENTITY_NAMES), tool


@pytest.mark.parametrize("field", ["tenant", "user", "user_id", "agent", "session_id"])
def test_s2_identity_arguments_from_the_model_are_refused(store: MemoryService, field: str) -> None:
    victim_id = _save_victim(store)
    attacker = ATTACKERS["other_tenant"]
    spoof = {"tenant": VICTIM.tenant, "user": VICTIM.user, "user_id": VICTIM.user, "agent": VICTIM.agent,
             "session_id": "s-victim"}[field]
    calls: list[tuple[str, dict[str, Any]]] = [
        ("memory_save", {"content": "Attacker planted this"}),
        ("memory_search", {"query": TOKEN}),
        ("memory_view", {"id": victim_id}),
        ("memory_view", {}),
        ("memory_update", {"id": victim_id, "content": "Planted", "expected_version": 1}),
        ("memory_remove", {"id": victim_id}),
        ("memory_clear", {"confirm": True}),
    ]
    with store.session(attacker) as s:
        for name, args in calls:
            out = s.call_tool(name, {**args, field: spoof})
            assert out.get("error") == "invalid_arguments", (name, out)
            assert TOKEN not in json.dumps(out)
        assert s.view() == []
    _victim_intact(store, victim_id)
    with store.session(VICTIM) as s:
        assert [r.id for r in s.view()] == [victim_id]


# --- S3: the filter is in the SQL, not in Python ------------------------------------------------------------


@contextmanager
def traced_sql(store: MemoryService) -> Iterator[list[str]]:
    """Every statement either connection (writes and reads) runs meanwhile."""
    statements: list[str] = []
    conns = (store.backend.conn, store.backend.reader)
    for c in conns:
        c.set_trace_callback(statements.append)
    try:
        yield statements
    finally:
        for c in conns:
            c.set_trace_callback(None)


@pytest.mark.sqlite_only  # reaches into the SQLite file (or its CLI path)
def test_s3_scope_sensitivity_and_expiry_filters_are_in_the_sql(store: MemoryService) -> None:
    victim_id = _save_victim(store)
    with traced_sql(store) as statements, store.session(VICTIM) as s:
        s.search(TOKEN)
        s.view()
        s.view(victim_id)
    reads = [q for q in statements
             if q.lstrip().startswith("SELECT") and re.search(r"\b(FROM|JOIN) memories m\b", q)]
    # The search's postings (retrieval/postings.py) read the index rows they rank with under the same filter
    # as every read (issue 12, item 9: ranking statistics never count a row the caller may not see).
    ranking = [q for q in reads if q.startswith("SELECT f.rowid, f.content, m.expires_at FROM memories m")]
    assert ranking
    assert len(reads) - len(ranking) >= 6  # block count + block rows + reminders + search + list + view
    for q in reads:
        assert re.search(r"\bm\.tenant = 'acme'", q), q
        assert re.search(r"\bm\.user_id = 'u-1'", q), q
        assert re.search(r"\bm\.agent = 'support'", q), q
        assert re.search(r"\bm\.expires_at > \d+", q), q
        assert re.search(r"\bm\.sensitivity <= 1\b", q), q
    # listing, search and the prompt block also filter out held records in SQL
    assert all("m.status = 'active'" in q for q in reads if "m.id = " not in q)


@pytest.mark.sqlite_only  # reaches into the SQLite file (or its CLI path)
def test_s3_read_shared_filter_is_in_the_sql(store: MemoryService) -> None:
    with store.session(memwarden.Scope(VICTIM.tenant, VICTIM.user)) as shared:  # something for the search to find
        shared.save("The user's shared notes mention anything goes Fridays", kind="fact")
    with traced_sql(store) as statements, store.session(VICTIM, read_shared=True) as s:
        found = s.search("anything")
    assert [r.content for r in found] == ["The user's shared notes mention anything goes Fridays"]
    # every read of the search: the postings it ranks with, its candidates, its results
    searches = [q for q in statements if q.startswith("SELECT") and re.search(r"\b(FROM|JOIN) memories m\b", q)]
    assert any("f.content" in q for q in searches) and len(searches) >= 3
    assert all("m.agent IN ('support', '')" in q and "m.tenant = 'acme'" in q for q in searches)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=st.text(max_size=60) | st.sampled_from([
    '"', "*", "zanzibar*", "NEAR(a b)", "content:zanzibarite", "zanzibarite OR 1=1", "' OR '1'='1", "-- ",
    "^zanz",
]))
def test_s3_property_any_search_text_never_leaks_or_crashes(store: MemoryService, query: str) -> None:
    if not store.backend.conn.execute("SELECT count(*) FROM memories").fetchone()[0]:
        _save_victim(store)
    with store.session(ATTACKERS["other_tenant"]) as s:
        try:
            found = s.search(query)
        except InvalidInput:
            found = []
        assert found == []
        out = s.call_tool("memory_search", {"query": query})
        assert out.get("results", []) == [] and TOKEN not in json.dumps(out)


# --- property: any mix of writes stays in its own scope -----------------------------------------------------

_UNIVERSE = [memwarden.Scope(t, u, a) for t in ("acme", "globex") for u in ("u-1", "u-2")
             for a in ("support", "billing", None)]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(writes=st.lists(st.integers(0, len(_UNIVERSE) - 1), min_size=1, max_size=10))
def test_s1_property_every_scope_sees_exactly_its_own_records(writes: list[int]) -> None:
    with tempfile.TemporaryDirectory() as tmp, memwarden.open(Path(tmp) / "p.db") as store:
        owned: dict[int, set[str]] = {i: set() for i in range(len(_UNIVERSE))}
        for n, idx in enumerate(writes):
            with store.session(_UNIVERSE[idx]) as s:
                rid = s.save(f"Common word lighthouse number {n}", kind="fact").id
                assert rid
                owned[idx].add(rid)
        for idx, sc in enumerate(_UNIVERSE):
            shared_idx = _UNIVERSE.index(memwarden.Scope(sc.tenant, sc.user))
            for read_shared in (False, True):
                expect = set(owned[idx])
                if read_shared and sc.agent is not None:
                    expect |= owned[shared_idx]
                with store.session(sc, read_shared=read_shared) as s:
                    assert {r.id for r in s.view()} == expect
                    assert {r.id for r in s.search("lighthouse", k=50)} == expect
                    block_ids = {e.id for b in parse_blocks(s.system_block()) for e in b.entries}
                    assert block_ids == expect
