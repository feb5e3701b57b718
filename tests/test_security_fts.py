"""Issue 12 item 15 (FTS half, D3): a removed record's keyed term tokens must not stay in the FTS5 index.

FTS5 (SQLite 3.40, no secure-delete) does not take a deleted row's terms out of its index segments: a DELETE
writes a delete marker — the row's terms once more — into a new segment, and only a merge whose output is the
oldest segment drops both. These tests read the raw segment data, as someone holding the file would: every leaf
page of ``memories_fts_data`` is decoded (the FTS5 page format, ext/fts5/fts5_index.c) into the terms it stores,
and every blob of ``memories_fts_data`` and ``memories_fts_idx`` is searched for the tail of each token (prefix
compression stores a term as its suffix after the term before it; the tail is always stored). A removed record's
tokens that no remaining record shares must be in neither, after every delete path: remove, forget, review
reject, clear, expiry (purged by a save, and by ``gc``), eviction and a replaced revision.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest
from typer.testing import CliRunner

import memwarden
from conftest import held_write
from memwarden import auth, review
from memwarden.cli import app
from memwarden.extract import Extractor
from memwarden.policy import DEFAULT_LIMITS, KindLimits
from memwarden.records import now_ms
from memwarden.service import MemoryService

SCOPE = memwarden.Scope(tenant="acme", user="u-42", agent="support")
DAY_MS = 86_400_000
TAIL = 10  # characters of a token searched for in the raw blobs (a token: 8 of scope tag, then 13 of term hash)

# --- reading the index the hard way ------------------------------------------------------------------------------


def _varint(b: bytes, i: int) -> tuple[int, int]:
    """An SQLite varint at ``b[i:]``: (value, offset after it)."""
    v = 0
    for k in range(8):
        c = b[i + k]
        v = (v << 7) | (c & 0x7F)
        if not c & 0x80:
            return v, i + k + 1
    return (v << 8) | b[i + 8], i + 9


def _leaf_terms(page: bytes) -> list[bytes]:
    """Every term stored on one FTS5 leaf page. Header: 2 bytes (offset of the first rowid), 2 bytes (offset of
    the page footer). Footer: one varint per term on the page, its offset, delta-encoded. The first term is
    ``varint size, bytes``; each later one ``varint bytes shared with the previous term, varint size, bytes``."""
    footer = int.from_bytes(page[2:4], "big")
    offsets, i, at = [], footer, 0
    while i < len(page):
        delta, i = _varint(page, i)
        at += delta
        offsets.append(at)
    terms: list[bytes] = []
    term = b""
    for n, off in enumerate(offsets):
        if n == 0:
            size, j = _varint(page, off)
            term = page[j:j + size]
        else:
            shared, j = _varint(page, off)
            size, j = _varint(page, j)
            term = term[:shared] + page[j:j + size]
        terms.append(term)
    return terms


def _segment_terms(db: Path) -> set[str]:
    """The tokens held by the leaf pages of every segment (main index terms start with ``0``)."""
    conn = sqlite3.connect(db)
    try:
        found: set[str] = set()
        for rowid, block in conn.execute("SELECT id, block FROM memories_fts_data WHERE id > 10"):
            segid, dlidx, height = rowid >> 37, (rowid >> 36) & 1, (rowid >> 31) & 31
            if segid and not dlidx and not height:  # a leaf page (not a doclist index page)
                found.update(t[1:].decode() for t in _leaf_terms(block) if t[:1] == b"0")
        return found
    finally:
        conn.close()


def _raw_index(db: Path) -> bytes:
    """Every byte of the index's shadow tables: segment blobs and the page index's terms."""
    conn = sqlite3.connect(db)
    try:
        blobs = [bytes(b) for (b,) in conn.execute("SELECT block FROM memories_fts_data")]
        blobs += [bytes(t) if isinstance(t, bytes) else str(t).encode()
                  for (t,) in conn.execute("SELECT term FROM memories_fts_idx")]
        return b"\x00".join(blobs)
    finally:
        conn.close()


def _tokens_of(db: Path, ids: Iterable[str]) -> set[str]:
    """The index tokens of live records (their FTS rows, read before they are removed)."""
    conn = sqlite3.connect(db)
    try:
        out: set[str] = set()
        for mid in ids:
            row = conn.execute("SELECT f.content FROM memories m JOIN memories_fts f ON f.rowid = m.rowid"
                               " WHERE m.id = ?", (mid,)).fetchone()
            assert row is not None, mid
            out.update(str(row[0]).split())
        return out
    finally:
        conn.close()


def _live_tokens(db: Path) -> set[str]:
    conn = sqlite3.connect(db)
    try:
        return {t for (c,) in conn.execute("SELECT content FROM memories_fts") for t in str(c).split()}
    finally:
        conn.close()


def _indexed(db: Path, ids: Iterable[str]) -> set[str]:
    """The tokens of ``ids`` — checked to be in the segments now, so the later absence means something."""
    tokens = _tokens_of(db, ids)
    assert tokens
    assert tokens <= _segment_terms(db), "the page decoder must see every token of a live record"
    raw = _raw_index(db)
    assert any(t[-TAIL:].encode() in raw for t in tokens), "the raw search must see a live record's tokens"
    return tokens


def _assert_gone(db: Path, tokens: set[str]) -> None:
    """No token of a removed record that no remaining record shares is left in the index data."""
    own = tokens - _live_tokens(db)
    assert own, "the removed records must have had tokens of their own"
    in_pages = own & _segment_terms(db)
    assert not in_pages, f"{len(in_pages)} of {len(own)} tokens of removed records remain in FTS5 segments"
    # the term hash after the scope tag is the same in every scope: search only for tails no live token has
    live_tails = {t[-TAIL:] for t in _live_tokens(db)}
    raw = _raw_index(db)
    in_blobs = [t for t in own if t[-TAIL:] not in live_tails and t[-TAIL:].encode() in raw]
    assert not in_blobs, f"{len(in_blobs)} of {len(own)} tokens of removed records remain in the raw index"


def _no_incidental_merges(store: MemoryService) -> None:
    """FTS5 merges segments on its own as they accumulate ('automerge'), and a merge that happens to include the
    oldest segment drops delete markers: whether a few test writes trigger one is luck. Off, the test sees what
    each delete path itself leaves (the worst case); the defence must not depend on it."""
    store.backend.run_exclusive(
        lambda conn: conn.execute("INSERT INTO memories_fts (memories_fts, rank) VALUES ('automerge', 0)"))


def _filler(s: memwarden.Session, n: int = 12) -> list[str]:
    """Records that stay, with words the removed records share with them: one transaction, so one segment
    (FTS5 also merges a level that reaches 16 segments, 'crisismerge', which a test must not rely on)."""
    _no_incidental_merges(s.service)
    items = [{"content": f"User note {i}: the staging cluster uses region eu-west-{i}", "kind": "episode"}
             for i in range(n)]
    ids = []
    for r in s.service.write_many(s.context, items):
        assert isinstance(r, memwarden.WriteResult) and r.id, r
        ids.append(r.id)
    return ids


def _save(s: memwarden.Session, text: str, **kw: object) -> str:
    r = s.save(text, **kw)  # type: ignore[arg-type]
    assert r.status == "accepted" and r.id, r
    return r.id


def _advance(monkeypatch: pytest.MonkeyPatch, ms: int) -> None:
    """Move memwarden's clock forward (only "now" changes)."""
    import memwarden.audit
    import memwarden.records
    import memwarden.service
    import memwarden.session

    def later() -> int:
        return now_ms() + ms

    for mod in (memwarden.records, memwarden.service, memwarden.session, memwarden.audit):
        if hasattr(mod, "now_ms"):
            monkeypatch.setattr(mod, "now_ms", later)


