"""Typed memory records (R1) with immutable provenance (R2). ``iso`` (re-exported from
:mod:`memwarden.timevalues`) renders their times and never raises."""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from memwarden.timevalues import NEVER_EXPIRES, iso, iso_expiry


class Kind(StrEnum):
    PREFERENCE = "preference"
    FACT = "fact"
    EPISODE = "episode"
    PROCEDURE = "procedure"
    REMINDER = "reminder"
    TASK_STATE = "task_state"


class SourceType(StrEnum):
    USER = "user"
    MODEL = "model"
    TOOL = "tool"
    IMPORT = "import"
    OPERATOR = "operator"
    CONSOLIDATION = "consolidation"


class Trust(StrEnum):
    TRUSTED = "trusted"
    UNTRUSTED = "untrusted"


class Status(StrEnum):
    ACTIVE = "active"  # served to agents
    REVIEW = "review"  # stored for audit, never replayed; waits for an operator (G6, T2)


SENSITIVITY_LEVELS: tuple[str, ...] = ("public", "internal", "confidential", "secret")


def sensitivity_level(name: str | int) -> int:
    """Map a sensitivity/clearance name to its rank (``public`` < ``internal`` < ``confidential`` < ``secret``)."""
    if isinstance(name, int) and not isinstance(name, bool) and 0 <= name < len(SENSITIVITY_LEVELS):
        return name
    if isinstance(name, str) and name in SENSITIVITY_LEVELS:
        return SENSITIVITY_LEVELS.index(name)
    from memwarden.errors import InvalidInput

    raise InvalidInput(f"sensitivity must be one of {', '.join(SENSITIVITY_LEVELS)}; got {name!r}")


def content_hash(content: str) -> str:
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


def now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True, slots=True)
class Provenance:
    """Written by application code from the session, never from caller content (R2)."""

    tenant: str
    user: str
    agent: str  # "" = shared
    session_id: str
    source_type: str
    sources: tuple[str, ...] = ()
    trust: str = Trust.TRUSTED
    approval: str = "none"  # none | operator:<id> | auto


@dataclass(frozen=True, slots=True)
class Record:
    id: str
    version: int
    kind: str
    content: str
    content_hash: str
    metadata: dict[str, Any]
    confidence: float
    sensitivity: int
    created_at: int
    updated_at: int
    expires_at: int
    due_at: int | None
    status: str
    derived_from: tuple[str, ...]
    provenance: Provenance
    signature: str = field(default="", compare=False)

    @property
    def kept_until_deleted(self) -> bool:
        """R3: kept until deleted (``ttl_days="keep"``): it never expires, ``gc`` never purges it."""
        return self.expires_at == NEVER_EXPIRES

    @property
    def size_bytes(self) -> int:
        return len(self.content.encode("utf-8"))

    @property
    def sensitivity_name(self) -> str:
        return SENSITIVITY_LEVELS[self.sensitivity]

    def preview(self, width: int = 80) -> str:
        flat = " ".join(self.content.split())
        return flat if len(flat) <= width else flat[: width - 1] + "…"

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form (for tools, export and the CLI)."""
        p = self.provenance
        return {
            "id": self.id,
            "version": self.version,
            "kind": self.kind,
            "content": self.content,
            "content_hash": self.content_hash,
            "metadata": self.metadata,
            "confidence": self.confidence,
            "sensitivity": self.sensitivity_name,
            "created_at": iso(self.created_at),
            "updated_at": iso(self.updated_at),
            "expires_at": iso_expiry(self.expires_at),  # None: kept until deleted
            "due_at": iso(self.due_at),
            "status": self.status,
            "derived_from": list(self.derived_from),
            "provenance": {
                "tenant": p.tenant,
                "user": p.user,
                "agent": p.agent or None,
                "session_id": p.session_id,
                "source_type": p.source_type,
                "sources": list(p.sources),
                "trust": p.trust,
                "approval": p.approval,
            },
        }
