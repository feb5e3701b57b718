"""The review queue (T2, T3): what untrusted sessions wanted to remember, and the operator's decision on it.

Held records are stored for audit and never recalled. Only an operator credential (:mod:`memwarden.auth`) can
list, show, promote or reject them, and only within its tenant (and user, if the token is narrowed to one).
Promotion goes through the one write path (:meth:`MemoryService.write` with ``approval``): the gate runs on the
content again, the record becomes active, keeps ``trust=untrusted`` and records ``approval=operator:<name>``.
Rejection deletes the record everywhere and leaves a tombstone. Every refused attempt — an agent token, another
tenant's operator — is a security event in the audit log.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memwarden import audit
from memwarden.auth import OPERATOR, Principal
from memwarden.errors import Forbidden, IntegrityError, InvalidInput, NotFound
from memwarden.ids import new_id
from memwarden.records import SENSITIVITY_LEVELS, Record, SourceType, Status, now_ms
from memwarden.scope import Scope
from memwarden.service import Checked, Context, MemoryService, WriteResult
from memwarden.store.base import REVIEW, Order, View

OPERATOR_CLEARANCE = len(SENSITIVITY_LEVELS) - 1


@dataclass(frozen=True, slots=True)
class HeldItem:
    """One held record and why it was held (from its audit ``held`` event)."""

    checked: Checked
    why: str = ""
    taint: tuple[str, ...] = ()
    rules: tuple[str, ...] = ()
    revises: str | None = None
    current: Record | None = field(default=None, repr=False)  # the record a proposed revision would replace

    @property
    def id(self) -> str:
        return self.checked.id

    @property
    def record(self) -> Record | None:
        return self.checked.record

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "verified": self.checked.ok, "refused": self.checked.refused,
                               "why": self.why, "taint": list(self.taint), "rules": list(self.rules),
                               "revises": self.revises}
        if self.record is not None:
            out["memory"] = self.record.to_dict()
        if self.current is not None:
            out["current"] = {"id": self.current.id, "version": self.current.version,
                              "content": self.current.content}
        return out


def _ctx(principal: Principal, scope: Scope) -> Context:
    return Context(scope, session_id=new_id(), source_type=SourceType.OPERATOR, actor=principal.actor,
                   clearance=OPERATOR_CLEARANCE)


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def _require_operator(service: MemoryService, principal: Principal, action: str, memory_id: str | None,
                      scope: Scope | None = None) -> None:
    """Refuse (and audit) a non-operator, or an operator of another tenant or user."""
    where = scope or Scope(principal.tenant, principal.user or "*", principal.agent)
    ctx = Context(where, session_id=new_id(), source_type=SourceType.OPERATOR, actor=principal.actor)
    if principal.role != OPERATOR:
        service.refuse(ctx, "promotion_refused" if action in ("promote", "reject") else "review_refused",
                       memory_id, via="review",
                       why=f"{action} needs an operator credential; {_article(principal.role)} {principal.role} token"
                           f" cannot {action} memories (T3)")
    if scope is not None and not principal.may_review(scope.tenant, scope.user):
        service.refuse(ctx, "review_refused", memory_id, via="review",
                       why=f"operator {principal.name} may not review memories of {scope.tenant}/{scope.user}")


def _held_details(service: MemoryService, memory_id: str) -> dict[str, Any]:
    with service.backend.read() as db:
        rows = db.audit_log(events=("held",), memory_id=memory_id, limit=1)
    return audit.details_of(rows[0]) if rows else {}


def _item(service: MemoryService, checked: Checked) -> HeldItem:
    d = _held_details(service, checked.id)
    rec = checked.record
    revises = rec.metadata.get("revises") if rec is not None and isinstance(rec.metadata, dict) else None
    current = None
    if isinstance(revises, str):
        try:
            found = service.operator_check(revises)
            current = found.record if found.ok else None
        except NotFound:
            current = None
    return HeldItem(checked, why=str(d.get("why", "")), taint=tuple(str(t) for t in d.get("taint", []) or ()),
                    rules=tuple(str(r) for r in d.get("rules", []) or ()),
                    revises=revises if isinstance(revises, str) else None, current=current)


def queue(service: MemoryService, principal: Principal, *, user: str | None = None,
          limit: int = 200) -> list[HeldItem]:
    """Held records of the operator's tenant (its user, if narrowed; else ``user`` or everyone), oldest first."""
    _require_operator(service, principal, "list the review queue", None)
    if principal.user is not None and user not in (None, principal.user):
        _require_operator(service, principal, "list the review queue", None, Scope(principal.tenant, user or "*"))
    who = principal.user or user
    view = View(principal.tenant, who, status=REVIEW, live_at=now_ms())
    with service.backend.read() as db:
        ids = [str(r[0]) for r in db.records(view, Order.CREATED, limit)]
    return [_item(service, service.operator_check(mid)) for mid in ids]


