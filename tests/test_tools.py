"""Agent tools: OpenAI/Anthropic schemas (S2: no identity parameters) and ``session.call_tool``, which always
returns a JSON-serialisable dict — results and errors alike — and never raises."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import memwarden
from memwarden import tools
from memwarden.policy import DEFAULT_LIMITS, KindLimits, Policy
from memwarden.service import MemoryService

NAMES = {"memory_save", "memory_update", "memory_remove", "memory_clear", "memory_search", "memory_view"}
IDENTITY_WORDS = ("tenant", "user", "agent", "session", "scope", "identity", "owner", "actor", "trust",
                  "approval", "provenance")


@pytest.fixture
def sess(store: MemoryService, scope: memwarden.Scope) -> Iterator[memwarden.Session]:
    with store.session(scope) as s:
        yield s


def _walk(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for v in node.values():
            yield from _walk(v)
    elif isinstance(node, list):
        for v in node:
            yield from _walk(v)


def _is_error(out: Any, code: str | None = None) -> bool:
    json.dumps(out)
    ok = isinstance(out, dict) and isinstance(out.get("error"), str) and isinstance(out.get("message"), str)
    return ok and (code is None or out["error"] == code)


# --- schemas ------------------------------------------------------------------------------------------------


def test_tools_openai_shape() -> None:
    ts = tools.openai_tools()
    assert {t["function"]["name"] for t in ts} == NAMES and len(ts) == 6
    for t in ts:
        assert set(t) == {"type", "function"} and t["type"] == "function"
        fn = t["function"]
        assert set(fn) == {"name", "description", "parameters"}
        assert isinstance(fn["description"], str) and fn["description"]
        params = fn["parameters"]
        assert params["type"] == "object" and isinstance(params["properties"], dict)
        assert params["additionalProperties"] is False
    json.dumps(ts)


def test_tools_anthropic_shape() -> None:
    ts = tools.anthropic_tools()
    assert {t["name"] for t in ts} == NAMES and len(ts) == 6
    for t in ts:
        assert set(t) == {"name", "description", "input_schema"}
        assert t["input_schema"]["type"] == "object"
        assert t["input_schema"]["additionalProperties"] is False
    openai = {t["function"]["name"]: t["function"]["parameters"] for t in tools.openai_tools()}
    assert {t["name"]: t["input_schema"] for t in ts} == openai
    json.dumps(ts)


def test_tools_session_schemas_match_module(sess: memwarden.Session) -> None:
    assert sess.tool_schemas() == tools.openai_tools()
    assert sess.tool_schemas("anthropic") == tools.anthropic_tools()
    with pytest.raises(memwarden.InvalidInput):
        sess.tool_schemas("gemini")


@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
def test_s2_no_identity_parameters_anywhere(sess: memwarden.Session, fmt: str) -> None:
    for node in _walk(sess.tool_schemas(fmt)):
        for key in ("properties", "patternProperties"):
            for prop in node.get(key, {}):
                low = prop.lower()
                assert not any(w in low for w in IDENTITY_WORDS), prop
        for req in node.get("required", []):
            assert not any(w in req.lower() for w in IDENTITY_WORDS), req
        if node.get("type") == "object":
            assert node.get("additionalProperties") is False
    blob = json.dumps(sess.tool_schemas(fmt)).lower()
    for w in ('"tenant"', '"user"', '"user_id"', '"agent"', '"agent_id"', '"session_id"'):
        assert w not in blob


def test_tools_required_fields() -> None:
    req = {t["name"]: set(t["input_schema"].get("required", [])) for t in tools.anthropic_tools()}
    assert req["memory_save"] == {"content"}
    assert req["memory_update"] == {"id", "content", "expected_version"}
    assert req["memory_remove"] == {"id"}
    assert req["memory_clear"] == {"confirm"}
    assert req["memory_search"] == {"query"}
    assert req["memory_view"] == set()


# --- happy paths --------------------------------------------------------------------------------------------


def test_tools_happy_path_every_tool(sess: memwarden.Session) -> None:
    saved = sess.call_tool("memory_save", {"content": "User prefers tea", "kind": "preference",
                                           "confidence": 0.9, "ttl_days": 60, "sensitivity": "public"})
    assert saved["status"] == "accepted" and saved["version"] == 1 and saved["rules"] == []
    mid = saved["id"]
    other = sess.call_tool("memory_save", {"content": "User works at Acme"})
    assert other["status"] == "accepted"

    viewed = sess.call_tool("memory_view", {"id": mid})
    mem = viewed["memory"]
    assert mem["id"] == mid and mem["content"] == "User prefers tea" and mem["version"] == 1
    assert mem["kind"] == "preference" and mem["confidence"] == 0.9 and mem["sensitivity"] == "public"
    assert mem["trust"] == "trusted"
    assert not any(k in mem for k in ("tenant", "user", "agent", "provenance", "signature"))

    listed = sess.call_tool("memory_view", {})
    assert listed["count"] == 2 and {m["id"] for m in listed["memories"]} == {mid, other["id"]}
    assert sess.call_tool("memory_view", {"kind": "fact"})["count"] == 1
    assert sess.call_tool("memory_view", {"limit": 1})["count"] == 1

    found = sess.call_tool("memory_search", {"query": "tea", "k": 3})
    assert [r["id"] for r in found["results"]] == [mid]
    assert sess.call_tool("memory_search", {"query": "tea", "kind": "fact"})["results"] == []

    upd = sess.call_tool("memory_update", {"id": mid, "content": "User prefers green tea",
                                           "expected_version": 1})
    assert upd["status"] == "accepted" and upd["id"] == mid and upd["version"] == 2
    assert sess.call_tool("memory_view", {"id": mid})["memory"]["content"] == "User prefers green tea"

    rem = sess.call_tool("memory_remove", {"id": mid})
    assert rem == {"status": "removed", "ids": [mid]}
    assert _is_error(sess.call_tool("memory_view", {"id": mid}), "not_found")

    cleared = sess.call_tool("memory_clear", {"confirm": True})
    assert cleared["status"] == "cleared" and cleared["count"] == 1 and cleared["ids"] == [other["id"]]
    assert sess.call_tool("memory_view", {})["count"] == 0


def test_tools_clear_one_kind(sess: memwarden.Session) -> None:
    sess.call_tool("memory_save", {"content": "User prefers tea", "kind": "preference"})
    keep = sess.call_tool("memory_save", {"content": "User works at Acme", "kind": "fact"})["id"]
    out = sess.call_tool("memory_clear", {"confirm": True, "kind": "preference"})
    assert out["count"] == 1
    assert [m["id"] for m in sess.call_tool("memory_view", {})["memories"]] == [keep]


def test_tools_reminder_with_due(sess: memwarden.Session) -> None:
    out = sess.call_tool("memory_save", {"content": "Renew passport", "kind": "reminder",
                                         "due": "2031-01-02T09:00Z"})
    assert out["status"] == "accepted"
    assert sess.call_tool("memory_view", {"id": out["id"]})["memory"]["due"] == "2031-01-02T09:00:00Z"
    assert _is_error(sess.call_tool("memory_save", {"content": "Renew passport", "kind": "reminder"}),
                     "invalid_input")


def test_tools_json_string_arguments(sess: memwarden.Session) -> None:
    out = sess.call_tool("memory_save", json.dumps({"content": "User prefers tea", "kind": "preference"}))
    assert out["status"] == "accepted"
    viewed = sess.call_tool("memory_view", json.dumps({"id": out["id"]}))
    assert viewed["memory"]["content"] == "User prefers tea"
    assert sess.call_tool("memory_view", "")["count"] == 1  # empty string = no arguments
    assert sess.call_tool("memory_view", None)["count"] == 1
    assert sess.call_tool("memory_view")["count"] == 1


def test_tools_gate_rejection_is_a_result(sess: memwarden.Session) -> None:
    out = sess.call_tool("memory_save", {"content": "bad \x1b[2J escape"})
    assert out["status"] == "rejected" and out["id"] is None
    assert out["rules"] == ["record.control_chars"] and out["hits"][0]["rule"] == "record.control_chars"
    json.dumps(out)


# --- errors as dicts ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "args", "code"), [
    ("memory_promote", {"id": "x"}, "forbidden"),
    ("memory_approve", {}, "forbidden"),
    ("", {}, "unknown_tool"),
    ("MEMORY_SAVE", {"content": "x"}, "unknown_tool"),
    ("memory_save", [1, 2], "invalid_arguments"),
    ("memory_save", 42, "invalid_arguments"),
    ("memory_save", "[1, 2]", "invalid_arguments"),
    ("memory_save", '"just a string"', "invalid_arguments"),
    ("memory_save", "{not json", "invalid_arguments"),
    ("memory_save", '{"content": "x",}', "invalid_arguments"),
    ("memory_save", "{}", "invalid_arguments"),
    ("memory_save", {"content": 123}, "invalid_arguments"),
    ("memory_save", {"content": None}, "invalid_arguments"),
    ("memory_save", {"content": "x", "kind": "belief"}, "invalid_arguments"),
    ("memory_save", {"content": "x", "confidence": "high"}, "invalid_arguments"),
    ("memory_save", {"content": "x", "confidence": 2}, "invalid_arguments"),
    ("memory_save", {"content": "x", "ttl_days": "30"}, "invalid_arguments"),
    ("memory_save", {"content": "x", "ttl_days": 0}, "invalid_arguments"),
    ("memory_save", {"content": "x", "sensitivity": "top"}, "invalid_arguments"),
    ("memory_save", {"content": "x", "due": "not a date"}, "invalid_input"),
    ("memory_save", {"content": "x", "tenant": "evil"}, "invalid_arguments"),
    ("memory_save", {"content": "x", "user": "root"}, "invalid_arguments"),
    ("memory_save", {"content": "x", "trust": "trusted"}, "invalid_arguments"),
    ("memory_save", {"content": "x", "metadata": {"a": 1}}, "invalid_arguments"),
    ("memory_search", {"query": "x", "k": "5"}, "invalid_arguments"),
    ("memory_search", {"query": "x", "k": 0}, "invalid_arguments"),
    ("memory_search", {"query": "x", "k": 1000}, "invalid_arguments"),
    ("memory_search", {"query": 5}, "invalid_arguments"),
    ("memory_search", {}, "invalid_arguments"),
    ("memory_view", {"id": 5}, "invalid_arguments"),
    ("memory_view", {"limit": 0}, "invalid_arguments"),
    ("memory_view", {"id": "01ARZ3NDEKTSV4RRFFQ69G5FAV"}, "not_found"),
    ("memory_remove", {"id": "01ARZ3NDEKTSV4RRFFQ69G5FAV"}, "not_found"),
    ("memory_remove", {}, "invalid_arguments"),
    ("memory_update", {"id": "01ARZ3NDEKTSV4RRFFQ69G5FAV", "content": "x", "expected_version": 1},
     "not_found"),
    ("memory_update", {"id": "x", "content": "y"}, "invalid_arguments"),
    ("memory_update", {"id": "x", "content": "y", "expected_version": "1"}, "invalid_arguments"),
    ("memory_update", {"id": "x", "content": "y", "expected_version": 0}, "invalid_arguments"),
    ("memory_clear", {}, "invalid_arguments"),
    ("memory_clear", {"confirm": False}, "invalid_arguments"),
    ("memory_clear", {"confirm": "true"}, "invalid_arguments"),
    ("memory_clear", {"confirm": 1}, "invalid_arguments"),
    ("memory_clear", {"confirm": True, "kind": "everything"}, "invalid_arguments"),
])
def test_tools_errors_are_dicts(store: MemoryService, sess: memwarden.Session, name: str, args: Any,
                                code: str) -> None:
    keep = sess.save("User prefers tea", kind="preference")
    out = sess.call_tool(name, args)
    assert _is_error(out, code), out
    assert "Traceback" not in out["message"]
    assert sess.view(keep.id or "").version == 1  # nothing changed, nothing cleared
    with store.backend.read() as conn:
        assert conn.execute("SELECT count(*) FROM memories").fetchone()[0] == 1


def test_tools_unknown_tool_lists_available(sess: memwarden.Session) -> None:
    out = sess.call_tool("memory_frobnicate", {"id": "x"})
    assert _is_error(out, "unknown_tool")
    assert all(n in out["message"] for n in NAMES)


def test_tools_update_stale_version(sess: memwarden.Session) -> None:
    mid = sess.call_tool("memory_save", {"content": "User prefers tea"})["id"]
    first = sess.call_tool("memory_update", {"id": mid, "content": "v2", "expected_version": 1})
    assert first["version"] == 2
    out = sess.call_tool("memory_update", {"id": mid, "content": "stale", "expected_version": 1})
    assert _is_error(out, "version_conflict")
    assert out["id"] == mid and out["expected_version"] == 1 and out["actual_version"] == 2
    assert sess.call_tool("memory_view", {"id": mid})["memory"]["content"] == "v2"


def test_tools_capacity_error_lists_entries(tmp_path: Path, scope: memwarden.Scope) -> None:
    limits = {**DEFAULT_LIMITS, "preference": KindLimits(max_entries=3, max_bytes=64 * 1024)}
    with memwarden.open(tmp_path / "cap.db", policy=Policy(limits=limits)) as store, \
            store.session(scope) as s:
        ids = [s.call_tool("memory_save", {"content": f"Preference number {i} " + "x" * 100,
                                           "kind": "preference"})["id"] for i in range(3)]
        out = s.call_tool("memory_save", {"content": "One too many", "kind": "preference"})
        assert _is_error(out, "capacity")
        assert out["kind"] == "preference" and "3" in out["limit"]
        assert [e["id"] for e in out["entries"]] == ids
        for e in out["entries"]:
            assert set(e) >= {"id", "bytes", "preview"}
            assert e["bytes"] == len(("Preference number 0 " + "x" * 100).encode())
            assert e["preview"].startswith("Preference number") and len(e["preview"]) <= 80
        fits = s.call_tool("memory_save", {"content": "A fact still fits", "kind": "fact"})
        assert fits["status"] == "accepted"
        s.call_tool("memory_remove", {"id": ids[0]})
        now_fits = s.call_tool("memory_save", {"content": "Now it fits", "kind": "preference"})
        assert now_fits["status"] == "accepted"


def test_tools_capacity_bytes(tmp_path: Path, scope: memwarden.Scope) -> None:
    limits = {**DEFAULT_LIMITS, "fact": KindLimits(max_entries=100, max_bytes=250)}
    with memwarden.open(tmp_path / "cap.db", policy=Policy(limits=limits)) as store, \
            store.session(scope) as s:
        first = s.call_tool("memory_save", {"content": "a" * 200})
        assert first["status"] == "accepted"
        out = s.call_tool("memory_save", {"content": "b" * 51})
        assert _is_error(out, "capacity") and "250 bytes" in out["limit"]
        assert out["entries"] == [{"id": first["id"], "bytes": 200, "preview": "a" * 79 + "…"}]


def test_tools_closed_session(store: MemoryService, scope: memwarden.Scope) -> None:
    s = store.session(scope)
    mid = s.call_tool("memory_save", {"content": "User prefers tea"})["id"]
    s.close()
    for name, args in [("memory_save", {"content": "x"}), ("memory_view", {}), ("memory_view", {"id": mid}),
                       ("memory_search", {"query": "tea"}), ("memory_remove", {"id": mid}),
                       ("memory_clear", {"confirm": True}),
                       ("memory_update", {"id": mid, "content": "y", "expected_version": 1}),
                       ("memory_unknown", {})]:
        out = s.call_tool(name, args)
        assert _is_error(out), (name, out)
        assert "closed" in out["message"]
    with store.session(scope) as s2:
        assert s2.view(mid).content == "User prefers tea"


FUZZ_ARGS: list[Any] = [
    None, 0, 1.5, True, "null", "true", "0", "   ", "{", "}", "[]", "{}", '{"content": ""}',
    {"content": ""}, {"content": " "}, {"content": "x" * 20_000}, {"content": "\x00"},
    {"content": "ok", "confidence": float("nan")}, {"content": "ok", "confidence": float("inf")},
    {"content": "ok", "due": "2026-02-30T00:00Z"}, {"content": "ok", "kind": "reminder", "due": ""},
    {"content": "ok", "ttl_days": True}, {"content": "ok", "ttl_days": 30.0}, {"content": "ok", "kind": None},
    {"id": None}, {"id": ""}, {"query": ""}, {"query": "x" * 100_000}, {"confirm": None},
    '{"content": "ok", "confidence": NaN}', '{"content": "ok", "ttl_days": 1e400}',
    {"content": ["a"]}, {"content": {"a": 1}}, {1: 2},
]


@pytest.mark.parametrize("name", sorted(NAMES))
def test_tools_fuzz_never_raises(sess: memwarden.Session, name: str) -> None:
    for args in FUZZ_ARGS:
        if name == "memory_clear" and isinstance(args, dict) and args.get("confirm") is True:
            continue
        out = sess.call_tool(name, args)
        assert isinstance(out, dict), (name, args)
        json.dumps(out)
        if "error" in out:
            assert isinstance(out["message"], str)


@pytest.mark.parametrize("args", [{"content": "x\ud800"}, '{"content": "x\\ud800"}'])
def test_tools_lone_surrogate_is_error_dict(sess: memwarden.Session, args: Any) -> None:
    out = sess.call_tool("memory_save", args)
    json.dumps(out)
    assert out["status"] == "rejected" or "error" in out


@pytest.mark.parametrize("name", [["memory_save"], {"n": 1}])
def test_tools_non_string_name_is_error_dict(sess: memwarden.Session, name: Any) -> None:
    assert _is_error(sess.call_tool(name, {}), "unknown_tool")


def test_tools_results_json_serialisable(sess: memwarden.Session) -> None:
    outs = [
        sess.call_tool("memory_save", {"content": "User prefers tea 🍵 — strongly", "kind": "preference"}),
        sess.call_tool("memory_save", {"content": "Renew visa", "kind": "reminder",
                                       "due": "2030-05-01T10:00Z"}),
    ]
    outs += [sess.call_tool("memory_view", {"id": o["id"]}) for o in list(outs)]
    outs += [sess.call_tool("memory_view", {}), sess.call_tool("memory_search", {"query": "tea"})]
    for o in outs:
        assert json.loads(json.dumps(o)) == o
