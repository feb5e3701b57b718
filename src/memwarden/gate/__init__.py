"""The write gate (G1, G6): every path that persists content runs ``Gate.check`` first.

A gate is a list of scanners. Each scanner looks at a :class:`Candidate` and returns rule hits; the verdict is
the strictest action among them (``reject`` > ``review`` > ``accept``). Scanners can only add hits, so adding a
scanner can only make verdicts stricter.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from memwarden.policy import Policy

log = logging.getLogger("memwarden.gate")

ACCEPT, REVIEW, REJECT = "accept", "review", "reject"
_RANK = {ACCEPT: 0, REVIEW: 1, REJECT: 2}


@dataclass(frozen=True, slots=True)
class Candidate:
    content: Any
    kind: Any = "fact"
    source: str = "model"
    metadata: Any = None
    confidence: Any = 1.0


@dataclass(frozen=True, slots=True)
class RuleHit:
    rule: str  # stable rule id, e.g. "record.too_large"
    action: str  # review | reject
    message: str  # why, safe to show to the agent (never echoes secrets)
    span: tuple[int, int] | None = None  # character span in the content

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "action": self.action, "message": self.message,
                "span": list(self.span) if self.span else None}


@dataclass(frozen=True, slots=True)
class Verdict:
    verdict: str
    kind: str
    hits: tuple[RuleHit, ...] = field(default_factory=tuple)

    @property
    def rules(self) -> list[str]:
        return [h.rule for h in self.hits]

    @property
    def accepted(self) -> bool:
        return self.verdict == ACCEPT

    def reason(self) -> str:
        return "; ".join(f"{h.rule}: {h.message}" for h in self.hits) or "accepted"

    def to_dict(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "kind": self.kind, "rules": self.rules,
                "spans": [h.span and list(h.span) for h in self.hits],
                "hits": [h.to_dict() for h in self.hits]}


Scanner = Callable[[Candidate, Policy], Iterable[RuleHit]]


class Gate:
    """Runs every scanner; record-level checks first, and content scanners only on well-formed records."""

    def __init__(self, policy: Policy | None = None, scanners: Sequence[Scanner] | None = None) -> None:
        from memwarden.gate.record_rules import RECORD_SCANNERS

        self.policy = policy or Policy()
        self._record_scanners: tuple[Scanner, ...] = tuple(RECORD_SCANNERS)
        self._scanners: list[Scanner] = list(scanners or [])

    def add_scanner(self, scanner: Scanner) -> None:
        """Extension point: an operator's scanner can only add hits, so it can only make verdicts stricter."""
        self._scanners.append(scanner)

    def check(self, candidate: Candidate) -> Verdict:
        hits: list[RuleHit] = []
        for scan in self._record_scanners:
            hits.extend(scan(candidate, self.policy))
        if not hits:  # content scanners need a well-formed string
            for scan in self._scanners:
                hits.extend(_run_scanner(scan, candidate, self.policy))
        worst = max((_RANK[h.action] for h in hits), default=0)
        verdict = next(v for v, r in _RANK.items() if r == worst)
        kind = candidate.kind if isinstance(candidate.kind, str) else "invalid"
        return Verdict(verdict, kind, tuple(hits))


def _run_scanner(scan: Scanner, candidate: Candidate, policy: Policy) -> list[RuleHit]:
    """Fail closed: a scanner that raises, or returns something that is not a review/reject hit, rejects."""
    name = getattr(scan, "__name__", type(scan).__name__)
    try:
        hits = list(scan(candidate, policy))
    except Exception as exc:
        log.exception("gate scanner %s failed", name)
        return [RuleHit("gate.scanner_error", REJECT, f"scanner {name} failed ({type(exc).__name__}); "
                                                       "the candidate is rejected to fail closed")]
    bad = [h for h in hits if not isinstance(h, RuleHit) or h.action not in (REVIEW, REJECT)]
    if bad:
        return [RuleHit("gate.scanner_error", REJECT, f"scanner {name} returned an invalid hit; "
                                                       "the candidate is rejected to fail closed")]
    return hits


_default_gate: Gate | None = None


def scan(text: Any, source: str = "model", kind: str = "fact", *, gate: Gate | None = None) -> Verdict:
    """Gate verdict for a candidate without storing anything (``memwarden.scan``)."""
    global _default_gate
    if gate is None:
        if _default_gate is None:
            _default_gate = Gate()
        gate = _default_gate
    return gate.check(Candidate(content=text, kind=kind, source=source))
