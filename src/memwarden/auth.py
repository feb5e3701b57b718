"""Credentials (T3): operator and agent tokens, stored hashed, checked before any operator action.

A token is ``mw_<role>_<43 random url-safe characters>`` (256 bits of ``secrets``), shown once at creation and
stored only as HMAC-SHA256 under the store's signing key (so the table is useless without the key, and a token
of one store is not a token of another). Operators are bound to a tenant (and may be narrowed to one user);
agents to one scope. Roles never mix: promotion, rejection and the review queue accept operator tokens only, and
a refused attempt is a security event in the audit log. Whoever holds the signing key administers tokens
(``memwarden token create|list|revoke``) — keep the key where agents cannot read it (I1).

Every field of a row is signed, revocation included, and a revocation is also an event of the chained audit log:
a row edited around the API is refused, and so is a revoked token whose row was put back as it was before (T3).

Two more signed fields (issue 13): an agent token's **profile** — ``host_reports_ingest``: its host reports what
its sessions ingest (REST ingest route, ``memwarden hook``), so they start clean; without it every session of the
token is untrusted from its start (:mod:`memwarden.host_ingest`) — and an **expiry** (``expires_at``, unix ms):
after it the token is refused on every transport, like a revoked one.
"""

from __future__ import annotations

import hmac
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memwarden.errors import InvalidInput, MemwardenError
from memwarden.ids import new_id
from memwarden.records import now_ms
from memwarden.scope import Scope
from memwarden.store.base import TOKEN_REVOKED_AT
from memwarden.timevalues import iso

if TYPE_CHECKING:
    from memwarden.service import MemoryService
    from memwarden.store.base import Writes as Tx

OPERATOR, AGENT = "operator", "agent"
ROLES = (OPERATOR, AGENT)
TOKEN_RE = re.compile(r"mw_(operator|agent)_[A-Za-z0-9_-]{43}")
_DOMAIN = b"memwarden.token.v1"
_LEGACY_ROW_DOMAIN = b"memwarden.token-row.v1"  # signed every field but revoked_at (before issue 12)
_V2_ROW_DOMAIN = b"memwarden.token-row.v2"  # the nine fields of issue 12: no profile, no expiry
_ROW_DOMAIN = b"memwarden.token-row.v3"
_V2_FIELDS = TOKEN_REVOKED_AT + 1


class AuthError(MemwardenError):
    """A missing, unknown, revoked or wrong-role credential."""

    code = "unauthorized"


@dataclass(frozen=True, slots=True)
class Principal:
    """Who a token says the caller is. ``user``/``agent`` narrow an operator (optional) or bind an agent."""

    token_id: str
    role: str
    tenant: str
    user: str | None
    agent: str | None
    name: str
    host_reports_ingest: bool = False  # agent tokens: the host reports its sessions' ingest (signed profile)
    expires_at: int | None = None  # unix ms; None: until revoked

    @property
    def actor(self) -> str:
        """How the audit log names this caller (``operator:<name>``, ``agent:<name>``)."""
        return f"{self.role}:{self.name}"

    def may_review(self, tenant: str, user: str) -> bool:
        return self.role == OPERATOR and self.tenant == tenant and self.user in (None, user)

    @property
    def scope_text(self) -> str:
        """What the token may act on, in words: an operator token without a user covers every user."""
        if self.role == OPERATOR:
            return f"tenant {self.tenant}, " + (f"user {self.user} only" if self.user else "every user")
        return f"tenant {self.tenant}, user {self.user}, agent {self.agent}"

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.token_id, "role": self.role, "tenant": self.tenant, "user": self.user,
                "agent": self.agent, "name": self.name, "scope": self.scope_text,
                "host_reports_ingest": self.host_reports_ingest, "expires_at": self.expires_at}

    def expired(self, now: int | None = None) -> bool:
        return self.expires_at is not None and (now_ms() if now is None else now) >= self.expires_at

    def expired_text(self) -> str:
        return f"token {self.name} expired at {iso(self.expires_at)}; create a new one with `memwarden token create`"


def _hash(service: MemoryService, token: str) -> str:
    return service.signer.mac(_DOMAIN + token.encode("utf-8"))


def _row_mac(service: MemoryService, fields: Sequence[object]) -> str:
    """Every field of a token row (``store.base.TOKEN_FIELDS``), revocation included: clearing ``revoked_at`` (or
    editing anything else) makes the row fail verification (T3, I4)."""
    return service.signer.mac_fields(_ROW_DOMAIN, fields)


def _legacy_row_mac(service: MemoryService, fields: Sequence[object]) -> str:
    """The signature rows had before issue 12: every field but ``revoked_at`` (only :func:`upgrade_rows` uses it)."""
    return service.signer.mac_fields(_LEGACY_ROW_DOMAIN, fields[:TOKEN_REVOKED_AT])


