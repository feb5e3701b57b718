"""The write gate (G1–G7): every path that persists content runs ``Gate.check`` first.

A gate runs the record-level checks (:mod:`.record_rules`), then — on a well-formed record — the built-in content
rules (:mod:`.content`: normalisation and de-obfuscation, rule families, secrets, encoded payloads, the multilingual
lexicon, the learned layer, session references, confidence), then any scanners an operator added. What a
built-in hit does depends on the candidate's (kind, source) row in :mod:`.tiers` (G8): ``reject``, ``review``
(G6: stored, never replayed) or ``accept`` (kept in :attr:`Verdict.notes`, not blocking). The verdict is the
strictest action among the remaining hits (``reject`` > ``review`` > ``accept``); operator scanners can only add
hits, so they can only make verdicts stricter. A ``strip`` hit (a session-scoped reference, G4) does not block
the write: its span is removed from the content that is stored.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from memwarden.policy import Policy

log = logging.getLogger("memwarden.gate")

ACCEPT, REVIEW, REJECT, STRIP = "accept", "review", "reject", "strip"
_RANK = {ACCEPT: 0, STRIP: 0, REVIEW: 1, REJECT: 2}


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
    action: str  # review | reject | strip
    message: str  # why, safe to show to the agent (never echoes secrets)
    span: tuple[int, int] | None = None  # character span in the content
    category: str = "acts"  # what the matched text would do (gate/tiers.py): acts | directs | style | learned
    firm: bool = True  # an explicit rule matched (False: only a heuristic did; G6 holds such calls for review)

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "action": self.action, "message": self.message,
                "span": list(self.span) if self.span else None, "category": self.category, "firm": self.firm}


@dataclass(frozen=True, slots=True)
class Verdict:
    verdict: str
    kind: str  # G2 class: preference | fact | task_state | rejectable (the caller's kind when not classified)
    hits: tuple[RuleHit, ...] = field(default_factory=tuple)
    content: str | None = None  # what to store when the gate rewrote the candidate (G4 strip); None = as given
    redacted: str | None = None  # the candidate with secrets masked, for logs (never log the raw secret)
    rules_version: str = ""
    tier: str = ""  # the (kind, source) row that judged it (gate/tiers.py)
    notes: tuple[RuleHit, ...] = ()  # hits this tier does not block on (e.g. a request recorded in an episode)

    @property
    def certainty(self) -> str:
        """``certain`` for an accept without hits and for a reject; ``ambiguous`` for a review (G6: the gate
        could not call it with confidence, so it is held for an operator instead of being lost)."""
        return "ambiguous" if self.verdict == REVIEW else "certain"

    @property
    def rules(self) -> list[str]:
        return [h.rule for h in self.hits]

    @property
    def accepted(self) -> bool:
        return self.verdict == ACCEPT

    def reason(self) -> str:
        blocking = [h for h in self.hits if h.action != STRIP] or list(self.hits)
        text = "; ".join(f"{h.rule}: {h.message}" for h in blocking) or "accepted"
        if self.verdict == REVIEW:
            text = f"the gate could not call it with confidence ({text})"
        return text

    def to_dict(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "certainty": self.certainty, "kind": self.kind, "tier": self.tier,
                "rules": self.rules, "spans": [h.span and list(h.span) for h in self.hits],
                "hits": [h.to_dict() for h in self.hits], "notes": [h.to_dict() for h in self.notes],
                "rules_version": self.rules_version}


Scanner = Callable[[Candidate, Policy], Iterable[RuleHit]]


class Gate:
    """Runs every scanner; record-level checks first, and content scanners only on well-formed records."""

    def __init__(self, policy: Policy | None = None, scanners: Sequence[Scanner] | None = None) -> None:
        self.policy = policy or Policy()
        self._scanners: list[Scanner] = list(scanners or [])

    def add_scanner(self, scanner: Scanner) -> None:
        """Extension point: an operator's scanner can only add hits, so it can only make verdicts stricter."""
        self._scanners.append(scanner)

    def check(self, candidate: Candidate) -> Verdict:
        SCANNER, record_hits, RULES_VERSION, tier_for, (SecretHit, redact, SessionRef, strip) = _content()
        tier = tier_for(candidate.kind, candidate.source)
        hits: list[RuleHit] = record_hits(candidate, self.policy)
        cleaned = False
        if hits and tier.name == "record" and all(h.rule == "record.control_chars" for h in hits):
            # an episode is a record of what was said: stray control characters (mojibake, terminal colour codes)
            # are removed, the turn is kept
            from memwarden.gate.record_rules import without_controls

            candidate = Candidate(without_controls(candidate.content), candidate.kind, candidate.source,
                                  candidate.metadata, candidate.confidence)
            hits = record_hits(candidate, self.policy)
            cleaned = not hits
            if cleaned:
                hits = [RuleHit("record.control_chars", STRIP, "control characters were removed before saving")]
        if hits and not cleaned:  # malformed record: content rules need a well-formed string
            return Verdict(REJECT, "rejectable", tuple(hits), rules_version=RULES_VERSION, tier=tier.name)
        analysis = SCANNER.analyze(candidate, self.policy, tier)
        hits += analysis.hits
        for scan in self._scanners:
            hits.extend(_run_scanner(scan, candidate, self.policy))
        worst = max((_RANK[h.action] for h in hits), default=0)
        verdict = REJECT if worst == 2 else REVIEW if worst == 1 else ACCEPT
        text: str = candidate.content
        secrets = [SecretHit(h.rule.removeprefix("secret."), h.span) for h in hits
                   if h.rule.startswith("secret.") and h.span]
        redacted = redact(text, secrets) if secrets else None
        refs = [SessionRef(h.rule.removeprefix("session_ref."), h.span) for h in hits if h.action == STRIP and h.span]
        content = strip(text, refs) if refs and verdict != REJECT else text if cleaned else None
        kind = "rejectable" if verdict == REJECT else analysis.kind
        return Verdict(verdict, kind, tuple(hits), content, redacted, RULES_VERSION, tier.name,
                       tuple(analysis.notes))


