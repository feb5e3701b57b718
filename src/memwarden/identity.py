"""The identity of a process that acts for one agent (``memwarden mcp``, ``memwarden hook``): an agent token from
``$MEMWARDEN_TOKEN``, or ``--tenant/--user/--agent`` for a single-user local set-up — never the model (S2)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memwarden import auth
from memwarden.errors import InvalidInput
from memwarden.records import now_ms
from memwarden.scope import Scope

if TYPE_CHECKING:
    from memwarden.service import MemoryService


@dataclass(frozen=True, slots=True)
class Identity:
    """Who a process acts for, fixed at start (S2): the scope, what vouched for it, and its profile."""

    scope: Scope
    via: str  # "token <name>" or "local flags"
    actor: str = "host:local"  # how the audit log names it (agent:<token name> for a token)
    reports_ingest: bool = False  # the host reports what the session ingests (token profile or local flag)
    expires_at: int | None = None  # the token's expiry (unix ms)
    # re-reads the token's row: raises auth.AuthError once it is revoked, edited or expired (None: local flags)
    recheck: Callable[[], object] | None = field(default=None, repr=False, compare=False)

    def expired(self) -> bool:
        return self.expires_at is not None and now_ms() >= self.expires_at

    def still_valid(self) -> None:
        """:class:`memwarden.auth.AuthError` (one line) if the token this identity came from is no longer live —
        revoked after the process started included (:func:`memwarden.auth.authenticate` also refuses an expired
        one): a long-running ``memwarden mcp`` must stop acting for a token the moment an operator revokes it, not
        at its next start."""
        if self.recheck is not None:
            self.recheck()


def local_identity(tenant: str | None, user: str | None, agent: str | None, host_reports_ingest: bool = False,
                   command: str = "mcp") -> Identity:
    """The scope of a single-user local set-up (no token): ``tenant``, ``user`` and ``agent`` are all needed, one
    scope, as an agent token would bind; :class:`InvalidInput` (one line) otherwise. ``host_reports_ingest``: the
    set-up's owner says the host reports its ingest (``memwarden hook``), so the session starts clean."""
    missing = [f"--{k}" for k, v in (("tenant", tenant), ("user", user), ("agent", agent)) if not v]
    if missing:
        raise InvalidInput(f"memwarden {command} needs an identity: set $MEMWARDEN_TOKEN to an agent token, or pass "
                           f"{', '.join(missing)} (or $MEMWARDEN_TENANT/$MEMWARDEN_USER/$MEMWARDEN_AGENT) for a "
                           "single-user local set-up")
    return Identity(Scope(tenant or "", user or "", agent), "local flags", "host:local", host_reports_ingest)


def token_identity(service: MemoryService, token: str, tenant: str | None = None, user: str | None = None,
                   agent: str | None = None, host_reports_ingest: bool = False, command: str = "mcp") -> Identity:
    """The scope of a live agent token of this store, or :class:`memwarden.auth.AuthError` (one line): a revoked,
    forged, unknown or edited token is refused, and so is an operator token (it reviews memories; it is not an
    agent, T3). Flags given next to a token must name the token's own scope: they can never change it, nor its
    profile: ``host_reports_ingest`` with a token that lacks it is refused."""
    principal = auth.authenticate(service, token)
    if principal.role != auth.AGENT:
        raise auth.AuthError(f"token {principal.name} is an {principal.role} token: memwarden {command} acts for "
                             "an agent and needs an agent token (memwarden token create --role agent "
                             "--tenant … --user … --agent …); operator actions are never agent tools (T3)")
    scope = Scope(principal.tenant, principal.user or "", principal.agent)
    given = {"tenant": tenant, "user": user, "agent": agent}
    bound = {"tenant": scope.tenant, "user": scope.user, "agent": scope.agent}
    wrong = [k for k, v in given.items() if v and v != bound[k]]
    if wrong:
        raise auth.AuthError(f"--{wrong[0]} {given[wrong[0]]!r} is not the scope of token {principal.name} "
                             f"({principal.scope_text}); a token's scope cannot be changed by flags")
    if host_reports_ingest and not principal.host_reports_ingest:
        raise auth.AuthError(f"--host-reports-ingest: token {principal.name} has no host-reports-ingest profile, and "
                             "a flag cannot give it one (create a token with `memwarden token create "
                             "--host-reports-ingest`)")
    return Identity(scope, f"token {principal.name}", principal.actor, principal.host_reports_ingest,
                    principal.expires_at, recheck=lambda: auth.authenticate(service, token))