def _v2_row_mac(service: MemoryService, fields: Sequence[object]) -> str:
    """The signature rows had from issue 12 to 13: the nine fields before the profile and the expiry."""
    return service.signer.mac_fields(_V2_ROW_DOMAIN, fields[:_V2_FIELDS])


def _verifies(service: MemoryService, row: Sequence[object]) -> bool:
    sig = row[-1]
    return isinstance(sig, str) and hmac.compare_digest(sig, _row_mac(service, row[:-1]))


def create_token(service: MemoryService, role: str, tenant: str, *, user: str | None = None,
                 agent: str | None = None, name: str | None = None, actor: str = "operator:cli",
                 host_reports_ingest: bool = False, expires_at: int | None = None) -> tuple[str, Principal]:
    """A new token (returned once, never stored) and the principal it stands for. ``host_reports_ingest``
    (agent tokens): the host reports what its sessions ingest, so they start clean (:mod:`memwarden.host_ingest`).
    ``expires_at`` (unix ms, in the future): refused from then on; ``None``: until revoked."""
    if role not in ROLES:
        raise InvalidInput(f"role must be one of {', '.join(ROLES)}; got {role!r}")
    scope = Scope(tenant, user or "-", agent)  # validates the identifiers
    if role == AGENT and (not user or not agent):
        raise InvalidInput("an agent token is bound to one scope: pass --user and --agent")
    if role == OPERATOR and agent:
        raise InvalidInput("an operator token is not bound to an agent (it reviews every agent of its tenant)")
    if role == OPERATOR and host_reports_ingest:
        raise InvalidInput("the host-reports-ingest profile is for agent tokens (an operator runs no agent sessions)")
    if not isinstance(host_reports_ingest, bool):
        raise InvalidInput("host_reports_ingest must be true or false")
    if expires_at is not None:
        if isinstance(expires_at, bool) or not isinstance(expires_at, int):
            raise InvalidInput("expires_at must be a unix time in milliseconds")
        if expires_at <= now_ms():
            raise InvalidInput(f"the expiry {iso(expires_at)} is not in the future")
    label = name or f"{role}-{secrets.token_hex(3)}"
    if not re.fullmatch(r"[A-Za-z0-9._@-]{1,64}", label):
        raise InvalidInput("a token name is 1-64 letters, digits, '.', '_', '@' or '-'")
    token = f"mw_{role}_{secrets.token_urlsafe(32)}"
    principal = Principal(new_id(), role, scope.tenant, user or None, agent or None, label, host_reports_ingest,
                          expires_at)

    def work(tx: Tx) -> None:
        if tx.live_token_named(label, scope.tenant):
            raise InvalidInput(f"a live token named {label!r} already exists in tenant {scope.tenant}")
        fields = (principal.token_id, role, scope.tenant, principal.user, principal.agent, label,
                  _hash(service, token), now_ms(), None, int(host_reports_ingest), expires_at)
        tx.insert_token(fields, _row_mac(service, fields))

    service.transact_audited(work, actor, "token_created", scope=Scope(scope.tenant, user or "*", agent),
                             details={"token_id": principal.token_id, "role": role, "name": label,
                                      "host_reports_ingest": host_reports_ingest, "expires_at": expires_at})
    return token, principal


def authenticate(service: MemoryService, token: Any) -> Principal:
    """The principal of a live token; :class:`AuthError` (one clear line) otherwise."""
    if not isinstance(token, str) or not token.strip():
        raise AuthError("this action needs a credential: pass --token or set $MEMWARDEN_TOKEN "
                        "(create one with `memwarden token create`)")
    token = token.strip()
    if not TOKEN_RE.fullmatch(token):
        raise AuthError("that is not a memwarden token (expected mw_operator_… or mw_agent_…)")
    with service.backend.read() as conn:
        row = conn.token_by_hash(_hash(service, token))
        if row is None:
            raise AuthError("unknown token (it was never issued by this store; is $MEMWARDEN_URL the store that "
                            "issued it, with its key file?)")
        revoked_in_log = conn.token_revocations(str(row[0]))
    tid, role, tenant, user, agent, name, _token_hash, _created, revoked, reports, expires, _sig = row
    if not _verifies(service, row):
        raise AuthError("this token's record fails verification (edited outside memwarden); it is not accepted")
    if revoked is not None or revoked_in_log:
        raise AuthError(f"token {name} was revoked")
    who = Principal(str(tid), str(role), str(tenant), None if user is None else str(user),
                    None if agent is None else str(agent), str(name), reports == 1,
                    expires if isinstance(expires, int) else None)
    if who.expired():
        raise AuthError(who.expired_text())
    return who


