"""Issue 5: scoped hybrid search (Q1), embedder failure (Q2), near-duplicates (Q3), consolidation (Q4, D3)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import memwarden
from memwarden import doctor
from memwarden.consolidate import consolidate
from memwarden.events import Event
from memwarden.records import now_ms
from memwarden.retrieval import HashEmbedder, Ranking
from memwarden.retrieval.embedders import EmbedderError
from memwarden.retrieval.tokenize import terms
from memwarden.service import Context, MemoryService
from memwarden.store.sqlite.schema import SCHEMA_VERSION
from pg_helpers import edit_around_the_api
from raw_sql import raw_sql

SCOPE = memwarden.Scope("acme", "u-1", "support")
OTHER_AGENT = memwarden.Scope("acme", "u-1", "sales")
OTHER_USER = memwarden.Scope("acme", "u-2", "support")
OTHER_TENANT = memwarden.Scope("globex", "u-1", "support")
SHARED = memwarden.Scope("acme", "u-1")
MODES = [Ranking(mode="bm25"), Ranking(mode="lexical"), Ranking(), Ranking(expand=0)]
TOKEN = "zanzibarite"


class FailingEmbedder:
    """An embedder that always fails, as an endpoint that is down would."""

    fingerprint = HashEmbedder().fingerprint  # pretend to be the one the vectors were made with
    dim = 128

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        raise EmbedderError("endpoint down")


def _ctx(scope: memwarden.Scope, **kw: object) -> Context:
    base = Context(scope, session_id="s-test", source_type="user", actor="system:test", clearance=1)
    return replace(base, **kw)  # type: ignore[arg-type]


def _write(store: MemoryService, scope: memwarden.Scope, text: str, **kw: object) -> str:
    ctx_kw = {k: kw.pop(k) for k in ("trust", "session_id") if k in kw}
    res = store.write(_ctx(scope, **ctx_kw), text, kind=kw.pop("kind", "episode"), **kw)  # type: ignore[arg-type]
    assert res.id is not None, res
    return res.id


def _ids(store: MemoryService, ctx: Context, query: str, ranking: Ranking, k: int = 20) -> set[str]:
    return {r.id for r in store.retrieval.search(ctx, query, k, ranking=ranking)}


pytestmark = pytest.mark.engines  # the tests that use the store fixture run on SQLite and on PostgreSQL


@pytest.fixture
def store(store_url: str) -> Iterator[MemoryService]:
    """These tests exercise every ranking path, so the store stores vectors (the hash embedder); the default
    configuration (no embedder) is covered by the tests that say so."""
    s = memwarden.open(store_url)
    s.retrieval.set_embedder(HashEmbedder())
    yield s
    s.close()


@pytest.fixture
def populated(store: MemoryService, store_url: str) -> dict[str, str]:
    """One visible record and one record of every kind that must never be served to SCOPE."""
    ids = {"visible": _write(store, SCOPE, f"The {TOKEN} deploy broke on Tuesday")}
    for name, scope in (("agent", OTHER_AGENT), ("user", OTHER_USER), ("tenant", OTHER_TENANT),
                        ("shared", SHARED)):
        ids[name] = _write(store, scope, f"The {TOKEN} deploy broke on Tuesday for {name}")
    ids["held"] = _write(store, SCOPE, f"The {TOKEN} deploy broke again on Tuesday", trust="untrusted")
    ids["secret"] = _secret(store)
    ids["expired"] = _write(store, SCOPE, f"The {TOKEN} deploy broke on a Monday long ago", ttl_days=1)
    edit_around_the_api(store_url, "UPDATE memories SET expires_at = ? WHERE id = ?", (now_ms() - 1, ids["expired"]))
    return ids


def _secret(store: MemoryService) -> str:
    ctx = _ctx(SCOPE, clearance=3)
    res = store.write(ctx, f"The {TOKEN} deploy incident report is confidential", kind="episode",
                      sensitivity="secret")
    assert res.id
    return res.id


@pytest.mark.parametrize("ranking", MODES, ids=["bm25", "lexical", "hybrid", "hybrid-no-expansion"])
def test_q1_every_ranking_path_serves_only_scope_trust_expiry_and_clearance(
        store: MemoryService, populated: dict[str, str], ranking: Ranking) -> None:
    # the expired record's signature still verifies: only the SQL filter keeps it out
    got = _ids(store, _ctx(SCOPE), f"{TOKEN} deploy Tuesday broke", ranking)
    assert got == {populated["visible"]}
    shared = _ids(store, _ctx(SCOPE, read_shared=True), f"{TOKEN} deploy", ranking)
    assert shared == {populated["visible"], populated["shared"]}


def test_q1_vector_only_candidates_are_filtered_in_sql(store: MemoryService, populated: dict[str, str]) -> None:
    # a query with no shared term: only the vector signal can propose candidates
    ranking = Ranking(dense_floor=-1.0, dense_pool=100)
    got = _ids(store, _ctx(SCOPE), "zanzibarites deploying", ranking)
    assert got <= {populated["visible"]}


@pytest.mark.parametrize("ranking", MODES, ids=["bm25", "lexical", "hybrid", "hybrid-no-expansion"])
def test_q2_failing_embedder_degrades_to_lexical_with_an_event(
        store: MemoryService, populated: dict[str, str], ranking: Ranking) -> None:
    seen: list[Event] = []
    store.events.subscribe(seen.append)
    working = _ids(store, _ctx(SCOPE), f"{TOKEN} deploy", replace(ranking, mode="lexical"))
    store.retrieval.set_embedder(FailingEmbedder())
    got = _ids(store, _ctx(SCOPE), f"{TOKEN} deploy", ranking)  # never raises into the agent's path
    assert got == working == {populated["visible"]}
    if ranking.mode == "hybrid":
        assert any(e.event == "embedder_failed" and e.details["where"] == "search" for e in seen)


@pytest.mark.sqlite_only  # reads or edits SQLite's own tables
def test_q2_failing_embedder_on_write_stores_the_record_without_a_vector(store: MemoryService) -> None:
    seen: list[Event] = []
    store.events.subscribe(seen.append)
    store.retrieval.set_embedder(FailingEmbedder())
    mid = _write(store, SCOPE, "The quarterly kestrel audit is done")
    assert any(e.event == "embedder_failed" and e.details["where"] == "write" for e in seen)
    vec = store.backend.conn.execute("SELECT v.vec FROM memory_vectors v JOIN memories m ON m.rowid = v.rowid"
                                     " WHERE m.id = ?", (mid,)).fetchone()
    assert vec == (None,)
    assert [r.id for r in store.search(_ctx(SCOPE), "kestrel audit")] == [mid]
    store.retrieval.set_embedder(HashEmbedder())
    assert store.retrieval.reindex()["without_vector"] == 0
    assert doctor.run(store) == []


def test_q2_q3_failing_embedder_never_changes_dedup_or_delete_decisions(tmp_path: Path) -> None:
    texts = ["We fixed the flaky login test on Monday", "we fixed the flaky login test on Monday!",
             "We fixed the flaky login test on Friday", "The billing export moved to Kafka"]
    outcomes = []
    for emb in (HashEmbedder(), FailingEmbedder()):
        with memwarden.open(tmp_path / f"{type(emb).__name__}.db") as store:
            store.retrieval.set_embedder(emb)
            ids = [_write(store, SCOPE, t) for t in texts]
            removed = store.remove(_ctx(SCOPE), ids[3])
            left = store.backend.conn.execute("SELECT count(*) FROM memories").fetchone()[0]
            outcomes.append(([ids.index(i) for i in ids], [ids.index(i) for i in removed], left))
    assert outcomes[0] == outcomes[1] == ([0, 0, 2, 3], [3], 2)


@pytest.mark.sqlite_only  # reads or edits SQLite's own tables
def test_q3_near_duplicate_threshold(store: MemoryService) -> None:
    a = _write(store, SCOPE, "On Monday we fixed the flaky login test with Ana after lunch")
    assert _write(store, SCOPE, "on monday, we fixed the flaky login tests with Ana after lunch.") == a  # J=1.0
    # one word changed out of ten: 7 of 11 shingles shared (J=0.64), below 0.9: a new record
    assert _write(store, SCOPE, "On Monday we fixed the flaky signup test with Ana after lunch") != a
    assert _write(store, SCOPE, "Ana fixed the flaky login test with us on Monday after lunch") != a  # order
    assert _write(store, SCOPE, "On Monday we fixed the flaky login test with Ana after lunch",
                  kind="fact") != a  # another kind
    assert _write(store, OTHER_AGENT, "On Monday we fixed the flaky login test with Ana after lunch") != a
    merged = [r for r in store.backend.query("SELECT memory_id, event FROM audit WHERE event = 'merged'")]
    assert merged == [(a, "merged")]
    assert doctor.run(store) == []


@pytest.mark.sqlite_only  # reads or edits SQLite's own tables
def test_q3_near_duplicate_key_follows_updates_and_deletes(store: MemoryService) -> None:
    a = _write(store, SCOPE, "The staging cluster runs in Frankfurt")
    res = store.write(_ctx(SCOPE), "The staging cluster moved to Dublin", kind="episode", update_id=a,
                      expected_version=1)
    assert (res.id, res.version) == (a, 2)
    assert _write(store, SCOPE, "the staging cluster moved to Dublin.") == a  # the key of the new text
    b = _write(store, SCOPE, "The staging cluster runs in Frankfurt")  # the old text's key went with it
    assert b != a
    store.remove(_ctx(SCOPE), b)
    assert store.backend.query("SELECT count(*) FROM memory_dupkeys d LEFT JOIN memories m ON m.rowid = d.rowid"
                               " WHERE m.rowid IS NULL") == [(0,)]
    assert _write(store, SCOPE, "The staging cluster runs in Frankfurt!") not in (a, b)
    assert doctor.run(store) == []


@pytest.mark.sqlite_only  # reads or edits SQLite's own tables
def test_q3_untrusted_never_overwrites_or_evicts_trusted(store: MemoryService) -> None:
    text = "The user's deploy key rotation happens every Friday"
    trusted = _write(store, SCOPE, text)
    res = store.write(_ctx(SCOPE, trust="untrusted"), text, kind="episode")
    assert res.status == "review" and res.id != trusted  # held as its own record, not merged
    rec = store.get(_ctx(SCOPE), trusted)
    assert rec.version == 1 and rec.content == text and rec.provenance.trust == "trusted"
    # the trusted duplicate of a (promoted-like) untrusted active record is not folded into it either
    store.backend.conn.execute("UPDATE memories SET status = 'active' WHERE id = ?", (res.id,))
    again = store.write(_ctx(SCOPE), text + " ", kind="episode")
    assert again.id == trusted


def _consolidation_inputs(store: MemoryService) -> list[str]:
    """Two near-identical facts (dedup on write would fold a second save, so the second is made by an update)."""
    a = _write(store, SCOPE, "The user's team ships the billing API every second Tuesday", kind="fact")
    b = _write(store, SCOPE, "The user's team keeps billing API notes in the wiki", kind="fact")
    res = store.write(_ctx(SCOPE), "The user's team ships the billing API every second Tuesday, as agreed",
                      kind="fact", update_id=b, expected_version=1)
    assert res.id == b, res
    return [a, b]


def test_q4_consolidation_merges_through_the_write_path(store: MemoryService) -> None:
    a, b = _consolidation_inputs(store)
    out = consolidate(store, _ctx(SCOPE), "fact", threshold=0.5)
    assert len(out) == 1 and out[0].status == "accepted" and set(out[0].ids) == {a, b}
    merged = store.get(_ctx(SCOPE), out[0].merged_id or "")
    assert set(merged.derived_from) == {a, b} and merged.provenance.source_type == "consolidation"
    # search serves the merged record instead of its inputs
    assert [r.id for r in store.search(_ctx(SCOPE), "billing API Tuesday")] == [merged.id]
    assert consolidate(store, _ctx(SCOPE), "fact", threshold=0.5) == []  # not merged twice
    assert doctor.run(store) == []


@pytest.mark.sqlite_only  # reads or edits SQLite's own tables
def test_q4_consolidation_aborts_when_any_input_changed(store: MemoryService, monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    a, _b = _consolidation_inputs(store)
    real_write = store.write

    def racing_write(ctx: Context, content: object, **kw: object) -> memwarden.WriteResult:
        if kw.get("derived_from"):  # another writer updates an input between the read and the merge
            real_write(_ctx(SCOPE), "The user's team ships the billing API every Tuesday now", kind="fact",
                       update_id=a, expected_version=1)
        return real_write(ctx, content, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(store, "write", racing_write)
    out = consolidate(store, _ctx(SCOPE), "fact", threshold=0.5)
    assert [m.status for m in out] == ["conflict"]
    assert store.backend.query("SELECT count(*) FROM memories WHERE source_type = 'consolidation'") == [(0,)]


@pytest.mark.sqlite_only  # reads or edits SQLite's own tables
def test_q4_consolidation_inherits_least_trust(store: MemoryService) -> None:
    a, b = _consolidation_inputs(store)
    store.backend.conn.execute("UPDATE memories SET trust = 'untrusted' WHERE id = ?", (b,))  # as if promoted
    # the edit breaks b's signature: it is refused, so nothing merges (fail closed, T6)
    assert [m.status for m in consolidate(store, _ctx(SCOPE), "fact", threshold=0.5)] == []
    store.backend.conn.execute("UPDATE memories SET trust = 'trusted' WHERE id = ?", (b,))
    res = store.write(_ctx(SCOPE, trust="untrusted", source_type="consolidation"), "The user's team ships often",
                      kind="fact", derived_from=[a, b], derived_versions={a: 1, b: 2})
    assert res.status == "review"


def _tables_holding(db_path: Path, needle: str) -> dict[str, int]:
    conn = sqlite3.connect(db_path)
    try:
        found: dict[str, int] = {}
        for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
            n = sum(1 for row in conn.execute(f'SELECT * FROM "{table}"')
                    if any(needle.encode() in (v if isinstance(v, bytes) else str(v).encode())
                           for v in row if v is not None))
            if n:
                found[table] = n
        return found
    finally:
        conn.close()


@pytest.mark.sqlite_only  # reads or edits SQLite's own tables
def test_d3_deleting_an_input_leaves_no_merged_text_anywhere(store: MemoryService, db_path: Path) -> None:
    a, b = _consolidation_inputs(store)
    out = consolidate(store, _ctx(SCOPE), "fact", threshold=0.5)
    merged_id = out[0].merged_id
    assert merged_id
    removed = store.remove(_ctx(SCOPE), a)
    assert set(removed) == {a, merged_id}
    store.gc()
    blob = b"".join(p.read_bytes() for p in db_path.parent.glob(db_path.name + "*"))
    assert _tables_holding(db_path, "billing API every second Tuesday") == {"memories": 1}  # b only
    assert b"Tuesday\x00" not in blob and blob.count(b"billing API every second Tuesday") <= 1
    assert store.backend.query("SELECT count(*) FROM memory_vectors v LEFT JOIN memories m ON m.rowid = v.rowid"
                               " WHERE m.rowid IS NULL") == [(0,)]
    assert [r.id for r in store.search(_ctx(SCOPE), "billing API Tuesday")] == [b]  # the input resurfaces
    assert doctor.run(store) == []


def test_q1_context_expansion_finds_the_neighbouring_turn(store: MemoryService) -> None:
    turns = ["Caroline said, \"What have you been up to lately?\"",
             "Melanie said, \"I signed up for a pottery class and made a bowl\"",
             "Caroline said, \"That sounds relaxing\""]
    ids = [_write(store, SCOPE, t, session_id="conv-1") for t in turns]
    _write(store, SCOPE, "Caroline said, \"lately the weather was bad\"", session_id="conv-2")
    got = [r.id for r in store.retrieval.search(_ctx(SCOPE), "pottery class", 3)]
    assert got[0] == ids[1] and set(got[1:]) == {ids[0], ids[2]}  # neighbours of the same session only
    assert [r.id for r in store.retrieval.search(_ctx(SCOPE), "pottery class", 3, ranking=Ranking(expand=0))] \
        == [ids[1]]


def test_tokenizer_stems_plurals_and_splits_identifiers() -> None:
    assert terms("Researching plans for the billing-api and getUserName in snake_case") == \
        ["research", "plan", "bill", "api", "get", "user", "name", "snake", "case"]
    assert terms("Café") == terms("cafe")


@pytest.mark.sqlite_only  # reads or edits SQLite's own tables
def test_fts_index_holds_no_plaintext_terms(store: MemoryService, db_path: Path) -> None:
    _write(store, SCOPE, "The plumbatronic widget")
    assert _tables_holding(db_path, "plumbatronic") == {"memories": 1}


def test_schema1_database_is_migrated_on_open(db_path: Path) -> None:
    with memwarden.open(db_path) as store:
        mid = _write(store, SCOPE, "The kestrelwing migration finished")
    raw_sql(db_path,  # turn it into a schema-1 file: porter FTS over raw text, no tokenizer mark
            "DROP TABLE memories_fts_vocab",
            "DROP TABLE memories_fts",
            "CREATE VIRTUAL TABLE memories_fts USING fts5(content, tokenize = 'porter unicode61')",
            "INSERT INTO memories_fts (rowid, content) SELECT rowid, content FROM memories",
            "DROP TABLE memory_dupkeys",  # schemas 1 and 2 had no near-duplicate key table
            "DELETE FROM meta WHERE key IN ('fts_tokenizer', 'schema_version')",
            "DROP TABLE settings",  # signed settings came with issue 12
            "INSERT INTO meta VALUES ('schema_version', '1')")
    with memwarden.open(db_path) as store:
        assert [r.id for r in store.search(_ctx(SCOPE), "kestrelwing migrations")] == [mid]
        assert store.backend.query("SELECT value FROM meta WHERE key = 'schema_version'") == [
            (str(SCHEMA_VERSION),)]
        assert doctor.run(store) == []
        again = store.write(_ctx(SCOPE), "the Kestrelwing migration finished!", kind="episode")
        assert (again.id, again.message.startswith("near-duplicate")) == (mid, True)  # keys rebuilt on open


def test_cli_reindex_and_consolidate(db_path: Path) -> None:
    from typer.testing import CliRunner

    from memwarden.cli import app

    with memwarden.open(db_path) as store:
        _consolidation_inputs(store)
    runner = CliRunner()
    res = runner.invoke(app, ["--db", str(db_path), "reindex", "--json"])
    assert res.exit_code == 0 and '"records": 2' in res.stdout, res.stdout
    ident = ["--tenant", "acme", "--user", "u-1", "--agent", "support"]
    res = runner.invoke(app, ["--db", str(db_path), "consolidate", *ident, "--kind", "fact", "--dry-run"])
    assert res.exit_code == 0 and "nothing to consolidate" in res.stdout  # 0.9 threshold: these differ more
    assert runner.invoke(app, ["--db", str(db_path), "doctor"]).exit_code == 0


def test_q2_tokenizer_upgrade_on_open_keeps_the_vectors(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMWARDEN_EMBEDDER", "hash")
    with memwarden.open(db_path) as store:
        mid = _write(store, SCOPE, "The osprey rollout is paused")
        before = store.backend.query("SELECT rowid, embedder, vec FROM memory_vectors")
        # an index written by an older tokenizer (its mark is a signed setting)
        store.backend.run_write(lambda tx: store.settings.put(tx, "fts_tokenizer", "mw-terms-0"))
    assert len(before) == 1 and before[0][2] is not None
    marker = np.eye(1, HashEmbedder().dim, 3, dtype=np.float32)[0].tobytes()  # a unit vector the embedder would
    raw_sql(db_path, ("UPDATE memory_vectors SET vec = ?", (marker,)),  # not produce
            "DELETE FROM memories_fts")
    with memwarden.open(db_path) as store:
        assert store.backend.query("SELECT rowid, embedder, vec FROM memory_vectors") == [
            (before[0][0], before[0][1], marker)]  # not recomputed
        assert [r.id for r in store.search(_ctx(SCOPE), "osprey rollout")] == [mid]  # terms rebuilt
        assert doctor.run(store) == []


def test_q2_reindex_embedder_choice_is_kept_for_later_opens(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMWARDEN_EMBEDDER", raising=False)
    with memwarden.open(db_path) as store:
        _write(store, SCOPE, "The kestrel audit is done")
        store.retrieval.set_embedder(HashEmbedder(dim=64))
        store.retrieval.reindex(spec="hash")
    with memwarden.open(db_path) as store:
        assert store.retrieval.embedder.fingerprint == HashEmbedder().fingerprint
        assert store.backend.query("SELECT value FROM settings WHERE name = 'embedder'") == [("hash",)]


def test_q1_default_configuration_stores_no_vectors_and_searches_lexically(db_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMWARDEN_EMBEDDER", raising=False)
    with memwarden.open(db_path) as plain:
        assert plain.retrieval.embedder.dim == 0 and plain.retrieval.embedder.fingerprint == "none"
        seen: list[Event] = []
        plain.events.subscribe(seen.append)
        mid = _write(plain, SCOPE, f"The {TOKEN} deploy broke on Tuesday")
        _write(plain, OTHER_USER, f"The {TOKEN} deploy broke on Tuesday for someone else")
        assert plain.backend.query("SELECT count(*) FROM memory_vectors") == [(0,)]
        for ranking in MODES:
            assert _ids(plain, _ctx(SCOPE), f"{TOKEN} deploy", ranking) == {mid}
        assert not any(e.event == "embedder_failed" for e in seen)  # no embedder is not a failure
        assert doctor.run(plain) == []
        plain.retrieval.set_embedder(HashEmbedder())  # opting in later: reindex fills the vectors
        plain.retrieval.reindex(spec="hash")
        assert plain.backend.query("SELECT count(*) FROM memory_vectors WHERE vec IS NOT NULL") == [(2,)]
        assert doctor.run(plain) == []
