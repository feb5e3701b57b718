"""Credentials (T3): operator and agent tokens, stored hashed, checked before any operator action.

A token is ``mw_<role>_<43 random url-safe characters>`` (256 bits of ``secrets``), shown once at creation and
stored only as HMAC-SHA256 under the store's signing key (so the table is useless without the key, and a token
of one store is not a token of another). Operators are bound to a tenant (and may be narrowed to one user);
agents to one scope. Roles never mix: promotion, rejection and the review queue accept operator tokens only, and
a refused attempt is a security event in the audit log. Whoever holds the signing key administers tokens
(``memwarden token create|list|revoke``) — keep the key where agents cannot read it (I1).
"""

from __future__ import annotations

import hmac
import re
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memwarden.errors import InvalidInput, MemwardenError
from memwarden.ids import new_id
from memwarden.records import now_ms
from memwarden.scope import Scope

if TYPE_CHECKING:
    from memwarden.service import MemoryService
    from memwarden.store.sqlite import Tx

OPERATOR, AGENT = "operator", "agent"
ROLES = (OPERATOR, AGENT)
TOKEN_RE = re.compile(r"mw_(operator|agent)_[A-Za-z0-9_-]{43}")
_DOMAIN = b"memwarden.token.v1"
_ROW_DOMAIN = b"memwarden.token-row.v1"


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

    @property
    def actor(self) -> str:
        """How the audit log names this caller (``operator:<name>``, ``agent:<name>``)."""
        return f"{self.role}:{self.name}"

    def may_review(self, tenant: str, user: str) -> bool:
        return self.role == OPERATOR and self.tenant == tenant and self.user in (None, user)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.token_id, "role": self.role, "tenant": self.tenant, "user": self.user,
                "agent": self.agent, "name": self.name}


def _hash(service: MemoryService, token: str) -> str:
    return service.signer.mac(_DOMAIN + token.encode("utf-8"))


def _row_mac(service: MemoryService, row: tuple[Any, ...]) -> str:
    """(id, role, tenant, user, agent, name, token_hash, created_at) — revocation is not signed: it only ever
    takes rights away."""
    return service.signer.mac_fields(_ROW_DOMAIN, row)


def create_token(service: MemoryService, role: str, tenant: str, *, user: str | None = None,
                 agent: str | None = None, name: str | None = None, actor: str = "operator:cli"
                 ) -> tuple[str, Principal]:
    """A new token (returned once, never stored) and the principal it stands for."""
    if role not in ROLES:
        raise InvalidInput(f"role must be one of {', '.join(ROLES)}; got {role!r}")
    scope = Scope(tenant, user or "-", agent)  # validates the identifiers
    if role == AGENT and (not user or not agent):
        raise InvalidInput("an agent token is bound to one scope: pass --user and --agent")
    if role == OPERATOR and agent:
        raise InvalidInput("an operator token is not bound to an agent (it reviews every agent of its tenant)")
    label = name or f"{role}-{secrets.token_hex(3)}"
    if not re.fullmatch(r"[A-Za-z0-9._@-]{1,64}", label):
        raise InvalidInput("a token name is 1-64 letters, digits, '.', '_', '@' or '-'")
    token = f"mw_{role}_{secrets.token_urlsafe(32)}"
    principal = Principal(new_id(), role, scope.tenant, user or None, agent or None, label)

    def work(tx: Tx) -> None:
        if tx.execute("SELECT 1 FROM tokens WHERE name = ? AND tenant = ? AND revoked_at IS NULL",
                      (label, scope.tenant)).fetchone():
            raise InvalidInput(f"a live token named {label!r} already exists in tenant {scope.tenant}")
        row = (principal.token_id, role, scope.tenant, principal.user, principal.agent, label,
               _hash(service, token), now_ms())
        tx.execute("INSERT INTO tokens (id, role, tenant, user_id, agent, name, token_hash, created_at, signature)"
                   " VALUES (?,?,?,?,?,?,?,?,?)", (*row, _row_mac(service, row)))

    service.transact_audited(work, actor, "token_created", scope=Scope(scope.tenant, user or "*", agent),
                             details={"token_id": principal.token_id, "role": role, "name": label})
    return token, principal


def authenticate(service: MemoryService, token: Any) -> Principal:
    """The principal of a live token; :class:`AuthError` (one clear line) otherwise."""
    if not isinstance(token, str) or not token.strip():
        raise AuthError("this action needs a credential: pass --token or set $MEMWARDEN_TOKEN "
                        "(create one with `memwarden token create`)")
    token = token.strip()
    if not TOKEN_RE.fullmatch(token):
        raise AuthError("that is not a memwarden token (expected mw_operator_… or mw_agent_…)")
    rows = service.backend.query("SELECT id, role, tenant, user_id, agent, name, token_hash, created_at, revoked_at,"
                                 " signature FROM tokens WHERE token_hash = ?", (_hash(service, token),))
    if not rows:
        raise AuthError("unknown token (it was never issued by this store)")
    tid, role, tenant, user, agent, name, token_hash, created, revoked, sig = rows[0]
    want = _row_mac(service, (tid, role, tenant, user, agent, name, token_hash, created))
    if not isinstance(sig, str) or not hmac.compare_digest(sig, want):
        raise AuthError("this token's record fails verification (edited outside memwarden); it is not accepted")
    if revoked is not None:
        raise AuthError(f"token {name} was revoked")
    return Principal(str(tid), str(role), str(tenant), None if user is None else str(user),
                     None if agent is None else str(agent), str(name))


def list_tokens(service: MemoryService, tenant: str | None = None) -> list[dict[str, Any]]:
    sql = "SELECT id, role, tenant, user_id, agent, name, created_at, revoked_at FROM tokens"
    params: list[Any] = []
    if tenant is not None:
        sql += " WHERE tenant = ?"
        params.append(tenant)
    rows = service.backend.query(sql + " ORDER BY created_at, id", params)
    keys = ("id", "role", "tenant", "user", "agent", "name", "created_at", "revoked_at")
    return [dict(zip(keys, r, strict=True)) for r in rows]


def revoke_token(service: MemoryService, token_id: str, *, actor: str = "operator:cli") -> dict[str, Any]:
    found = [t for t in list_tokens(service) if t["id"] == token_id or t["name"] == token_id]
    live = [t for t in found if t["revoked_at"] is None]
    if not found:
        raise InvalidInput(f"no token {token_id!r}")
    if not live:
        raise InvalidInput(f"token {token_id!r} is already revoked")
    if len(live) > 1:
        raise InvalidInput(f"{len(live)} live tokens are named {token_id!r}; revoke one by its id")
    t = live[0]

    def work(tx: Tx) -> None:
        tx.execute("UPDATE tokens SET revoked_at = ? WHERE id = ?", (now_ms(), t["id"]))

    service.transact_audited(work, actor, "token_revoked", scope=Scope(t["tenant"], t["user"] or "*", t["agent"]),
                             details={"token_id": t["id"], "role": t["role"], "name": t["name"]})
    return {**t, "revoked": True}