def _run_scanner(scan: Scanner, candidate: Candidate, policy: Policy) -> list[RuleHit]:
    """Fail closed: a scanner that raises, or returns something that is not a review/reject hit, rejects."""
    name = getattr(scan, "__name__", type(scan).__name__)
    try:
        hits = list(scan(candidate, policy))
    except Exception as exc:
        log.exception("gate scanner %s failed", name)
        return [RuleHit("gate.scanner_error", REJECT, f"scanner {name} failed ({type(exc).__name__}); "
                                                       "the candidate is rejected to fail closed")]
    bad = [h for h in hits if not isinstance(h, RuleHit) or h.action not in (REVIEW, REJECT)]  # no STRIP
    if bad:
        return [RuleHit("gate.scanner_error", REJECT, f"scanner {name} returned an invalid hit; "
                                                       "the candidate is rejected to fail closed")]
    return hits


@functools.cache
def _content() -> tuple[Any, Any, str, Any, tuple[Any, Any, Any, Any]]:
    """The content scanner, record rules, rules version, tier table and redaction helpers, imported once on first
    use (they import this module)."""
    from memwarden.gate.content import SCANNER
    from memwarden.gate.record_rules import record_hits
    from memwarden.gate.rules import RULES_VERSION
    from memwarden.gate.secrets import SecretHit, redact
    from memwarden.gate.session_refs import SessionRef, strip
    from memwarden.gate.tiers import tier_for

    return SCANNER, record_hits, RULES_VERSION, tier_for, (SecretHit, redact, SessionRef, strip)


_default_gate: Gate | None = None


def scan(text: Any, source: str = "model", kind: str = "fact", *, gate: Gate | None = None) -> Verdict:
    """Gate verdict for a candidate without storing anything (``memwarden.scan``). ``source`` is one of
    ``tiers.SOURCES`` (who said it; the gate is sized to it, G8): an unknown one is an error, as on ``save``."""
    from memwarden.errors import InvalidInput
    from memwarden.gate.tiers import SOURCES

    if source not in SOURCES:
        raise InvalidInput(f"unknown source {str(source)[:40]!r}: use one of {', '.join(SOURCES)}")
    global _default_gate
    if gate is None:
        if _default_gate is None:
            _default_gate = Gate()
        gate = _default_gate
    return gate.check(Candidate(content=text, kind=kind, source=source))
