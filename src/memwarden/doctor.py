"""``memwarden doctor``: prove the store is sound (D3, I1, A1). Any finding means a non-zero exit.

Checks: first the engine's own (``Engine.check``; SQLite: store/sqlite/checks.py) — its integrity check; zombies
(index or history rows whose record is gone, links to deleted records or missing links, usage counters and sizes
that disagree with the rows); injected links (not backed by the record's signed ``derived_from``, or across
tenants or users) —, then every record's signature and its agreement with verified audit history (no rollback to
an old signed version, no deleted row put back, no record vouched for by a forged, edited or deleted audit row);
the audit hash chain and its head anchor; the store against its anchor outside the database (an older copy of
the file, a truncated audit log: I5); settings and token rows that fail verification (or a revoked token put back
as live), an embedder setting naming an endpoint the process configuration does not, and files or a data
directory that group or others can read (``Engine.file_problems``).
"""

from __future__ import annotations

from dataclasses import dataclass

from memwarden import audit, auth
from memwarden.service import MemoryService
from memwarden.store.base import Order, View


@dataclass(frozen=True, slots=True)
class Finding:
    check: str  # sqlite | zombie | link | signature | audit | usage | anchor | settings | token | files
    subject: str  # memory id, table or audit seq
    problem: str

    def __str__(self) -> str:
        return f"[{self.check}] {self.subject}: {self.problem}"


def run(service: MemoryService) -> list[Finding]:
    vectors = service.retrieval.embedder.dim > 0  # with no embedder configured, no record has a vector
    findings = [Finding(*f) for f in service.backend.check(vectors=vectors)]  # the engine's own checks
    with service.backend.read() as db:
        rows = db.records(View.unscoped(), Order.ID)
    for mid, why in service.refused(rows):
        findings.append(Finding("signature", mid, why))
    for problem in audit.verify(service.backend, service.signer):
        findings.append(Finding("audit", f"seq {problem.seq}", problem.problem))
    if service.rollback is not None:
        findings.append(Finding("anchor", service.location, service.rollback + "; if this copy was put back on"
                                " purpose: `memwarden audit accept-restore --reason …`"))
    if service.anchor.error is not None:
        findings.append(Finding("anchor", str(service.anchor.file.path), service.anchor.error))
    findings += _settings_tokens_files(service)
    return findings


def _settings_tokens_files(service: MemoryService) -> list[Finding]:
    """I4, T3, I6: settings and token rows that fail verification, an embedder setting naming an endpoint this
    process does not, and files others can read."""
    out: list[Finding] = []
    with service.backend.read() as conn:
        out += [Finding("settings", name, why) for name, why in service.settings.check(conn)]
    if service.retrieval.refused_embedder:
        out.append(Finding("settings", "embedder", service.retrieval.refused_embedder))
    out += [Finding("token", subject, why) for subject, why in auth.check_rows(service)]
    out += [Finding("files", path, why) for path, why in service.backend.file_problems()]
    return out
