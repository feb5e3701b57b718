"""memwarden for a hand-written loop over the OpenAI SDK (Chat Completions or Responses), with taint wired in.

Chat Completions (3 lines of glue)::

    from memwarden.integrations.openai import Memwarden

    mw = Memwarden(session)                                   # the Session the application opened for this user
    r = client.chat.completions.create(model=…, tools=[*my_tools, *mw.chat_tools],
                                       messages=[{"role": "system", "content": mw.system("You are helpful.")}, …])
    results = mw.tool_results(r)       # records every tool call of the response; runs memwarden's and returns
                                       # their {"role": "tool", …} messages (your loop runs its own tools)

Responses::

    r = client.responses.create(model=…, instructions=mw.system("You are helpful."),
                                tools=[*my_tools, *mw.responses_tools], input=items)
    results = mw.tool_results(r)       # function_call_output items for memwarden's calls

:meth:`Memwarden.tool_results` records **every** tool call of the response into the session's taint ledger (T1)
before it runs any of memwarden's — the application's own function tools, custom tools, hosted tools (web search,
file search, code interpreter, …: they taint) and hosted MCP calls (``<server_label>__<tool>``) — so a
``memory_save`` in the same response as a ``web_fetch`` is held. :meth:`Memwarden.record` does the same for a
message or item list (history from earlier turns: a tool output whose call is not in it is untrusted ingest).
The schemas are strict-mode by default; the dispatcher takes a strict-mode null as "omitted".

``AsyncOpenAI``: ``await mw.atool_results(r)`` and ``await mw.arecord(items)`` run on the store's pool. Needs no
SDK import (works on the SDK's response objects or plain dicts); the ``openai`` extra only pins a version the
tests check the schemas against. Every call goes through :meth:`memwarden.Session.call_tool`.
"""

from __future__ import annotations

import json
from typing import Any

from memwarden.aio import AsyncSession, as_async
from memwarden.integrations import _items
from memwarden.session import Session

__all__ = ["Memwarden"]


class Memwarden:
    """memwarden for one session of an application driving the OpenAI SDK itself. ``session``: the
    :class:`memwarden.Session` or :class:`memwarden.AsyncSession` the application opened with the user's scope.
    The plain methods run in the calling thread; the ``a``-prefixed ones (for ``AsyncOpenAI``) run on the store's
    pool, in the session's order."""

    def __init__(self, session: Session | AsyncSession, *, strict: bool = True) -> None:
        self.async_session: AsyncSession = as_async(session)
        self.session: Session = self.async_session.session
        self._seen: set[str] = set()
        self.chat_tools: list[dict[str, Any]] = self.session.tool_schemas("chat_completions", strict=strict)
        """memwarden's tools for ``client.chat.completions.create(tools=[...])``."""
        self.responses_tools: list[dict[str, Any]] = self.session.tool_schemas("responses", strict=strict)
        """memwarden's tools for ``client.responses.create(tools=[...])``."""
        self._names = {t["name"] for t in self.responses_tools}

    def system(self, base: str | None = None) -> str:
        """``base`` with the session's frozen memory block before it (P1)."""
        block = self.session.system_block()
        return block if not base else f"{block}\n\n{base}"

    # --- which calls, and what memwarden runs ------------------------------------------------------------------

    def _new_calls(self, items: list[Any], *, history: bool) -> list[_items.Call]:
        return (_items.chat_calls(items, self._seen, history=history)
                + _items.responses_calls(items, self._seen, history=history))

    def _memwarden_calls(self, items: list[Any]) -> list[tuple[str, str, str, Any]]:
        """("chat" | "responses", call id, tool name, arguments) of memwarden's calls among ``items``."""
        out = []
        for raw in items:
            item = _items.plain(raw)
            for call in item.get("tool_calls") or ():  # Chat Completions
                c = _items.plain(call)
                fn = _items.plain(c.get("function") or {})
                if fn.get("name") in self._names:
                    out.append(("chat", str(c.get("id") or ""), str(fn["name"]), fn.get("arguments")))
            if item.get("type") == "function_call" and item.get("name") in self._names:  # Responses
                out.append(("responses", str(item.get("call_id") or ""), str(item["name"]), item.get("arguments")))
        return out

    @staticmethod
    def _result(api: str, call_id: str, result: dict[str, Any]) -> dict[str, Any]:
        text = json.dumps(result, ensure_ascii=False)
        if api == "chat":
            return {"role": "tool", "tool_call_id": call_id, "content": text}
        return {"type": "function_call_output", "call_id": call_id, "output": text}

    # --- sync ----------------------------------------------------------------------------------------------------

    def record(self, conversation: Any) -> None:
        """Record the tool calls in a response, a message, or a list of Chat Completions messages or Responses
        items not recorded yet (T1); a tool output whose call is not in it is untrusted ingest."""
        calls = self._new_calls(_items_of(conversation), history=True)
        if calls:
            _items.record(self.session, calls)
            self._seen.update(k for k, _, _ in calls if k)

    def tool_results(self, response: Any) -> list[dict[str, Any]]:
        """Record every tool call of ``response`` (a ``ChatCompletion``, a chat message, a ``Response`` or its
        output items), then run memwarden's calls; returns their results in the API's shape: ``{"role": "tool",
        "tool_call_id", "content"}`` messages for Chat Completions, ``function_call_output`` items for Responses."""
        items = _items_of(response)
        calls = self._new_calls(items, history=False)
        if calls:
            _items.record(self.session, calls)
            self._seen.update(k for k, _, _ in calls if k)
        return [self._result(api, cid, self.session.call_tool(name, args))
                for api, cid, name, args in self._memwarden_calls(items)]

    # --- async (AsyncOpenAI) -------------------------------------------------------------------------------------

    async def arecord(self, conversation: Any) -> None:
        """:meth:`record` on the store's pool."""
        calls = self._new_calls(_items_of(conversation), history=True)
        if calls:
            await self.async_session.run(lambda s: _items.record(s, calls))
            self._seen.update(k for k, _, _ in calls if k)

    async def atool_results(self, response: Any) -> list[dict[str, Any]]:
        """:meth:`tool_results` on the store's pool (recording and memwarden's calls in one hop, in order)."""
        items = _items_of(response)
        calls = self._new_calls(items, history=False)
        mine = self._memwarden_calls(items)

        def work(s: Session) -> list[dict[str, Any]]:
            _items.record(s, calls)
            return [self._result(api, cid, s.call_tool(name, args)) for api, cid, name, args in mine]

        out = await self.async_session.run(work)
        self._seen.update(k for k, _, _ in calls if k)
        return out


def _items_of(obj: Any) -> list[Any]:
    """The messages or items in ``obj``: a list as it is, a ChatCompletion's first message, a Response's output,
    or one message or item."""
    if isinstance(obj, list | tuple):
        return list(obj)
    data = obj if isinstance(obj, dict) else _items.plain(obj)
    choices = data.get("choices")
    if isinstance(choices, list):
        first = _items.plain(choices[0]) if choices else {}
        return [first["message"]] if first.get("message") else []
    if isinstance(data.get("output"), list):
        return list(data["output"])
    return [obj]