# --- every delete path --------------------------------------------------------------------------------------------


def test_D3_removed_record_tokens_are_gone_from_fts_segments(store: MemoryService, db_path: Path) -> None:
    with store.session(SCOPE) as s:
        keep = _filler(s)
        mid = _save(s, "User's vault passphrase hint is quokka marmalade lighthouse", kind="episode")
        first = _indexed(db_path, [mid])
        s.update(mid, "User's vault passphrase hint is wombat tangerine lighthouse", expected_version=1)
        tokens = first | _indexed(db_path, [mid])  # both versions' terms
        assert s.remove(mid) == [mid]
    _assert_gone(db_path, tokens)
    assert _tokens_of(db_path, keep) <= _segment_terms(db_path)  # what stays is still indexed
    with store.session(SCOPE) as s:
        assert [r.id for r in s.search("staging cluster region")]
        assert s.search("quokka marmalade") == [] and s.search("wombat tangerine") == []


def test_D3_removed_through_the_tool_call_leaves_no_tokens_in_fts_segments(store: MemoryService,
                                                                           db_path: Path) -> None:
    with store.session(SCOPE) as s:
        _filler(s)
        mid = _save(s, "User's locker combination mentions ocelot pumpernickel", kind="fact")
        tokens = _indexed(db_path, [mid])
        assert s.call_tool("memory_remove", {"id": mid}) == {"status": "removed", "ids": [mid]}
    _assert_gone(db_path, tokens)


