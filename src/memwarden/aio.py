"""The async API: ``store = await memwarden.open_async()`` and ``await store.session(scope)``.

Same guarantees as the sync API, because it *is* the sync API: every method of :class:`AsyncSession` runs the
matching :class:`memwarden.Session` method — so every write goes through ``MemoryService.write`` (gate → taint →
sign → store → audit), the block is frozen at session start (P1), reads are live (P2).

Threads: each :class:`AsyncStore` owns **one** dedicated :class:`~concurrent.futures.ThreadPoolExecutor`
(``max_workers``, default 4, threads named ``memwarden-store-N``), created with the store and shut down by
:meth:`AsyncStore.aclose`. The event loop never blocks on SQLite or fsync, no call starts a thread of its own, and
nothing goes through the loop's default executor (which an application may size for its own work). Calls of one
session run one at a time and in the order they were awaited (an :class:`asyncio.Lock`, FIFO), and a per-session
thread lock keeps that true even when an awaiting task is cancelled while its call is still running in the pool;
different sessions run in parallel, up to ``max_workers``.
"""

from __future__ import annotations

import asyncio
import functools
import os
import threading
import weakref
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar, overload

from memwarden.extract import ExtractionReport, Extractor
from memwarden.records import Record, SourceType
from memwarden.scope import Scope
from memwarden.service import MemoryService, WriteResult, open_store
from memwarden.session import RecordedTurn, Session
from memwarden.taint import TaintDecision

T = TypeVar("T")
DEFAULT_WORKERS = 4


class AsyncStore:
    """A :class:`~memwarden.MemoryService` with one dedicated thread pool for its blocking work.

    ``await memwarden.open_async(...)`` opens one (and closes the store with :meth:`aclose`); wrap a store that is
    already open with ``AsyncStore(service)`` (then :meth:`aclose` ends only the pool, the store stays open)."""

    def __init__(self, service: MemoryService, *, max_workers: int = DEFAULT_WORKERS,
                 owns_service: bool = False, executor: ThreadPoolExecutor | None = None) -> None:
        if not isinstance(max_workers, int) or isinstance(max_workers, bool) or not 1 <= max_workers <= 64:
            raise ValueError("max_workers must be an int from 1 to 64")
        self.service = service
        self.max_workers = max_workers
        self._owns_executor = executor is None
        self.executor = executor or ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="memwarden-store")
        self._owns_service = owns_service
        self.closed = False

    async def run(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """Run the blocking ``fn(*args, **kwargs)`` on this store's pool and await its result."""
        if self.closed:
            raise RuntimeError("this AsyncStore is closed")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.executor, functools.partial(fn, *args, **kwargs))

    async def session(self, scope: Scope, workspace: Sequence[str | os.PathLike[str]] = (), *,
                      clearance: str | int | None = None, read_shared: bool | None = None,
                      source_type: str = SourceType.MODEL) -> AsyncSession:
        """Start a session (its snapshot is read now, on the pool): see :meth:`MemoryService.session`."""
        sync = await self.run(self.service.session, scope, workspace, clearance=clearance,
                              read_shared=read_shared, source_type=source_type)
        return AsyncSession(self, sync)

    async def aclose(self) -> None:
        """Close the store (when this object opened it) and shut the pool down, after the calls in flight."""
        if self.closed:
            return
        try:
            if self._owns_service:
                await self.run(self.service.close)
        finally:
            self.closed = True
            if self._owns_executor:
                self.executor.shutdown(wait=False)

    async def __aenter__(self) -> AsyncStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


# one pool per sync store for the integrations given a sync Session; keyed weakly, and the pool holds no reference
# to the store, so a store that is dropped takes its pool (whose idle threads then exit) with it
_SHARED: weakref.WeakKeyDictionary[MemoryService, ThreadPoolExecutor] = weakref.WeakKeyDictionary()
_SHARED_LOCK = threading.Lock()


def async_store(service: MemoryService) -> AsyncStore:
    """An :class:`AsyncStore` over an already open sync store, on that store's one shared pool (made on first use,
    :data:`DEFAULT_WORKERS` threads); the integrations use it when given a sync :class:`Session`. Closing it
    leaves the store and the pool as they are."""
    with _SHARED_LOCK:
        pool = _SHARED.get(service)
        if pool is None:
            pool = _SHARED[service] = ThreadPoolExecutor(max_workers=DEFAULT_WORKERS,
                                                         thread_name_prefix="memwarden-store")
    return AsyncStore(service, executor=pool)


def as_async(session: Session | AsyncSession) -> AsyncSession:
    """``session`` as an :class:`AsyncSession` (a sync one runs on its store's :func:`async_store` pool)."""
    if isinstance(session, AsyncSession):
        return session
    if not isinstance(session, Session):
        raise TypeError("expected a memwarden Session or AsyncSession (from store.session(scope))")
    return AsyncSession(async_store(session.service), session)


