"""Scope (S1): every record belongs to exactly one ``(tenant, user, agent)``; ``agent=None`` is shared."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

from memwarden.errors import IdentityRequired, InvalidInput

MAX_IDENTITY_LEN = 128
SHARED_AGENT = ""  # how "shared by all agents of the user" is stored (NULL would defeat equality and indexes)


def _check_identity(name: str, value: object, *, required: bool) -> None:
    if value is None or value == "":
        if required:
            raise IdentityRequired(f"a bound {name} identity is required (S2); the application must set it")
        return
    if not isinstance(value, str):
        raise InvalidInput(f"{name} must be a string, got {type(value).__name__}")
    if len(value) > MAX_IDENTITY_LEN:
        raise InvalidInput(f"{name} is longer than {MAX_IDENTITY_LEN} characters")
    if value != value.strip() or any(unicodedata.category(c)[0] in "CZ" and c != " " for c in value):
        raise InvalidInput(f"{name} contains whitespace at its ends or control/invisible characters")


@dataclass(frozen=True, slots=True)
class Scope:
    """Identity bound by the application, never by the model (S2)."""

    tenant: str
    user: str
    agent: str | None = None

    def __post_init__(self) -> None:
        _check_identity("tenant", self.tenant, required=True)
        _check_identity("user", self.user, required=True)
        _check_identity("agent", self.agent, required=False)
        if self.agent == "":
            object.__setattr__(self, "agent", None)

    @property
    def agent_key(self) -> str:
        """The stored agent column: the agent id, or ``SHARED_AGENT`` for user-level shared memory."""
        return self.agent or SHARED_AGENT

    @property
    def is_shared(self) -> bool:
        return self.agent is None

    def __str__(self) -> str:
        return f"{self.tenant}/{self.user}/{self.agent or '*shared*'}"
