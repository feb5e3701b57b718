"""RFC 9457 problem details for the REST API: every memwarden error and every tool error dict becomes one
``application/problem+json`` body with ``type``, ``title``, ``status``, ``detail`` and a stable ``code``.

This module only translates; it decides nothing about memories. It imports no web framework, so the mapping is
testable on its own and the server module stays small.
"""

from __future__ import annotations

from typing import Any

from memwarden.errors import MemwardenError

PROBLEM_TYPE = "https://memwarden.dev/problems/"
MEDIA_TYPE = "application/problem+json"

# stable code → (HTTP status, title)
CODES: dict[str, tuple[int, str]] = {
    "invalid_input": (400, "Invalid input"),
    "unauthorized": (401, "Unauthorized"),
    "forbidden": (403, "Forbidden"),
    "held_for_review": (403, "Held for review"),
    "not_found": (404, "Not found"),
    "method_not_allowed": (405, "Method not allowed"),
    "request_timeout": (408, "Request timeout"),
    "version_conflict": (409, "Version conflict"),
    "capacity_exceeded": (409, "Capacity exceeded"),
    "payload_too_large": (413, "Payload too large"),
    "gate_rejected": (422, "Rejected by the write gate"),
    "rate_limited": (429, "Rate limited"),
    "internal": (500, "Internal error"),
    "integrity": (503, "Integrity check failed"),
}

# memwarden's error codes (errors.py, tools.py) → the stable REST code
_ALIASES = {
    "identity_required": "invalid_input",
    "invalid_arguments": "invalid_input",
    "unknown_tool": "not_found",
    "unknown_session": "not_found",
    "capacity": "capacity_exceeded",
    "rollback": "integrity",
    "key": "internal",
    "provider_conflict": "internal",
    "provider_error": "internal",
    "semantic_gate_unavailable": "internal",  # the server was told to run a gate layer it cannot load
    "unsupported_url": "invalid_input",
    "error": "internal",
}


def stable_code(code: str) -> str:
    code = _ALIASES.get(code, code)
    return code if code in CODES else "internal"


def problem(code: str, detail: str, /, **extra: Any) -> dict[str, Any]:
    """One problem document. ``extra`` members (RFC 9457 extensions) never override the standard ones."""
    code = stable_code(code)
    status, title = CODES[code]
    out: dict[str, Any] = {k: v for k, v in extra.items() if v is not None}
    out.update({"type": PROBLEM_TYPE + code, "title": title, "status": status, "detail": detail, "code": code})
    return out


def from_error(exc: MemwardenError) -> dict[str, Any]:
    """The problem for a memwarden error; its extra fields (a capacity error's entries, a conflict's versions)
    are kept as extension members."""
    return from_dict(exc.to_dict())


def from_dict(err: dict[str, Any]) -> dict[str, Any]:
    """The problem for an error dict as :meth:`MemwardenError.to_dict` and ``Session.call_tool`` return them."""
    code = str(err.get("error", "internal"))
    extra = {k: v for k, v in err.items() if k not in ("error", "message")}
    message = str(err.get("message", ""))
    if stable_code(code) == "internal" and code not in ("internal",):
        extra = {}  # nothing from an unexpected error reaches the caller but its one-line message
    return problem(code, message or CODES[stable_code(code)][1], **extra)
