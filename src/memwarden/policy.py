"""Limits and behaviour an operator configures (R3, D1, P3, S1). Defaults are the safe ones."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from memwarden.errors import InvalidInput
from memwarden.records import Kind, SourceType
from memwarden.taint import TaintPolicy

KEEP = "keep"  # R3: ttl_days / retention_days meaning "kept until deleted" (never expires, gc keeps it)
DEFAULT_KEEP_SOURCES: tuple[str, ...] = (SourceType.OPERATOR,)


@dataclass(frozen=True, slots=True)
class KindLimits:
    max_entries: int
    max_bytes: int
    # Default retention of this kind when a write gives no ttl_days: 1..365 days, or KEEP (the operator's choice,
    # so it holds for every source).
    retention_days: int | str = 30
    # R3: who may ask for ttl_days="keep" on this kind, by source type (R2). Default: the operator only (CLI
    # `save --ttl-days keep`, operator writes). Add "user" so an application can keep what a user asked it to
    # keep (`s.save(..., source="user", ttl_days="keep")`); "model" lets the agent's memory_save choose it.
    keep_sources: tuple[str, ...] = DEFAULT_KEEP_SOURCES
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
    # Issue 13: a host's report that its scope ingested untrusted content (``memwarden hook``, POST /v1/ingest)
    # taints every session of the scope open when it is made, and every session the scope starts within this
    # many seconds after it: the host's conversation may have read the page before memwarden's session began
    # (MCP over HTTP starts a new one after an idle hour). Longer over-taints, which is the safe direction.
    host_report_window_seconds: float = 86_400.0
    # Issue 11: the gate's semantic layer (gate/semantic.py, the ``e5`` extra): milliseconds per candidate, so
    # off unless asked for (``MEMWARDEN_GATE_SEMANTIC=1``); when on and the extra is missing, writes fail loudly.
    semantic_gate: bool = field(default_factory=lambda: _semantic_from_env())

    def limits_for(self, kind: str) -> KindLimits:
        return self.limits.get(kind, DEFAULT_LIMITS[Kind(kind)])

    def allow_keep(self, kind: str, *sources: str) -> Policy:
        """This policy with ``sources`` (source types: ``user``, ``model``, …) also allowed to ask for
        ``ttl_days="keep"`` on ``kind`` (R3), e.g. ``Policy().allow_keep("fact", "user")``."""
        limits = self.limits_for(Kind(kind))
        unknown = [s for s in sources if s not in SourceType.__members__.values()]
        if unknown:
            raise InvalidInput(f"unknown source type {unknown[0]!r}; one of {', '.join(SourceType)}")
        keep = tuple(dict.fromkeys((*limits.keep_sources, *sources)))
        return replace(self, limits={**self.limits, kind: replace(limits, keep_sources=keep)})

    def retention(self, kind: str, ttl_days: int | str | None, source: str) -> int | None:
        """Days a new ``kind`` record written by ``source`` with ``ttl_days`` is kept, or ``None`` for kept until
        deleted (R3). ``ttl_days=None`` takes the kind's ``retention_days``; ``"keep"`` is allowed only for the
        sources the kind's ``keep_sources`` names; anything else is a whole number from 1 to 365."""
        limits = self.limits_for(kind)
        days = limits.retention_days if ttl_days is None else ttl_days
        if days == KEEP:
            if ttl_days is not None and source not in limits.keep_sources:
                allowed = ", ".join(limits.keep_sources) or "no source"
                raise InvalidInput(
                    f"ttl_days 'keep' (until deleted) is not allowed for a {kind} written by {str(source)[:40]}: "
                    f"this store's policy lets {allowed} keep a {kind} (KindLimits.keep_sources); give a number "
                    f"of days from {MIN_RETENTION_DAYS} to {MAX_RETENTION_DAYS}"
                )
            return None
        if isinstance(days, bool) or not isinstance(days, int) or not (
            MIN_RETENTION_DAYS <= days <= MAX_RETENTION_DAYS
        ):
            raise InvalidInput(
                f"ttl_days must be a whole number of days from {MIN_RETENTION_DAYS} to {MAX_RETENTION_DAYS}, "
                f"or '{KEEP}' where the policy allows it"
            )
        return days


def _semantic_from_env() -> bool:
    """``MEMWARDEN_GATE_SEMANTIC``: 1/true/yes/on turns the semantic layer on; unset or 0/false/no/off leaves it
    off; anything else is an error (a typo must not silently leave a security layer off)."""
    import os

    value = os.environ.get("MEMWARDEN_GATE_SEMANTIC", "").strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("", "0", "false", "no", "off"):
        return False
    raise InvalidInput(f"MEMWARDEN_GATE_SEMANTIC={value[:20]!r} is not understood: use 1 (on) or 0 (off)")
