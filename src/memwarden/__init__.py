"""memwarden: persistent memory for LLM agents where every write crosses a trust boundary.

    import memwarden
    store = memwarden.open()
    with store.session(memwarden.Scope(tenant="acme", user="u-42", agent="support")) as s:
        s.system_block()
        s.save("User prefers Go for services", kind="preference")

asyncio: ``store = await memwarden.open_async()``; ``async with await store.session(scope) as s: await s.save(…)``.
"""

from memwarden.aio import AsyncSession, AsyncStore, open_async
from memwarden.errors import (
    CapacityError,
    HeldForReview,
    IdentityRequired,
    IntegrityError,
    InvalidInput,
    MemwardenError,
    NotFound,
    ProviderConflict,
    VersionConflict,
)
from memwarden.gate import Gate, Verdict, scan
from memwarden.policy import KEEP, KindLimits, Policy
from memwarden.records import Record
from memwarden.scope import Scope
from memwarden.service import MemoryService, WriteResult
from memwarden.service import open_store as open
from memwarden.session import Session

__version__ = "0.1.0"
__all__ = [
    "KEEP", "AsyncSession", "AsyncStore", "CapacityError", "Gate", "HeldForReview", "IdentityRequired",
    "IntegrityError", "InvalidInput", "KindLimits", "MemoryService", "MemwardenError", "NotFound", "Policy",
    "ProviderConflict", "Record", "Scope", "Session", "Verdict", "VersionConflict", "WriteResult", "open",
    "open_async", "scan",
]
