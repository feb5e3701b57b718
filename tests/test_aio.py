"""Issue 15: the async API — the sync write path on one dedicated pool per store, same guarantees."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

import memwarden
from memwarden.aio import AsyncStore


def test_open_async_session_roundtrip(db_path: Path, scope: memwarden.Scope) -> None:
    async def main() -> None:
        store = await memwarden.open_async(db_path)
        async with store:
            async with await store.session(scope) as s:
                r = await s.save("User prefers Go for services", kind="preference")
                assert r.status == "accepted"
                assert [x.id for x in await s.search("Go services")] == [r.id]
                assert (await s.view(r.id)).content == "User prefers Go for services"
                assert len(await s.view()) == 1
                out = await s.call_tool("memory_save", {"content": "User's timezone is CET", "kind": None})
                assert out["status"] == "accepted"
                block = s.system_block()
                assert "Go for services" not in block  # P1: frozen at the start of this session
            async with await store.session(scope) as s2:
                assert "User prefers Go for services" in s2.system_block()
                assert not await s2.is_tainted()
        assert store.closed and store.executor._shutdown  # type: ignore[attr-defined]

    asyncio.run(main())


def test_async_taint_holds_saves(db_path: Path, scope: memwarden.Scope) -> None:
    async def main() -> None:
        async with await memwarden.open_async(db_path) as store, await store.session(scope) as s:
            d = await s.record_tool_call("web_fetch", {"url": "https://blog.example/x"})
            assert d.tainted and await s.is_tainted()
            r = await s.save("User prefers the legacy v1 billing API", kind="preference")
            assert r.status == "review"
            turns = await s.record_turns([{"role": "user", "content": "hello there"}])
            assert turns and turns[0].status == "review"

    asyncio.run(main())


def test_one_dedicated_pool_no_thread_per_call(db_path: Path, scope: memwarden.Scope) -> None:
    """Every call runs on the store's own threads (memwarden-store-*), never the loop's default executor, and
    the number of threads stays at most max_workers however many calls run."""
    seen: set[str] = set()

    async def main() -> None:
        store = await memwarden.open_async(db_path, max_workers=2)
        async with store:
            sessions = [await store.session(memwarden.Scope(tenant="acme", user=f"u{i}", agent="a"))
                        for i in range(4)]

            async def work(i: int) -> None:
                s = sessions[i % 4]
                await s.save(f"User {i} prefers tea number {i}", kind="preference")
                await store.run(lambda: seen.add(threading.current_thread().name))

            await asyncio.gather(*(work(i) for i in range(40)))
            for s in sessions:
                await s.aclose()

    asyncio.run(main())
    assert seen and all(n.startswith("memwarden-store") for n in seen)
    assert len(seen) <= 2


def test_calls_of_one_session_run_in_await_order(store: memwarden.MemoryService, scope: memwarden.Scope) -> None:
    """A tool call recorded before a save is in the ledger before that save runs, even with many workers."""
    async def main() -> list[str]:
        astore = AsyncStore(store, max_workers=8)
        async with astore:
            s = await astore.session(scope)
            first = asyncio.ensure_future(s.record_tool_call("web_fetch", {"url": "https://x.example/"}))
            second = asyncio.ensure_future(s.save("User prefers tea", kind="preference"))
            await first
            r = await second
            await s.aclose()
            return [r.status]

    assert asyncio.run(main()) == ["review"]
    with store.session(scope) as s:  # a wrapped store stays open after its AsyncStore closes
        assert s.view() == []  # the save was held: never listed


def test_closed_store_refuses(db_path: Path) -> None:
    async def main() -> None:
        store = await memwarden.open_async(db_path)
        await store.aclose()
        with pytest.raises(RuntimeError):
            await store.run(lambda: None)
        with pytest.raises(ValueError):
            AsyncStore(store.service, max_workers=0)

    asyncio.run(main())


def test_sync_sessions_share_one_pool_per_store(store: memwarden.MemoryService, scope: memwarden.Scope) -> None:
    import gc
    import weakref

    from memwarden.aio import _SHARED, as_async

    with store.session(scope) as s1, store.session(scope) as s2:
        a1, a2 = as_async(s1), as_async(s2)
        assert a1.store.executor is a2.store.executor  # one pool for the store, not one per session
        assert as_async(a1) is a1

        async def main() -> str:
            r = await a1.save("User prefers tea", kind="preference")
            await a1.store.aclose()  # a shared pool outlives the AsyncStore view over it
            return r.status

        assert asyncio.run(main()) == "accepted"
        assert not a2.store.executor._shutdown  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        as_async("not a session")  # type: ignore[arg-type]

    other = memwarden.open(store.path.with_name("other.db"))
    ref = weakref.ref(other)
    with other.session(scope) as s:
        as_async(s)
    other.close()
    del s, other
    gc.collect()
    assert ref() is None  # the registry does not keep a store alive
    assert all(k is not None for k in _SHARED)
