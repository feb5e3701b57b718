"""The write gate's record-level rules (G1, G6) through ``memwarden.scan``/``Gate.check`` and through
``session.save``: every bad candidate is rejected with the right rule id, nothing is stored, and a
``rejected`` audit event keeps the full candidate. ``Gate.add_scanner`` can only make verdicts stricter."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import memwarden
from memwarden import audit
from memwarden.gate import ACCEPT, REJECT, REVIEW, Candidate, Gate, RuleHit
from memwarden.policy import Policy
from memwarden.prompt_block import parse_blocks
from memwarden.service import MemoryService


def _count_rows(store: MemoryService) -> int:
    with store.backend.read() as conn:
        return int(conn.execute("SELECT count(*) FROM memories").fetchone()[0]) + int(
            conn.execute("SELECT count(*) FROM memories_fts").fetchone()[0])


def _last_rejected(store: MemoryService) -> dict[str, Any]:
    rows = audit.log_rows(store.backend, event="rejected")
    assert rows, "no rejected audit event"
    return rows[-1]


class Opaque:
    def __repr__(self) -> str:
        return "<Opaque>"


# (content, kind, rule) for the rules memwarden.scan can see
CONTENT_CASES: list[Any] = [
    pytest.param("", "fact", "record.empty", id="empty"),
    pytest.param("   ", "fact", "record.empty", id="spaces"),
    pytest.param(" \t\n\r\n  ", "fact", "record.empty", id="whitespace"),
    pytest.param("\u3000\u2003", "fact", "record.empty", id="unicode-space"),
    pytest.param("User prefers tea", "belief", "record.invalid_kind", id="kind-unknown"),
    pytest.param("User prefers tea", "", "record.invalid_kind", id="kind-empty"),
    pytest.param("User prefers tea", "FACT", "record.invalid_kind", id="kind-case"),
    pytest.param("User prefers tea", 3, "record.invalid_kind", id="kind-int"),
    pytest.param("User prefers tea", None, "record.invalid_kind", id="kind-none"),
    pytest.param(123, "fact", "record.not_text", id="int"),
    pytest.param(None, "fact", "record.not_text", id="none"),
    pytest.param(b"User prefers tea", "fact", "record.not_text", id="bytes"),
    pytest.param(["User prefers tea"], "fact", "record.not_text", id="list"),
    pytest.param({"content": "x"}, "fact", "record.not_text", id="dict"),
    pytest.param("nul \x00 byte", "fact", "record.control_chars", id="nul"),
    pytest.param("escape \x1b[31m red", "fact", "record.control_chars", id="esc"),
    pytest.param("delete \x7f char", "fact", "record.control_chars", id="del"),
    pytest.param("next line \x85 char", "fact", "record.control_chars", id="nel"),
    pytest.param("bell \x07", "fact", "record.control_chars", id="bell"),
    pytest.param("c1 \x9b csi", "fact", "record.control_chars", id="c1-csi"),
    pytest.param("form\x0cfeed", "fact", "record.control_chars", id="formfeed"),
    pytest.param("lone \ud800 surrogate", "fact", "record.control_chars", id="lone-high-surrogate"),
    pytest.param("lone \udfff surrogate", "fact", "record.control_chars", id="lone-low-surrogate"),
    pytest.param("a" * 10241, "fact", "record.too_large", id="too-large"),
]

# (content, kwargs, rule) for rules that need the metadata/confidence fields
FIELD_CASES: list[Any] = [
    pytest.param({"metadata": {"k": "x" * 3000}}, "record.metadata_too_large", id="metadata-oversize"),
    pytest.param({"metadata": {"k": ["é" * 600, "é" * 600]}}, "record.metadata_too_large", id="metadata-mb"),
    pytest.param({"metadata": {"tags": {"a", "b"}}}, "record.metadata_invalid", id="metadata-set-value"),
    pytest.param({"metadata": {"a", "b"}}, "record.metadata_invalid", id="metadata-set"),
    pytest.param({"metadata": {"o": Opaque()}}, "record.metadata_invalid", id="metadata-object"),
    pytest.param({"metadata": {"n": float("nan")}}, "record.metadata_invalid", id="metadata-nan"),
    pytest.param({"metadata": {"n": float("inf")}}, "record.metadata_invalid", id="metadata-inf"),
    pytest.param({"metadata": {1: "int key"}}, "record.metadata_invalid", id="metadata-int-key"),
    pytest.param({"metadata": ["not", "a", "dict"]}, "record.metadata_invalid", id="metadata-list"),
    pytest.param({"metadata": "text"}, "record.metadata_invalid", id="metadata-str"),
    pytest.param({"metadata": {"t": (1, 2)}}, "record.metadata_invalid", id="metadata-tuple"),
    pytest.param({"metadata": {"b": b"x"}}, "record.metadata_invalid", id="metadata-bytes"),
    pytest.param({"metadata": {"a": {"b": {"c": {"d": {"e": {"f": 1}}}}}}}, "record.metadata_invalid",
                 id="metadata-deep"),
    pytest.param({"confidence": -0.1}, "record.invalid_confidence", id="confidence-negative"),
    pytest.param({"confidence": 1.5}, "record.invalid_confidence", id="confidence-over"),
    pytest.param({"confidence": "high"}, "record.invalid_confidence", id="confidence-str"),
    pytest.param({"confidence": True}, "record.invalid_confidence", id="confidence-bool"),
    pytest.param({"confidence": float("nan")}, "record.invalid_confidence", id="confidence-nan"),
    pytest.param({"confidence": None}, "record.invalid_confidence", id="confidence-none"),
]


@pytest.mark.parametrize(("content", "kind", "rule"), CONTENT_CASES)
def test_g6_scan_rejects_bad_records(content: Any, kind: Any, rule: str) -> None:
    v = memwarden.scan(content, kind=kind)
    assert v.verdict == REJECT
    assert rule in v.rules
    assert not v.accepted
    assert all(h.action == REJECT and h.message for h in v.hits)
    d = v.to_dict()
    assert d["verdict"] == "reject" and rule in d["rules"]


@pytest.mark.parametrize(("fields", "rule"), FIELD_CASES)
def test_g6_gate_rejects_bad_fields(fields: dict[str, Any], rule: str) -> None:
    v = Gate().check(Candidate("User prefers tea", "preference", "model", **fields))
    assert v.verdict == REJECT
    assert v.rules == [rule]


def _save_cases() -> list[Any]:
    return [pytest.param(*p.values, id=p.id) for p in CONTENT_CASES]


@pytest.mark.parametrize(("content", "kind", "rule"), _save_cases())
def test_g1_g6_save_rejects_bad_records(store: MemoryService, scope: memwarden.Scope, content: Any, kind: Any,
                                        rule: str) -> None:
    with store.session(scope) as s:
        r = s.save(content, kind=kind)
        assert r.status == "rejected"
        assert r.id is None and r.version is None and r.record is None
        assert rule in r.verdict.rules
        d = r.to_dict()
        assert d["status"] == "rejected" and rule in d["rules"] and d["hits"]
        assert s.view() == []
    assert _count_rows(store) == 0
    ev = _last_rejected(store)
    shown = content if isinstance(content, str) else repr(content)
    # issue 12 item 14: a rejection keeps at most Policy.max_rejected_kept characters, plus the whole one's hash
    keep = store.policy.max_rejected_kept
    assert ev["details"]["candidate"] == shown[:keep] and ev["details"]["truncated"] == (len(shown) > keep)
    if len(shown) > keep:
        assert ev["details"]["candidate_chars"] == len(shown)
    assert rule in ev["details"]["rules"]
    assert ev["session_id"] == s.id and ev["tenant"] == scope.tenant and ev["user"] == scope.user
    assert audit.verify(store.backend, store.signer) == []


@pytest.mark.parametrize(("fields", "rule"), FIELD_CASES)
def test_g1_g6_save_rejects_bad_fields(store: MemoryService, scope: memwarden.Scope, fields: dict[str, Any],
                                       rule: str) -> None:
    with store.session(scope) as s:
        r = s.save("User prefers tea", kind="preference", **fields)
        assert r.status == "rejected" and r.id is None
        assert r.verdict.rules == [rule]
    assert _count_rows(store) == 0
    ev = _last_rejected(store)
    assert ev["details"]["candidate"] == "User prefers tea"
    assert ev["details"]["rules"] == [rule]


def test_g6_rejected_audit_keeps_span(store: MemoryService, scope: memwarden.Scope) -> None:
    with store.session(scope) as s:
        r = s.save("abc\x1bdef", kind="fact")
    assert r.verdict.hits[0].span == (3, 4)
    assert _last_rejected(store)["details"]["hits"][0]["span"] == [3, 4]


def test_g6_rejected_events_reach_subscribers(store: MemoryService, scope: memwarden.Scope) -> None:
    got: list[str] = []
    store.events.subscribe(lambda e: got.append(e.details.get("candidate", "")), events=["rejected"])
    with store.session(scope) as s:
        s.save("", kind="fact")
        s.save("fine", kind="nope")
    assert got == ["", "fine"]


@pytest.mark.parametrize("kind", [["fact"], {"k": "fact"}])
def test_g6_unhashable_kind_rejected(store: MemoryService, scope: memwarden.Scope, kind: Any) -> None:
    v = memwarden.scan("User prefers tea", kind=kind)
    assert v.verdict == REJECT and v.rules == ["record.invalid_kind"]
    with store.session(scope) as s:
        assert s.save("User prefers tea", kind=kind).verdict.rules == ["record.invalid_kind"]


@pytest.mark.parametrize("metadata", [{"a": "\udc80"}, {"\ud800": 1}])
def test_g6_metadata_with_lone_surrogate_rejected(store: MemoryService, scope: memwarden.Scope,
                                                  metadata: dict[str, Any]) -> None:
    with store.session(scope) as s:
        r = s.save("User prefers tea", kind="preference", metadata=metadata)
        assert r.status == "rejected" and r.verdict.rules == ["record.metadata_invalid"]
    assert _count_rows(store) == 0


@pytest.mark.parametrize("text", [
    "line one\nline two",
    "col1\tcol2\tcol3",
    "windows\r\nline endings",
    "  leading and trailing spaces  ",
    "trailing newline\n",
])
def test_g6_tab_newline_accepted(store: MemoryService, scope: memwarden.Scope, text: str) -> None:
    assert memwarden.scan(text).verdict == ACCEPT
    with store.session(scope) as s:
        r = s.save(text, kind="fact")
        assert r.status == "accepted" and r.verdict.rules == []
        assert s.view(r.id or "").content == text
    assert audit.log_rows(store.backend, event="rejected") == []


@pytest.mark.parametrize("confidence", [0, 0.0, 0.5, 1, 1.0])
def test_g6_confidence_bounds_accepted(store: MemoryService, scope: memwarden.Scope,
                                       confidence: float) -> None:
    with store.session(scope, source_type="operator") as s:  # G5's threshold applies to model candidates only
        r = s.save("User prefers tea", kind="preference", confidence=confidence)
        assert r.status == "accepted"
        assert s.view(r.id or "").confidence == float(confidence)


def test_g6_metadata_at_limit_accepted(store: MemoryService, scope: memwarden.Scope) -> None:
    md = {"k": "x" * (2048 - len('{"k":""}'))}
    with store.session(scope) as s:
        r = s.save("User prefers tea", kind="preference", metadata=md)
        assert r.status == "accepted"
        assert s.view(r.id or "").metadata == md
        md2 = {"k": "x" * (2049 - len('{"k":""}'))}
        assert s.save("User prefers tea", kind="preference", metadata=md2).verdict.rules == [
            "record.metadata_too_large"]


# --- Gate.add_scanner: only stricter ------------------------------------------------------------------------


def _flag_review(c: Candidate, p: Policy) -> list[RuleHit]:
    return [RuleHit("custom.flag", REVIEW, "looks odd", (0, 4))] if "FLAG" in str(c.content) else []


def _try_to_relax(c: Candidate, p: Policy) -> list[RuleHit]:
    return [RuleHit("custom.allow", ACCEPT, "trust me")] if "RELAX" in c.content else []


def _block_all(c: Candidate, p: Policy) -> list[RuleHit]:
    return [RuleHit("custom.block", REJECT, "nope")]


def test_g6_add_scanner_only_stricter() -> None:
    gate = Gate()
    assert gate.check(Candidate("User likes FLAG football")).verdict == ACCEPT
    gate.add_scanner(_try_to_relax)
    gate.add_scanner(_flag_review)
    assert gate.check(Candidate("User prefers tea")).verdict == ACCEPT
    v = gate.check(Candidate("User likes FLAG football"))
    assert v.verdict == REVIEW and "custom.flag" in v.rules
    for bad in ("", "x\x00", "a" * 10241):  # record-level rejects stay rejects
        assert gate.check(Candidate(bad)).verdict == REJECT
    assert gate.check(Candidate("FLAG", kind="bogus")).verdict == REJECT
    gate.add_scanner(_block_all)
    assert gate.check(Candidate("User likes FLAG football")).verdict == REJECT
    assert gate.check(Candidate("User prefers tea")).verdict == REJECT
    assert memwarden.scan("User likes FLAG football", gate=gate).verdict == REJECT
    assert memwarden.scan("User likes FLAG football").verdict == ACCEPT  # the default gate is untouched


def test_g6_custom_review_scanner_holds_record(store: MemoryService, scope: memwarden.Scope) -> None:
    store.gate.add_scanner(_flag_review)
    with store.session(scope) as s:
        ok = s.save("User prefers tea", kind="preference")
        held = s.save("FLAG user prefers coffee", kind="preference")
        assert ok.status == "accepted"
        assert held.status == "review" and held.id is not None
        assert held.record is not None and held.record.status == "review"
        assert "custom.flag" in held.verdict.rules and "held" in held.message
        assert [r.id for r in s.search("prefers")] == [ok.id]
        assert s.search("coffee") == []
        assert [r.id for r in s.view()] == [ok.id]
        with pytest.raises(memwarden.HeldForReview):
            s.view(held.id)
        out = s.call_tool("memory_view", {"id": held.id})
        assert out["error"] == "held_for_review"
        with pytest.raises(memwarden.HeldForReview):
            s.update(held.id, "User prefers tea now", expected_version=1)
        with pytest.raises(memwarden.HeldForReview):
            s.remove(held.id)
    with store.session(scope) as s2:
        entries = parse_blocks(s2.system_block())[0].entries
        assert [e.id for e in entries] == [ok.id]
    assert store.operator_get(held.id).status == "review"  # stored for audit
    held_events = audit.log_rows(store.backend, event="held")
    assert [e["memory_id"] for e in held_events] == [held.id]
    assert held_events[0]["details"]["rules"] == ["custom.flag"]


def test_g6_held_hint_names_the_id(store: MemoryService, scope: memwarden.Scope) -> None:
    store.gate.add_scanner(_flag_review)
    with store.session(scope) as s:
        held = s.save("FLAG user prefers coffee", kind="preference")
        with pytest.raises(memwarden.HeldForReview) as err:
            s.view(held.id or "")
    assert "{memory_id}" not in str(err.value)
    assert held.id in str(err.value) and "operator" in str(err.value)


def test_g6_custom_reject_scanner_stores_nothing(tmp_path: Path, scope: memwarden.Scope) -> None:
    gate = Gate(Policy(), scanners=[_block_all])
    with memwarden.open(tmp_path / "g.db", gate=gate) as store, store.session(scope) as s:
        r = s.save("User prefers tea", kind="preference")
        assert r.status == "rejected" and r.verdict.rules == ["custom.block"]
        assert _count_rows(store) == 0
        assert _last_rejected(store)["details"]["candidate"] == "User prefers tea"