def _load(service: MemoryService, principal: Principal, memory_id: str, action: str) -> Checked:
    _require_operator(service, principal, action, memory_id)
    try:
        checked = service.operator_check(memory_id)
    except NotFound:
        raise NotFound(f"no memory {memory_id} held for review") from None
    rec = checked.record
    if rec is None:
        raise IntegrityError(f"memory {memory_id} is malformed ({checked.refused}); reject it")
    p = rec.provenance
    _require_operator(service, principal, action, memory_id, Scope(p.tenant, p.user, p.agent or None))
    if rec.status != Status.REVIEW:
        raise InvalidInput(f"memory {memory_id} is not held for review (it is {rec.status})")
    if rec.expires_at <= now_ms():
        raise NotFound(f"memory {memory_id} has expired; `memwarden gc` purges it")
    return checked


def show(service: MemoryService, principal: Principal, memory_id: str) -> HeldItem:
    return _item(service, _load(service, principal, memory_id, "show a held memory"))


def promote(service: MemoryService, principal: Principal, memory_id: str, *, note: str | None = None,
            replace_current: bool = False) -> WriteResult:
    """Approve a held record: it is recalled from the next session on, still marked untrusted, with this
    operator as approver. With ``replace_current``, a proposed revision also removes the record it revises."""
    checked = _load(service, principal, memory_id, "promote")
    if not checked.ok:
        raise IntegrityError(f"memory {memory_id} failed verification ({checked.refused}); it cannot be promoted; "
                             "reject it")
    rec = checked.record
    assert rec is not None
    item = _item(service, checked)
    replaces = None
    if replace_current:
        if item.revises is None:
            raise InvalidInput(f"memory {memory_id} does not revise another memory; promote it without --replace")
        if item.current is None:
            raise InvalidInput(f"the memory it revises ({item.revises}) is gone or fails verification; promote "
                               "it without --replace")
        replaces = item.revises
    p = rec.provenance
    ctx = _ctx(principal, Scope(p.tenant, p.user, p.agent or None))
    return service.write(ctx, rec.content, kind=rec.kind, update_id=rec.id, expected_version=rec.version,
                         approval=f"operator:{principal.name}", replaces=replaces, note=note)


def reject(service: MemoryService, principal: Principal, memory_id: str, *, reason: str | None = None
           ) -> list[str]:
    """Delete a held record everywhere (and anything derived from it); the audit log keeps a tombstone."""
    checked = _load_for_reject(service, principal, memory_id)
    rec = checked.record
    p = rec.provenance if rec is not None else None
    scope = Scope(p.tenant, p.user, p.agent or None) if p is not None else _scope_of_row(service, memory_id)
    why = f"rejected in review by operator:{principal.name}" + (f": {reason}" if reason else "")
    return service.remove(_ctx(principal, scope), memory_id, include_held=True, reason=why)


def _load_for_reject(service: MemoryService, principal: Principal, memory_id: str) -> Checked:
    """Like ``_load``, but a malformed or tampered held row can still be rejected (that is how it is cleaned)."""
    try:
        return _load(service, principal, memory_id, "reject")
    except IntegrityError:
        scope = _scope_of_row(service, memory_id)
        _require_operator(service, principal, "reject", memory_id, scope)
        return service.operator_check(memory_id)


def _scope_of_row(service: MemoryService, memory_id: str) -> Scope:
    with service.backend.read() as db:
        rows = db.records(View.unscoped(ids=(memory_id,)))
    if not rows:
        raise NotFound(f"no memory {memory_id}")
    tenant, user, agent = rows[0][2:5]
    try:
        return Scope(str(tenant), str(user), str(agent) or None)
    except Exception as exc:
        raise Forbidden(f"memory {memory_id} has no usable scope ({exc}); use `memwarden doctor`") from None