def test_D3_forgotten_record_and_derived_tokens_are_gone_from_fts_segments(store: MemoryService,
                                                                           db_path: Path) -> None:
    with store.session(SCOPE) as s:
        _filler(s)
        mid = _save(s, "User lives on Zanzibar Street near the heliotrope bakery")
    with store.session(SCOPE) as s:
        derived = store.write(s.context, "User's street is near the heliotrope kiosk of Zanzibar",
                              derived_from=[mid]).id
    assert derived
    tokens = _indexed(db_path, [mid, derived])
    result = CliRunner().invoke(app, ["--db", str(db_path), "forget", mid])
    assert result.exit_code == 0, result.output
    _assert_gone(db_path, tokens)


def test_D3_rejected_held_record_tokens_are_gone_from_fts_segments(store: MemoryService, db_path: Path) -> None:
    with store.session(SCOPE) as s:
        _filler(s)
    held = held_write(store, SCOPE, "User wants invoices sent to billing@zorbly.example")
    assert held.status == "review" and held.id
    tokens = _indexed(db_path, [held.id])
    _, who = auth.create_token(store, "operator", "acme", name="carol")
    assert review.reject(store, who, held.id, reason="phishing") == [held.id]
    _assert_gone(db_path, tokens)


def test_D3_replaced_revision_leaves_no_tokens_of_the_original_in_fts_segments(store: MemoryService,
                                                                               db_path: Path) -> None:
    with store.session(SCOPE) as s:
        _filler(s)
        orig = _save(s, "User's deploy window is Tuesday after the narwhal standup")
    with store.session(SCOPE) as s:
        s.record_tool_call("web_fetch", {"url": "https://evil.example/"})
        prop = s.update(orig, "User's deploy window is Friday evening", expected_version=1)
    assert prop.status == "review" and prop.id
    tokens = _indexed(db_path, [orig])
    _, who = auth.create_token(store, "operator", "acme")
    review.promote(store, who, prop.id, replace_current=True)
    _assert_gone(db_path, tokens)


def test_D3_cleared_records_tokens_are_gone_from_fts_segments(store: MemoryService, db_path: Path) -> None:
    other = memwarden.Scope(tenant="acme", user="u-43", agent="support")
    with store.session(other) as s:
        kept = _filler(s)
    with store.session(SCOPE) as s:
        ids = [_save(s, f"Cleared note {i} about the tapir {w} incident", kind="episode")
               for i, w in enumerate(("saffron", "obsidian", "juniper", "mistral"))]
        tokens = _indexed(db_path, ids)
        assert sorted(s.clear()) == sorted(ids)
    _assert_gone(db_path, tokens)
    assert _tokens_of(db_path, kept) <= _segment_terms(db_path)


