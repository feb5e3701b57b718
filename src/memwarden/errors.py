"""Errors raised by memwarden. Every error has a stable ``code`` and a one-line message fit for a person."""

from __future__ import annotations

from typing import Any


class MemwardenError(Exception):
    """Base class: ``code`` is stable for programs, ``str(err)`` is one clear line for people."""

    code = "error"

    def to_dict(self) -> dict[str, Any]:
        return {"error": self.code, "message": str(self)}


class InvalidInput(MemwardenError, ValueError):
    code = "invalid_input"


class IdentityRequired(MemwardenError):
    """S2: a write or read without a bound tenant/user identity."""

    code = "identity_required"


class NotFound(MemwardenError, KeyError):
    code = "not_found"

    def __str__(self) -> str:  # KeyError quotes its message; we want plain text
        return str(self.args[0]) if self.args else "not found"


class VersionConflict(MemwardenError):
    """I2: the record changed since the caller read it."""

    code = "version_conflict"

    def __init__(self, memory_id: str, expected: int, actual: int | None) -> None:
        self.memory_id, self.expected, self.actual = memory_id, expected, actual
        now = "it was removed" if actual is None else f"it is now at version {actual}"
        super().__init__(
            f"memory {memory_id} changed since you read it: expected version {expected}, {now}; "
            "view it again and retry"
        )

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "id": self.memory_id, "expected_version": self.expected,
                "actual_version": self.actual}


class CapacityError(MemwardenError):
    """D1: the scope is full for this kind; lists every entry so the caller can free space."""

    code = "capacity"

    def __init__(self, kind: str, limit: str, entries: list[dict[str, Any]], *, held: bool = False) -> None:
        self.kind, self.limit, self.entries, self.held = kind, limit, entries, held
        if held:  # the review queue's own budget: only an operator can make room in it
            super().__init__(
                f"too many memories of kind '{kind}' are held for operator review ({limit}); nothing more can be "
                "held until an operator reviews them (`memwarden review list`)"
            )
            return
        super().__init__(
            f"memory is full for kind '{kind}' ({limit}); remove or replace one of the "
            f"{len(entries)} entries listed, then retry"
        )

    def to_dict(self) -> dict[str, Any]:
        out = {**super().to_dict(), "kind": self.kind, "limit": self.limit, "entries": self.entries}
        if self.held:
            out["held"] = True
        return out


class HeldForReview(MemwardenError):
    """T2: the record exists but waits for an operator; agents may not read it."""

    code = "held_for_review"


class IntegrityError(MemwardenError):
    """I1/T6: a record or the audit chain failed verification; nothing is served."""

    code = "integrity"


class RollbackDetected(IntegrityError):
    """I5: the store is behind (or off) the anchor kept outside it — an older copy of the file, or a truncated
    audit log. Nothing is read from it or written to it until an operator accepts it (audited)."""

    code = "rollback"


class KeyError_(MemwardenError):
    """The signing key is missing, unreadable, too open, or not the key this database was signed with."""

    code = "key"


class ProviderConflict(MemwardenError):
    """P5: a second external memory provider was registered."""

    code = "provider_conflict"


class UnsupportedURL(MemwardenError):
    code = "unsupported_url"


class Forbidden(MemwardenError):
    """T3/S4: the caller may not do this (an agent approving, an untrusted session deleting, a wrong-role or
    wrong-tenant credential). Every refusal is a security event in the audit log."""

    code = "forbidden"


class RateLimited(MemwardenError):
    """A session reached a resource bound (e.g. too many writes rejected by the gate): refused for the rest of
    the session, so an agent in a loop cannot grow the audit log or the store without limit."""

    code = "rate_limited"


class UnknownSession(MemwardenError):
    """T6: a read or write names a session this store never started, or one that has ended: refused."""

    code = "unknown_session"