async def open_async(url: str | os.PathLike[str] | None = None, *, max_workers: int = DEFAULT_WORKERS,
                     **kwargs: Any) -> AsyncStore:
    """``memwarden.open`` for asyncio: opens the store on its own pool (the file, key and anchor checks block)
    and returns an :class:`AsyncStore`. ``kwargs`` are :func:`memwarden.open`'s (``key``, ``policy``, …)."""
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memwarden-open")
    try:
        service = await asyncio.get_running_loop().run_in_executor(
            pool, functools.partial(open_store, url, **kwargs))
    finally:
        pool.shutdown(wait=False)
    return AsyncStore(service, max_workers=max_workers, owns_service=True)


class AsyncSession:
    """The async face of one :class:`memwarden.Session`: the same methods, awaited. ``session`` is the sync
    session itself (for code already running on the store's pool)."""

    def __init__(self, store: AsyncStore, session: Session) -> None:
        if session.service is not store.service:
            raise ValueError("the session belongs to another store")
        self.store = store
        self.session = session
        self._order = asyncio.Lock()  # FIFO: calls of this session run in the order they were awaited
        self._busy = threading.Lock()  # one call of this session at a time, even after a cancelled await

    # --- what needs no I/O ---------------------------------------------------------------------------------------

    @property
    def id(self) -> str:
        return self.session.id

    @property
    def scope(self) -> Scope:
        return self.session.scope

    @property
    def snapshot_sha256(self) -> str:
        return self.session.snapshot_sha256

    @property
    def closed(self) -> bool:
        return self.session.closed

    def system_block(self) -> str:
        """The frozen block (P1): a string kept since the session started; no I/O."""
        return self.session.system_block()

    def tool_schemas(self, fmt: str = "openai", *, strict: bool = False) -> list[dict[str, Any]]:
        return self.session.tool_schemas(fmt, strict=strict)

    # --- everything else runs on the store's pool ----------------------------------------------------------------

    async def _call(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        def locked() -> T:
            with self._busy:
                return fn(*args, **kwargs)

        async with self._order:
            return await self.store.run(locked)

    async def run(self, fn: Callable[[Session], T], /) -> T:
        """Run ``fn(session)`` on the store's pool, in this session's order (e.g. several ledger entries in one
        hop). ``fn`` gets the sync :class:`Session`; what it calls there takes the sync write path as usual."""
        return await self._call(fn, self.session)

    async def record_tool_call(self, name: str, arguments: dict[str, Any] | str | None = None,
                               result_meta: dict[str, Any] | None = None) -> TaintDecision:
        """:meth:`Session.record_tool_call` (T1)."""
        return await self._call(self.session.record_tool_call, name, arguments, result_meta)

    async def record_ingest(self, source: str, kind: str) -> TaintDecision:
        return await self._call(self.session.record_ingest, source, kind)

    async def is_tainted(self) -> bool:
        """:attr:`Session.tainted` (it reads host reports from the store, so it is awaited here)."""
        return await self._call(lambda: self.session.tainted)

    async def save(self, content: str, kind: str = "fact", **kwargs: Any) -> WriteResult:
        return await self._call(self.session.save, content, kind, **kwargs)

    async def update(self, memory_id: str, content: str, *, expected_version: int, **kwargs: Any) -> WriteResult:
        return await self._call(self.session.update, memory_id, content, expected_version=expected_version,
                                **kwargs)

    async def record_turns(self, messages: Iterable[Any], **kwargs: Any) -> list[RecordedTurn]:
        return await self._call(self.session.record_turns, list(messages), **kwargs)

    async def remove(self, memory_id: str) -> list[str]:
        return await self._call(self.session.remove, memory_id)

    async def clear(self, kind: str | None = None) -> list[str]:
        return await self._call(self.session.clear, kind)

    async def search(self, query: str, k: int = 5, kind: str | None = None) -> list[Record]:
        return await self._call(self.session.search, query, k, kind)

    @overload
    async def view(self, memory_id: str) -> Record: ...
    @overload
    async def view(self, memory_id: None = None, *, kind: str | None = None, limit: int = 100) -> list[Record]: ...

    async def view(self, memory_id: str | None = None, *, kind: str | None = None,
                   limit: int = 100) -> Record | list[Record]:
        if memory_id is not None:
            return await self._call(self.session.view, memory_id)
        return await self._call(self.session.view, None, kind=kind, limit=limit)

    async def extract_facts(self, extractor: Extractor, turns: Iterable[Any]) -> ExtractionReport:
        return await self._call(self.session.extract_facts, extractor, list(turns))

    async def match_procedures(self, text: str, limit: int = 5) -> list[Record]:
        return await self._call(self.session.match_procedures, text, limit)

    async def call_tool(self, name: str, arguments: dict[str, Any] | str | None = None) -> dict[str, Any]:
        """:meth:`Session.call_tool`: never raises, always a JSON-serialisable dict."""
        return await self._call(self.session.call_tool, name, arguments)

    async def aclose(self) -> None:
        if not self.session.closed:
            await self._call(self.session.close)

    async def __aenter__(self) -> AsyncSession:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
