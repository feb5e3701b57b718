"""memwarden for the Anthropic SDK: the beta ``tool_runner`` and plain Messages tool use, with taint wired in.

Tool runner (3 lines of glue)::

    from memwarden.integrations.anthropic import Memwarden

    mw = Memwarden(session)                    # the memwarden Session the application opened for this user
    runner = mw.tool_runner(client, model=…, max_tokens=1024, system="You are helpful.",
                            tools=[web_fetch], messages=[{"role": "user", "content": "…"}])
    final = runner.until_done()                # or: for message in runner: …

:meth:`Memwarden.tool_runner` calls ``client.beta.messages.tool_runner`` with memwarden's six tools added and the
session's frozen memory block before ``system`` (P1), and returns the SDK's runner wrapped so that **every** tool
call of the run reaches the session's taint ledger (T1) before the runner executes any tool of that response: the
application's own tools (``tool_use``), server tools (``server_tool_use``: web search, web fetch, code execution
— all taint by default) and MCP connector calls (``mcp_tool_use``, as ``<server>__<tool>``). With
``run_tools_eagerly`` (newer SDKs run a tool while its reply streams) memwarden's tools first record the reply's
calls that came before them. Tool calls already in ``messages`` (earlier turns) are recorded when the runner is
made; a ``tool_result`` whose call is not there is untrusted ingest. Both the sync client (``Anthropic``) and the
async one (``AsyncAnthropic``, with an :class:`memwarden.AsyncSession` or a sync session run on its store's pool)
work, streaming or not.

Plain Messages tool use (your own loop)::

    msg = client.messages.create(model=…, system=mw.system("You are helpful."), tools=[*mine, *mw.tool_params], …)
    results = mw.tool_results(msg)   # records every tool call of msg; runs memwarden's, returns their tool_result
                                     # blocks (your loop runs its own tools and sends all results back)
    # AsyncAnthropic: results = await mw.atool_results(msg)

**Fail closed without the recording.** memwarden's runnable tools, called by a runner that is not the one
:meth:`Memwarden.tool_runner` returned (e.g. ``client.beta.messages.tool_runner(tools=mw.tools, …)`` by hand),
mark the session tainted (``unreported`` ingest) first, so their saves are held for review.

Identity is the session's (S2): no tool has a tenant, user or agent argument. Every call goes through
:meth:`memwarden.Session.call_tool` — the one write path.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable, Iterator
from typing import Any

try:
    from anthropic.lib.tools import BetaAsyncBuiltinFunctionTool, BetaBuiltinFunctionTool
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("memwarden.integrations.anthropic needs the Anthropic SDK: pip install 'memwarden[anthropic]'"
                      ) from exc

from memwarden.aio import AsyncSession, as_async
from memwarden.integrations import _items
from memwarden.session import Session

__all__ = ["Memwarden", "calls_in"]

UNREPORTED = "unreported"


def _field(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)


def _blocks(message: Any) -> list[Any]:
    content = _field(message, "content")
    return list(content) if isinstance(content, list) else []


def calls_in(messages: Iterable[Any], seen: set[str]) -> list[tuple[str, str, Any]]:
    """(block id, ledger name, input) of the tool calls in ``messages`` whose id is not in ``seen``; a
    ``tool_result`` (or ``mcp_tool_result``) whose call is not there comes back as ``(id, "", "tool_result")``:
    tool output of unknown origin."""
    out: list[tuple[str, str, Any]] = []
    known = set(seen)
    for message in messages:
        for block in _blocks(message):
            typ = _field(block, "type")
            if not isinstance(typ, str):
                continue
            result = typ.endswith("tool_result")
            key = str(_field(block, "tool_use_id" if result else "id") or "")
            if key and key in known:
                continue  # recorded already (a block without an id is always recorded)
            if typ in ("tool_use", "server_tool_use"):
                out.append((key, str(_field(block, "name") or "tool"), _field(block, "input")))
            elif typ == "mcp_tool_use":
                out.append((key, f"{_field(block, 'server_name') or 'mcp'}__{_field(block, 'name') or 'tool'}",
                            _field(block, "input")))
            elif result:
                out.append((key, "", typ))
            else:
                continue
            if key:
                known.add(key)
    return out


class _Tool(BetaBuiltinFunctionTool):
    """One memwarden tool for a sync tool runner."""

    def __init__(self, mw: Memwarden, schema: dict[str, Any]) -> None:
        self.mw, self.schema = mw, schema

    def to_dict(self) -> Any:
        return dict(self.schema)

    def call(self, input: object) -> str:
        self.mw.record_messages(self.mw._streamed_so_far())
        if not self.mw._recording:
            self.mw._sync().record_ingest(f"{self.schema['name']} called by a tool runner memwarden does not "
                                          "record", UNREPORTED)
        return json.dumps(self.mw._sync().call_tool(self.schema["name"], input), ensure_ascii=False)


class _AsyncTool(BetaAsyncBuiltinFunctionTool):
    """One memwarden tool for an async tool runner (runs on the store's pool)."""

    def __init__(self, mw: Memwarden, schema: dict[str, Any]) -> None:
        self.mw, self.schema = mw, schema

    def to_dict(self) -> Any:
        return dict(self.schema)

    async def call(self, input: object) -> str:
        s = self.mw.async_session
        await self.mw.arecord_messages(self.mw._streamed_so_far())
        if not self.mw._recording:
            await s.record_ingest(f"{self.schema['name']} called by a tool runner memwarden does not record",
                                  UNREPORTED)
        return json.dumps(await s.call_tool(self.schema["name"], input if isinstance(input, dict) else {}),
                          ensure_ascii=False)


class Memwarden:
    """memwarden for one session of an Anthropic SDK application. ``session``: the :class:`memwarden.Session`
    (or :class:`memwarden.AsyncSession`) the application opened with the user's scope."""

    def __init__(self, session: Session | AsyncSession) -> None:
        self._session = session
        self.async_session: AsyncSession = as_async(session)
        self._seen: set[str] = set()
        self._recording = 0  # > 0 while a runner made by tool_runner() is running
        self._current: Any = None  # the reply stream a streaming runner is on
        self._own: set[str] = set()  # names of memory-tool backends over this session (memwarden's, not ingest)
        schemas = self.async_session.tool_schemas("anthropic")
        self.tool_params: list[dict[str, Any]] = schemas
        """memwarden's tools as plain Messages API tool definitions (``tools=[...]``)."""
        self.tools: list[BetaBuiltinFunctionTool] = [_Tool(self, t) for t in schemas]
        """memwarden's tools as runnable tools for a sync ``tool_runner``."""
        self.async_tools: list[BetaAsyncBuiltinFunctionTool] = [_AsyncTool(self, t) for t in schemas]
        """memwarden's tools as runnable tools for an async ``tool_runner``."""

    def _sync(self) -> Session:
        return self.async_session.session

    def _streamed_so_far(self) -> list[Any]:
        """With ``run_tools_eagerly`` a tool runs while its reply still streams: the reply's blocks before the
        last one (complete by then; the last may still be streaming) as a message, so the calls the model made
        before this one are in the ledger first."""
        stream = self._current
        snapshot = getattr(stream, "current_message_snapshot", None) if stream is not None else None
        blocks = _blocks(snapshot)
        return [{"role": "assistant", "content": blocks[:-1]}] if len(blocks) > 1 else []

    def system(self, base: str | Iterable[dict[str, Any]] | None = None) -> Any:
        """``base`` (a string or a list of text blocks) with the frozen memory block before it (P1)."""
        block = self.async_session.system_block()
        if base is None or isinstance(base, str):
            return block if not base else f"{block}\n\n{base}"
        return [{"type": "text", "text": block}, *base]

    # --- recording ---------------------------------------------------------------------------------------------

    def memory_tool(self, **kwargs: Any) -> Any:
        """The SDK's memory tool (``memory_20250818``) backed by this session's memories
        (:class:`memwarden.integrations.anthropic_memory.MemwardenMemoryTool`: every write through the gate). Its
        calls are memwarden's own, so they do not taint; what it shows was read through the session (T7)."""
        from memwarden.integrations.anthropic_memory import MemwardenMemoryTool

        tool = MemwardenMemoryTool(self._sync(), **kwargs)
        self._own.add(tool.name)
        return tool

    def _own_calls(self, calls: list[tuple[str, str, Any]]) -> list[tuple[str, str, Any]]:
        """``calls`` without those of a memory-tool backend over this session (memwarden's tools judge their own
        writes; the SDK's file-system memory tool, or one over another session, is still recorded)."""
        return [c for c in calls if c[1] not in self._own] if self._own else calls

    def _note_own(self, tools: Iterable[Any]) -> None:
        from memwarden.integrations.anthropic_memory import MemwardenMemoryTool

        for t in tools:
            if isinstance(t, MemwardenMemoryTool) and t.items.session is self._sync():
                self._own.add(t.name)

    def record_messages(self, messages: Iterable[Any]) -> None:
        """Put every tool call in ``messages`` (dicts or SDK objects) that is not recorded yet into the ledger."""
        calls = calls_in(messages, self._seen)
        if calls:
            _items.record(self._sync(), self._own_calls(calls))
            self._seen.update(k for k, _, _ in calls if k)  # own calls too: their results are not of unknown origin

    async def arecord_messages(self, messages: Iterable[Any]) -> None:
        """:meth:`record_messages` on the store's pool (for async code)."""
        calls = calls_in(messages, self._seen)
        if calls:
            own = self._own_calls(calls)
            await self.async_session.run(lambda s: _items.record(s, own))
            self._seen.update(k for k, _, _ in calls if k)

    def tool_results(self, message: Any) -> list[dict[str, Any]]:
        """For plain Messages tool use: record every tool call of ``message``, run memwarden's and return their
        ``tool_result`` blocks (the application adds the results of its own tools)."""
        self.record_messages([message])
        out = []
        for block in _blocks(message):
            if _field(block, "type") == "tool_use" and _field(block, "name") in {t["name"] for t in self.tool_params}:
                result = self._sync().call_tool(str(_field(block, "name")), _field(block, "input"))
                out.append({"type": "tool_result", "tool_use_id": str(_field(block, "id")),
                            "content": json.dumps(result, ensure_ascii=False), "is_error": "error" in result})
        return out

    async def atool_results(self, message: Any) -> list[dict[str, Any]]:
        """:meth:`tool_results` for ``AsyncAnthropic``: recording and memwarden's calls in one hop on the store's
        pool, in the session's order."""
        calls = calls_in([message], self._seen)
        names = {t["name"] for t in self.tool_params}
        mine = [(str(_field(b, "id")), str(_field(b, "name")), _field(b, "input")) for b in _blocks(message)
                if _field(b, "type") == "tool_use" and _field(b, "name") in names]

        def work(s: Session) -> list[dict[str, Any]]:
            _items.record(s, self._own_calls(calls))
            out = []
            for block_id, name, args in mine:
                result = s.call_tool(name, args)
                out.append({"type": "tool_result", "tool_use_id": block_id,
                            "content": json.dumps(result, ensure_ascii=False), "is_error": "error" in result})
            return out

        out = await self.async_session.run(work)
        self._seen.update(k for k, _, _ in calls if k)
        return out

    # --- the tool runner ---------------------------------------------------------------------------------------

    def tool_runner(self, client: Any, *, tools: Iterable[Any] = (), system: Any = None, **params: Any) -> Any:
        """``client.beta.messages.tool_runner(**params)`` with memwarden's tools and memory block, every tool call
        recorded. ``client`` is an ``Anthropic`` or ``AsyncAnthropic``; returns the SDK runner, wrapped."""
        is_async = type(client).__name__.startswith("Async")
        mine = self.async_tools if is_async else self.tools
        names = {t.name for t in mine}
        kept = [t for t in tools if _name_of(t) not in names]
        self._note_own(kept)
        messages = list(params.pop("messages", []))
        params["system"] = self.system(system)
        inner = client.beta.messages.tool_runner(tools=[*kept, *mine], messages=messages, **params)
        if is_async:
            return _AsyncRecordingRunner(self, inner, messages)
        self.record_messages(messages)
        return _RecordingRunner(self, inner)


def _name_of(tool: Any) -> Any:
    return tool.get("name") if isinstance(tool, dict) else getattr(tool, "name", None)


def _final(item: Any) -> Any:
    get = getattr(item, "get_final_message", None)
    return get() if callable(get) else item


class _RecordingRunner:
    """The SDK's sync runner; each response's tool calls reach the ledger before the runner runs them."""

    def __init__(self, mw: Memwarden, inner: Any) -> None:
        self._mw, self._inner = mw, inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def __iter__(self) -> Iterator[Any]:
        mw = self._mw
        mw._recording += 1
        try:
            for item in self._inner:
                streamed = hasattr(item, "get_final_message")
                if not streamed:
                    mw.record_messages([item])
                mw._current = item if streamed else None
                yield item
                if streamed:  # the stream is read by now (or is read here): record before the tools run
                    mw.record_messages([_final(item)])
                mw._current = None
        finally:
            mw._recording -= 1
            mw._current = None

    def until_done(self) -> Any:
        for _ in self:
            pass
        return self._inner.until_done()


class _AsyncRecordingRunner:
    """The SDK's async runner, recording like :class:`_RecordingRunner`."""

    def __init__(self, mw: Memwarden, inner: Any, messages: list[Any]) -> None:
        self._mw, self._inner, self._pending = mw, inner, messages

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def __aiter__(self) -> AsyncIterator[Any]:
        mw = self._mw
        if self._pending:
            await mw.arecord_messages(self._pending)
            self._pending = []
        mw._recording += 1
        try:
            async for item in self._inner:
                streamed = hasattr(item, "get_final_message")
                if not streamed:
                    await mw.arecord_messages([item])
                mw._current = item if streamed else None
                yield item
                if streamed:
                    await mw.arecord_messages([await item.get_final_message()])
                mw._current = None
        finally:
            mw._recording -= 1
            mw._current = None

    async def until_done(self) -> Any:
        async for _ in self:
            pass
        return await self._inner.until_done()