def list_tokens(service: MemoryService, tenant: str | None = None) -> list[dict[str, Any]]:
    """Every token (never its secret). ``verified`` is False for a row edited outside memwarden (it is refused);
    a token whose revocation is in the audit log is listed as revoked even if its row says otherwise."""
    with service.backend.read() as conn:
        found, revoked = conn.tokens(tenant), conn.token_revocations()
    keys = ("id", "role", "tenant", "user", "agent", "name", "created_at", "revoked_at", "host_reports_ingest",
            "expires_at")
    out = []
    for r in found:
        item = dict(zip(keys, (*r[:6], *r[7:-1]), strict=True))
        item["host_reports_ingest"] = item["host_reports_ingest"] == 1
        if item["revoked_at"] is None and item["id"] in revoked:
            item["revoked_at"] = revoked[str(item["id"])][1]
        item["verified"] = _verifies(service, r)
        out.append(item)
    return out


def revoke_token(service: MemoryService, token_id: str, *, actor: str = "operator:cli") -> dict[str, Any]:
    """Revoke a token: its row is signed as revoked and the revocation is an audit event. A row edited outside
    memwarden (refused already) can be revoked too, which signs it as revoked: a revoked row grants nothing, and
    the audit event says the row had failed verification (``row_verified``)."""
    listed = list_tokens(service)
    with service.backend.read() as conn:  # by its row: a revoked row put back as live, or edited, is revocable
        revocable = {str(r[0]) for r in conn.tokens() if r[TOKEN_REVOKED_AT] is None or not _verifies(service, r)}
    found = [t for t in listed if t["id"] == token_id or t["name"] == token_id]
    live = [t for t in found if t["id"] in revocable]
    if not found:
        raise InvalidInput(f"no token {token_id!r}")
    if not live:
        raise InvalidInput(f"token {token_id!r} is already revoked")
    if len(live) > 1:
        raise InvalidInput(f"{len(live)} live tokens are named {token_id!r}; revoke one by its id")
    t = live[0]

    def work(tx: Tx) -> None:
        row = tx.token_by_id(t["id"])
        if row is None:  # deleted meanwhile
            raise InvalidInput(f"no token {token_id!r}")
        when = now_ms()
        at = TOKEN_REVOKED_AT
        tx.sign_token(t["id"], when, _row_mac(service, (*row[:at], when, *row[at + 1:-1])))

    service.transact_audited(work, actor, "token_revoked", scope=Scope(t["tenant"], t["user"] or "*", t["agent"]),
                             details={"token_id": t["id"], "role": t["role"], "name": t["name"],
                                      "row_verified": t["verified"]})
    return {**t, "revoked": True}


def upgrade_rows(tx: Tx, service: MemoryService) -> dict[str, list[str]]:
    """Sign every field of the token rows an earlier version signed over fewer (the store's one-time upgrade,
    :mod:`memwarden.upgrade`): rows of issue 12 (``revoked_at`` included, no profile or expiry) and rows before it
    (without ``revoked_at``). Such a row is signed without the profile and without an expiry — the columns'
    defaults, which an earlier version could not set; a row whose profile or expiry columns were written
    (around the API: no earlier version did) stays refused, as does a row whose old signature fails. A row whose
    revocation the audit log records is signed as revoked, whatever its ``revoked_at`` says now."""
    revoked = tx.token_revocations()
    out: dict[str, list[str]] = {"tokens_signed": [], "tokens_refused": [], "tokens_kept_revoked": []}
    at = TOKEN_REVOKED_AT
    for row in tx.tokens():
        if _verifies(service, row):
            continue
        tid = str(row[0])
        sig = row[-1]
        fields = row[:-1]
        defaults = tuple(fields[_V2_FIELDS:]) == (0, None)
        if not (defaults and isinstance(sig, str)
                and (hmac.compare_digest(sig, _v2_row_mac(service, fields))
                     or hmac.compare_digest(sig, _legacy_row_mac(service, fields)))):
            out["tokens_refused"].append(tid)
            continue
        when = row[at]
        if when is None and tid in revoked:
            when = revoked[tid][1]
            out["tokens_kept_revoked"].append(tid)
        tx.sign_token(tid, when, _row_mac(service, (*fields[:at], when, *fields[at + 1:])))
        out["tokens_signed"].append(tid)
    return out


def check_rows(service: MemoryService) -> list[tuple[str, str]]:
    """``(token, problem)`` for every token row that is refused because it was edited outside memwarden
    (``doctor``)."""
    with service.backend.read() as conn:
        found, revoked = conn.tokens(), conn.token_revocations()
    out = []
    for r in found:
        tid, name = str(r[0]), str(r[5])
        if not _verifies(service, r):
            out.append((f"{name} ({tid})", "token row fails verification (edited outside memwarden): the token is "
                                           f"refused; run `memwarden token revoke {tid}` and create a new one"))
        elif r[TOKEN_REVOKED_AT] is None and tid in revoked:
            out.append((f"{name} ({tid})", f"revoked at audit seq {revoked[tid][0]}, but its row was put back as "
                                           f"live: the token stays refused; run `memwarden token revoke {tid}`"))
    return out