def test_D3_expired_record_purged_by_a_save_leaves_no_tokens_in_fts_segments(
        db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    limits = dict(DEFAULT_LIMITS)
    limits["fact"] = KindLimits(max_entries=3, max_bytes=10_000)
    with memwarden.open(db_path, policy=memwarden.Policy(limits=limits)) as store:
        with store.session(SCOPE) as s:
            _filler(s)
            short = [_save(s, f"Short lived fact {i} about the axolotl {w}", ttl_days=1)
                     for i, w in enumerate(("cobalt", "vermilion"))]
            _save(s, "Long lived fact", ttl_days=30)
        tokens = _indexed(db_path, short)
        _advance(monkeypatch, DAY_MS + 1000)
        with store.session(SCOPE) as s:
            _save(s, "Fits once the old ones expired")  # the capacity check purges the expired ones
    _assert_gone(db_path, tokens)


def test_D3_expired_record_purged_by_gc_leaves_no_tokens_in_fts_segments(
        store: MemoryService, db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with store.session(SCOPE) as s:
        _filler(s)
        short = _save(s, "Temporary code for the pelican gate is cinnabar", ttl_days=1)
    tokens = _indexed(db_path, [short])
    _advance(monkeypatch, DAY_MS + 1000)
    assert store.gc() == [short]
    _assert_gone(db_path, tokens)


def test_D3_evicted_extracted_fact_leaves_no_tokens_in_fts_segments(db_path: Path) -> None:
    def answer(content: str, confidence: float) -> Extractor:
        return Extractor(lambda p: json.dumps([{"content": content, "kind": "fact", "confidence": confidence}]))

    limits = dict(DEFAULT_LIMITS)
    limits["fact"] = KindLimits(2, 256 * 1024)
    turns = [("user", "I work at Zephyr Logistics")]
    with memwarden.open(db_path, policy=memwarden.Policy(extract_facts=True, limits=limits)) as store, \
            store.session(SCOPE) as s:
        _filler(s)
        s.extract_facts(answer("User's favourite bird is the kakapo", 0.75), turns)
        s.extract_facts(answer("User's pet is a cat", 0.95), turns)
        weak = next(r.id for r in s.view() if "kakapo" in r.content)
        tokens = _indexed(db_path, [weak])
        report = s.extract_facts(answer("User's car is a bike", 0.9), turns)
        assert [r.status for r in report.results] == ["accepted"]
        assert weak not in {r.id for r in s.view()}
    _assert_gone(db_path, tokens)


# --- who pays -----------------------------------------------------------------------------------------------------


def _optimizes(store: MemoryService, action: Callable[[], object]) -> int:
    """How many FTS5 'optimize' commands ``action`` ran on the store's write connection."""
    seen: list[str] = []
    store.backend.conn.set_trace_callback(seen.append)
    try:
        action()
    finally:
        store.backend.conn.set_trace_callback(None)
    return sum("'optimize'" in sql for sql in seen)


def test_D3_a_save_that_removes_nothing_does_not_compact_the_fts_index(store: MemoryService) -> None:
    with store.session(SCOPE) as s:
        _filler(s, 2)
        assert _optimizes(store, lambda: s.save("User prefers tea in the afternoon")) == 0
        assert _optimizes(store, lambda: s.save("User prefers tea in the afternoon")) == 0  # a merged duplicate
        mid = _save(s, "User's sprint ends on Thursday")
        assert _optimizes(store, lambda: s.update(mid, "User's sprint ends on Friday", expected_version=1)) == 0


def test_D3_clear_compacts_the_fts_index_once_for_every_record_it_removes(store: MemoryService) -> None:
    with store.session(SCOPE) as s:
        for i in range(6):
            _save(s, f"Clear me {i}: note about topic {i}", kind="episode")
        assert _optimizes(store, lambda: s.remove(_save(s, "One more note", kind="episode"))) == 1
        assert _optimizes(store, s.clear) == 1
