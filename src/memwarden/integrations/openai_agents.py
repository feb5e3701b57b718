"""memwarden for the OpenAI Agents SDK (``openai-agents``): memory tools, taint hooks, instructions, history.

    from memwarden.integrations.openai_agents import Memwarden

    mw = Memwarden(session)                     # a memwarden Session or AsyncSession the application opened
    agent = mw.agent(Agent(name="assistant", instructions="You are helpful.", tools=[web_fetch]))
    result = await Runner.run(agent, "…")       # unchanged

:meth:`Memwarden.agent` returns a clone of the agent with memwarden's six tools added (strict-mode
:class:`agents.FunctionTool`\\ s that call :meth:`memwarden.Session.call_tool`), the session's frozen memory block
as the prefix of its instructions (P1: the same bytes on every turn), and agent hooks that put **every** tool call
into the session's taint ledger (T1) — the application's tools, hosted tools (web search, file search, code
interpreter, hosted MCP), local MCP servers' tools, agents used as tools — with no code of the application's:

* ``on_llm_end``: every tool call in the model's response is recorded *before* any of them runs, so a
  ``memory_save`` issued in the same response as a ``web_fetch`` is judged with the fetch already in the ledger;
* ``on_llm_start``: every tool call or tool output in the input the model is about to read (history from an SDK
  session, what a handoff agent did) that was not recorded yet is recorded, so a save can never follow unrecorded
  content;
* ``on_tool_start``: a local tool call not seen in a response (defensive), and MCP-server tools by their MCP name
  (``server__tool``, which the taint policy treats as MCP).

Names the ledger judges: a function tool by its name; a tool of a local MCP server, or a function call naming no
tool of the agent while it has MCP servers, as ``<server>__<tool>``; an agent used as a tool as
``delegate_<name>``; a hosted tool by its call type (``web_search``, ``file_search``, ``code_interpreter``,
``computer``, …: all taint by default); a hosted MCP call as ``<server_label>__<tool>``. Handoffs (of any agent
the hooks saw) are not ingest and are not recorded; a handoff call found only in history from before this session
is judged as an unknown tool (it taints: fail closed).

**Fail closed without the hooks.** If memwarden's tools are called in a run whose hooks never saw that call (the
agent was built by hand with :attr:`Memwarden.tools` but without :attr:`Memwarden.agent_hooks` or
:attr:`Memwarden.run_hooks`), the session is marked tainted first (``unreported`` ingest), so the save is held for
review instead of being accepted on an empty ledger.

Identity (tenant, user, agent) is the session's, bound by the application (S2); no tool has an identity argument.
:class:`MemwardenSession` is an SDK ``Session`` (conversation history) whose items are also recorded as episodes
with :meth:`memwarden.Session.record_turns`.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

try:
    from agents import Agent, AgentHooks, FunctionTool, RunContextWrapper, RunHooks, SQLiteSession
    from agents.memory.session import SessionABC
    from agents.tool import ToolOriginType, get_function_tool_origin
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("memwarden.integrations.openai_agents needs the OpenAI Agents SDK: "
                      "pip install 'memwarden[openai-agents]'") from exc

from memwarden import tools as mw_tools
from memwarden.aio import AsyncSession, as_async
from memwarden.integrations import _items
from memwarden.session import Session

__all__ = ["Memwarden", "MemwardenAgentHooks", "MemwardenRunHooks", "MemwardenSession"]

UNREPORTED = "unreported"  # record_ingest kind when memwarden's tools run without its hooks (taints)


def _handoff_names(agent: Any) -> set[str]:
    from agents.handoffs import Handoff

    names: set[str] = set()
    for h in getattr(agent, "handoffs", None) or ():
        if isinstance(h, Handoff):
            names.add(h.tool_name)
        elif isinstance(h, Agent):
            names.add(Handoff.default_tool_name(h))
    return names


def _tool_ledger_name(tool: Any, name: str) -> str:
    """The name the taint policy judges for a function tool of the agent."""
    if isinstance(tool, FunctionTool):
        origin = get_function_tool_origin(tool)
        if origin is not None and origin.type == ToolOriginType.MCP:
            return f"{origin.mcp_server_name or 'mcp'}__{name}"
        if origin is not None and origin.type == ToolOriginType.AGENT_AS_TOOL:
            return f"delegate_{name}"
    return name


class Memwarden:
    """memwarden for one session of an OpenAI Agents SDK application. ``session`` is a :class:`memwarden.Session`
    or :class:`memwarden.AsyncSession` the application opened with the user's scope; a sync one runs on its
    store's one async pool (:func:`memwarden.aio.async_store`). ``strict`` (default) gives the model strict-mode
    tool schemas."""

    def __init__(self, session: Session | AsyncSession, *, strict: bool = True) -> None:
        self.session: AsyncSession = as_async(session)
        self._seen: set[str] = set()  # ids of the tool calls already in the ledger
        self._handoffs: set[str] = set()  # handoff tool names of the agents the hooks saw
        self.tools: list[FunctionTool] = [self._function_tool(t) for t in
                                          self.session.tool_schemas("responses", strict=strict)]
        self.agent_hooks = MemwardenAgentHooks(self)
        self.run_hooks = MemwardenRunHooks(self)

    # --- what a user writes ------------------------------------------------------------------------------------

    def instructions(self, base: str | Callable[..., Any] | None = None) -> str | Callable[..., Awaitable[str]]:
        """``base`` with the session's frozen memory block before it (the same bytes for the whole session, so
        the prompt-cache prefix never moves). A callable ``base`` (the SDK's dynamic instructions) stays one."""
        block = self.session.system_block()
        if base is None or isinstance(base, str):
            return block if not base else f"{block}\n\n{base}"

        async def dynamic(context: RunContextWrapper[Any], agent: Agent[Any]) -> str:
            text = base(context, agent)
            if isinstance(text, Awaitable):
                text = await text
            return f"{block}\n\n{text}" if text else block

        return dynamic

    def agent(self, agent: Agent[Any]) -> Agent[Any]:
        """A clone of ``agent`` with memwarden's tools, the memory block before its instructions and the taint
        hooks (chained before hooks it already has)."""
        if not isinstance(agent, Agent):
            raise TypeError("Memwarden.agent takes an agents.Agent")
        mine = {t.name for t in self.tools}
        kept = [t for t in agent.tools if getattr(t, "name", None) not in mine]
        return agent.clone(instructions=self.instructions(agent.instructions), tools=[*kept, *self.tools],
                           hooks=MemwardenAgentHooks(self, agent.hooks))

    # --- the ledger --------------------------------------------------------------------------------------------

    def _calls(self, items: Iterable[Any], agent: Any, *, history: bool) -> list[_items.Call]:
        """The tool calls in ``items`` not recorded yet, named for the taint policy (see the module's doc)."""
        by_name = {t.name: t for t in getattr(agent, "tools", None) or () if isinstance(t, FunctionTool)}
        self._handoffs.update(_handoff_names(agent))  # every agent seen: a handoff stays one after it happened
        has_mcp = bool(getattr(agent, "mcp_servers", None))

        def resolve(name: str) -> str | None:
            if name in self._handoffs:
                return None  # not ingest (marked seen, so no later agent judges it as a tool)
            if name in by_name:
                return _tool_ledger_name(by_name[name], name)
            if has_mcp and name not in mw_tools.TOOL_NAMES:
                return f"mcp__{name}"
            return name

        return _items.responses_calls(items, self._seen, history=history, resolve=resolve)

    async def record(self, calls: list[_items.Call]) -> None:
        """Put ``calls`` into the session's ledger in one hop (a tool output of unknown origin is untrusted
        ingest) and remember their ids."""
        if not calls:
            return
        await self.session.run(lambda s: _items.record(s, calls))
        self._seen.update(key for key, _, _ in calls if key)

    async def _on_llm_start(self, agent: Any, input_items: Iterable[Any]) -> None:
        await self.record(self._calls(input_items or (), agent, history=True))

    async def _on_llm_end(self, agent: Any, response: Any) -> None:
        await self.record(self._calls(getattr(response, "output", None) or (), agent, history=False))

    async def _on_tool_start(self, context: Any, agent: Any, tool: Any) -> None:
        key = getattr(context, "tool_call_id", None)
        name = str(getattr(tool, "name", None) or "tool")
        ledger_name = _tool_ledger_name(tool, name)
        if isinstance(key, str) and key in self._seen:
            if ledger_name == name:
                return
            key = f"{key}:{ledger_name}"  # recorded under its bare name before: record its MCP name too
            if key in self._seen:
                return
        args = getattr(context, "tool_arguments", None)
        await self.record([(key if isinstance(key, str) else "", ledger_name, args if args is not None else {})])

    # --- memwarden's tools as FunctionTools ----------------------------------------------------------------------

    def _function_tool(self, schema: dict[str, Any]) -> FunctionTool:
        name = str(schema["name"])

        async def invoke(context: Any, arguments: str) -> str:
            key = getattr(context, "tool_call_id", None)
            if not (isinstance(key, str) and key in self._seen):  # T6: no hooks saw this call — fail closed
                await self.session.record_ingest(f"{name} called in an Agents SDK run without memwarden's hooks",
                                                 UNREPORTED)
            return json.dumps(await self.session.call_tool(name, arguments), ensure_ascii=False)

        return FunctionTool(name=name, description=str(schema.get("description") or ""),
                            params_json_schema=schema["parameters"], on_invoke_tool=invoke,
                            strict_json_schema=bool(schema.get("strict")))


class MemwardenAgentHooks(AgentHooks[Any]):
    """Agent hooks that feed every tool call of the agent's runs into the session's ledger, then call ``inner``
    (the agent's own hooks, if it had some)."""

    def __init__(self, mw: Memwarden, inner: AgentHooks[Any] | None = None) -> None:
        self.mw = mw
        self.inner = inner

    async def on_start(self, context: Any, agent: Any) -> None:
        if self.inner is not None:
            await self.inner.on_start(context, agent)

    async def on_end(self, context: Any, agent: Any, output: Any) -> None:
        if self.inner is not None:
            await self.inner.on_end(context, agent, output)

    async def on_handoff(self, context: Any, agent: Any, source: Any) -> None:
        if self.inner is not None:
            await self.inner.on_handoff(context, agent, source)

    async def on_llm_start(self, context: Any, agent: Any, system_prompt: Any, input_items: Any) -> None:
        await self.mw._on_llm_start(agent, input_items)
        if self.inner is not None:
            await self.inner.on_llm_start(context, agent, system_prompt, input_items)

    async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
        await self.mw._on_llm_end(agent, response)
        if self.inner is not None:
            await self.inner.on_llm_end(context, agent, response)

    async def on_tool_start(self, context: Any, agent: Any, tool: Any) -> None:
        await self.mw._on_tool_start(context, agent, tool)
        if self.inner is not None:
            await self.inner.on_tool_start(context, agent, tool)

    async def on_tool_end(self, context: Any, agent: Any, tool: Any, result: Any) -> None:
        if self.inner is not None:
            await self.inner.on_tool_end(context, agent, tool, result)


class MemwardenRunHooks(RunHooks[Any]):
    """Run hooks (``Runner.run(..., hooks=mw.run_hooks)``) doing what :class:`MemwardenAgentHooks` does for
    every agent of the run — handoff targets included. With both installed each call is recorded once."""

    def __init__(self, mw: Memwarden) -> None:
        self.mw = mw

    async def on_llm_start(self, context: Any, agent: Any, system_prompt: Any, input_items: Any) -> None:
        await self.mw._on_llm_start(agent, input_items)

    async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
        await self.mw._on_llm_end(agent, response)

    async def on_tool_start(self, context: Any, agent: Any, tool: Any) -> None:
        await self.mw._on_tool_start(context, agent, tool)


def _to_messages(items: Iterable[Any]) -> list[dict[str, Any]]:
    """SDK input/output items as chat messages for :meth:`Session.record_turns`: user and assistant text, and
    assistant tool calls (judged by name in the ledger). Tool outputs are not stored as episodes (their calls
    are in the ledger already); reasoning, images and the rest are left out."""
    out: list[dict[str, Any]] = []
    for raw in items:
        item = _items.plain(raw)
        typ = item.get("type")
        role = item.get("role")
        if role in ("user", "assistant") and typ in (None, "message"):
            content = item.get("content")
            if isinstance(content, str | list):
                out.append({"role": role, "content": content})
        elif typ == "function_call":
            out.append({"role": "assistant", "content": "", "tool_calls": [{
                "id": str(item.get("call_id") or ""), "type": "function",
                "function": {"name": str(item.get("name") or ""), "arguments": item.get("arguments") or "{}"}}]})
    return out


class MemwardenSession(SessionABC):
    """An SDK ``Session`` (conversation history) for ``Runner.run(..., session=…)``: the history itself is kept
    verbatim by ``history`` (default: an in-memory :class:`agents.SQLiteSession`), and every item added is also
    recorded as episodes through :meth:`memwarden.Session.record_turns` — gated, tainted and held like every
    other write (a tainted session's episodes are held for review). ``clear_session`` clears the history only:
    forgetting memories is ``memory_clear`` or an operator's job."""

    def __init__(self, mw: Memwarden, *, session_id: str | None = None, history: Any = None) -> None:
        self.mw = mw
        self.session_id = session_id or mw.session.id
        self.history = history if history is not None else SQLiteSession(self.session_id)
        self.session_settings = getattr(self.history, "session_settings", None)
        self.recorded: list[Any] = []  # the RecordedTurn results of the last add_items

    async def get_items(self, limit: int | None = None) -> list[Any]:
        return list(await self.history.get_items(limit))

    async def add_items(self, items: list[Any]) -> None:
        await self.history.add_items(items)
        messages = _to_messages(items)
        self.recorded = await self.mw.session.record_turns(messages) if messages else []

    async def pop_item(self) -> Any:
        return await self.history.pop_item()

    async def clear_session(self) -> None:
        await self.history.clear_session()
