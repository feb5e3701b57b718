"""Limits and behaviour an operator configures (R3, D1, P3, S1). Defaults are the safe ones."""

from __future__ import annotations

from dataclasses import dataclass, field

from memwarden.errors import InvalidInput
from memwarden.records import Kind
from memwarden.taint import TaintPolicy


@dataclass(frozen=True, slots=True)
class KindLimits:
    max_entries: int
    max_bytes: int
    retention_days: int = 30  # default TTL for records of this kind (1..365)
    # D1/T2: records held for review have a budget of their own per scope and kind (default: the same size as
    # the active one), so a tainted session filling the review queue never takes room from what is served.
    held_entries: int | None = None
    held_bytes: int | None = None

    def held_limits(self) -> tuple[int, int]:
        """(entries, bytes) held records of one scope and kind may take."""
        return (self.max_entries if self.held_entries is None else self.held_entries,
                self.max_bytes if self.held_bytes is None else self.held_bytes)


DEFAULT_LIMITS: dict[str, KindLimits] = {
    Kind.PREFERENCE: KindLimits(200, 64 * 1024),
    Kind.FACT: KindLimits(500, 256 * 1024),
    Kind.EPISODE: KindLimits(100_000, 256 * 1024 * 1024),
    Kind.PROCEDURE: KindLimits(100, 512 * 1024),
    Kind.REMINDER: KindLimits(200, 64 * 1024),
    Kind.TASK_STATE: KindLimits(200, 512 * 1024, retention_days=7),
}

MIN_RETENTION_DAYS = 1
MAX_RETENTION_DAYS = 365


@dataclass(frozen=True, slots=True)
class Policy:
    max_record_bytes: int = 10 * 1024  # R3
    max_metadata_bytes: int = 2 * 1024
    max_query_chars: int = 2_000  # search reads a query up to this many characters (its cost grows with length)
    max_list: int = 100_000  # view/list: at most this many records in one listing (the agent tool: 100)
    # A session whose writes the gate rejected this many times may not write again (operators are exempt);
    # each rejection keeps at most ``max_rejected_kept`` characters of the candidate in the audit log.
    max_rejections_per_session: int = 20
    max_rejected_kept: int = 1_000
    min_confidence: float = 0.7  # G5: model-extracted candidates below this are dropped
    limits: dict[str, KindLimits] = field(default_factory=lambda: dict(DEFAULT_LIMITS))
    block_entries: int = 10  # P3
    block_kinds: tuple[str, ...] = (Kind.PREFERENCE, Kind.FACT, Kind.TASK_STATE)  # P3 order of priority
    reminder_window_back_hours: float = 36.0  # P4: 1.5 days back
    reminder_window_forward_hours: float = 72.0  # P4: 3 days forward
    read_shared: bool = False  # S1: an agent reads user-level shared records only when this opts in
    default_sensitivity: str = "internal"
    default_clearance: str = "internal"
    # T3: opt-in only. When true, writes of untrusted sessions are recalled at once with approval "auto" (never
    # an operator's approval) and keep trust "untrusted"; procedures still wait for a person (T5).
    auto_approve_untrusted: bool = False
    # T4: automatic fact extraction (Session.extract_facts) is off unless an operator turns it on; it never runs
    # for a session that ingested untrusted content.
    extract_facts: bool = False
    taint: TaintPolicy = field(default_factory=TaintPolicy.from_env)  # T1: which tools taint a session

    def limits_for(self, kind: str) -> KindLimits:
        return self.limits.get(kind, DEFAULT_LIMITS[Kind(kind)])

    def retention_days(self, kind: str, ttl_days: int | None) -> int:
        days = self.limits_for(kind).retention_days if ttl_days is None else ttl_days
        if isinstance(days, bool) or not isinstance(days, int) or not (
            MIN_RETENTION_DAYS <= days <= MAX_RETENTION_DAYS
        ):
            raise InvalidInput(
                f"ttl_days must be a whole number of days from {MIN_RETENTION_DAYS} to {MAX_RETENTION_DAYS}"
            )
        return days
