"""RFC 9457 mapping: every memwarden error code has a stable REST code and status; nothing else leaks."""

from __future__ import annotations

import pytest

import memwarden.rest  # noqa: F401  (its error classes are part of the mapping too)
from memwarden import errors
from memwarden.auth import AuthError
from memwarden.problems import CODES, from_dict, from_error

STABLE = {"gate_rejected", "held_for_review", "capacity_exceeded", "version_conflict", "not_found", "forbidden",
          "invalid_input", "rate_limited", "unauthorized"}


def _subclasses(cls: type) -> list[type]:
    out = []
    for sub in cls.__subclasses__():
        out += [sub, *_subclasses(sub)]
    return out


def test_stable_codes_exist() -> None:
    assert set(CODES) >= STABLE


@pytest.mark.parametrize("cls", [c for c in _subclasses(errors.MemwardenError) if c.__module__.startswith("memwarden")])
def test_every_memwarden_error_maps_to_a_documented_code(cls: type[errors.MemwardenError]) -> None:
    if cls is errors.VersionConflict:
        exc: errors.MemwardenError = errors.VersionConflict("m1", 1, 2)
    elif cls is errors.CapacityError:
        exc = errors.CapacityError("fact", "3 entries", [{"id": "m1", "bytes": 3, "preview": "abc"}])
    elif "retry_after" in getattr(getattr(cls.__init__, "__code__", None), "co_varnames", ()):  # the server's
        exc = cls("one clear line", retry_after=5)  # type: ignore[call-arg]
    else:
        exc = cls("one clear line")
    body = from_error(exc)
    assert set(body) >= {"type", "title", "status", "detail", "code"} and body["code"] in CODES
    assert body["type"].endswith("/" + body["code"]) and body["status"] == CODES[body["code"]][0]
    expected = {"invalid_input": "invalid_input", "not_found": "not_found", "version_conflict": "version_conflict",
                "capacity": "capacity_exceeded", "held_for_review": "held_for_review", "forbidden": "forbidden",
                "rate_limited": "rate_limited", "unauthorized": "unauthorized", "unknown_session": "not_found",
                "identity_required": "invalid_input", "integrity": "integrity", "rollback": "integrity"}
    if exc.code in expected:
        assert body["code"] == expected[exc.code]
    # 500 only for what is wrong with the server itself (keys, providers, a gate layer it was told to run and
    # cannot load), never for what the caller sent
    assert body["status"] != 500 or exc.code in ("key", "provider_conflict", "error", "semantic_gate_unavailable")


def test_extensions_kept_and_never_override_standard_members() -> None:
    body = from_error(errors.VersionConflict("m1", 1, 2))
    assert body["status"] == 409 and body["expected_version"] == 1 and body["actual_version"] == 2
    cap = from_error(errors.CapacityError("fact", "3 entries", [{"id": "m1", "bytes": 3, "preview": "abc"}]))
    assert cap["code"] == "capacity_exceeded" and cap["entries"][0]["id"] == "m1"
    forged = from_dict({"error": "forbidden", "message": "no", "status": 200, "code": "ok", "type": "x"})
    assert forged["status"] == 403 and forged["code"] == "forbidden" and forged["type"].endswith("/forbidden")


def test_unexpected_error_dicts_keep_nothing_but_a_generic_problem() -> None:
    body = from_dict({"error": "something_new", "message": "boom", "trace": "File /srv/x.py"})
    assert body["status"] == 500 and body["code"] == "internal" and "trace" not in body
    assert from_error(AuthError("unknown token"))["status"] == 401
