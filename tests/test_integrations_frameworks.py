"""Issue 15: what the OpenAI Agents SDK and Anthropic SDK integrations record into the taint ledger, and that
they fail closed when their recording is bypassed."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import memwarden
from memwarden.service import MemoryService

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.fixture
def llm() -> Iterator[Any]:
    sys.path.insert(0, str(EXAMPLES))
    try:
        from fake_llm import FakeLLM

        with FakeLLM() as fake:
            yield fake
    finally:
        sys.path.remove(str(EXAMPLES))


# --- OpenAI Agents SDK ---------------------------------------------------------------------------------------------

agents = pytest.importorskip("agents")
from agents import Agent, FunctionTool, OpenAIChatCompletionsModel, RunConfig, Runner  # noqa: E402
from agents.tool import ToolOrigin, ToolOriginType  # noqa: E402
from agents.tool_context import ToolContext  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402

from memwarden.integrations import openai_agents as oa  # noqa: E402


def _ctx(call_id: str, name: str, args: dict[str, Any]) -> ToolContext[Any]:
    return ToolContext(context=None, tool_name=name, tool_call_id=call_id, tool_arguments=json.dumps(args))


def _tool(mw: oa.Memwarden, name: str) -> FunctionTool:
    return next(t for t in mw.tools if t.name == name)


def _plain_tool(name: str, **kw: Any) -> FunctionTool:
    async def invoke(ctx: Any, args: str) -> str:
        return "ok"

    return FunctionTool(name=name, description=name, params_json_schema={"type": "object", "properties": {}},
                        on_invoke_tool=invoke, **kw)


def test_agents_same_response_fetch_and_save_is_held(store: MemoryService, scope: memwarden.Scope) -> None:
    """on_llm_end records every call of a response before any runs: a save beside a web fetch is held."""
    async def main() -> dict[str, Any]:
        with store.session(scope) as s:
            mw = oa.Memwarden(s)
            agent = mw.agent(Agent(name="a", instructions="hi", tools=[_plain_tool("web_fetch")]))
            save_args = {"content": "User prefers tea", "kind": "preference", "ttl_days": None, "due": None,
                         "sensitivity": None, "confidence": None}
            response = SimpleNamespace(output=[
                {"type": "function_call", "call_id": "c2", "name": "memory_save", "arguments": json.dumps(save_args)},
                {"type": "function_call", "call_id": "c1", "name": "web_fetch",
                 "arguments": json.dumps({"url": "https://evil.example/"})}])
            await agent.hooks.on_llm_end(None, agent, response)  # type: ignore[union-attr]
            out = await _tool(mw, "memory_save").on_invoke_tool(_ctx("c2", "memory_save", save_args),
                                                                 json.dumps(save_args))
            return json.loads(out)

    assert asyncio.run(main())["status"] == "review"


@pytest.mark.parametrize("item", [
    {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search", "query": "x"}},
    {"type": "file_search_call", "id": "fs_1", "queries": ["x"], "status": "completed"},
    {"type": "mcp_call", "id": "mcp_1", "server_label": "docs", "name": "lookup", "arguments": "{}"},
    {"type": "code_interpreter_call", "id": "ci_1", "code": "print(1)", "status": "completed"},
])
def test_agents_hosted_tools_taint(store: MemoryService, scope: memwarden.Scope, item: dict[str, Any]) -> None:
    async def main() -> bool:
        with store.session(scope) as s:
            mw = oa.Memwarden(s)
            await mw.run_hooks.on_llm_end(None, Agent(name="a"), SimpleNamespace(output=[item]))
            return s.tainted

    assert asyncio.run(main()) is True


def test_agents_handoff_and_memory_calls_do_not_taint(store: MemoryService, scope: memwarden.Scope) -> None:
    async def main() -> bool:
        with store.session(scope) as s:
            mw = oa.Memwarden(s)
            other = Agent(name="billing")
            agent = mw.agent(Agent(name="a", handoffs=[other]))
            response = SimpleNamespace(output=[
                {"type": "function_call", "call_id": "h1", "name": "transfer_to_billing", "arguments": "{}"},
                {"type": "function_call", "call_id": "m1", "name": "memory_search",
                 "arguments": json.dumps({"query": "x", "k": None, "kind": None})},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hi"}]}])
            await agent.hooks.on_llm_end(None, agent, response)  # type: ignore[union-attr]
            return s.tainted

    assert asyncio.run(main()) is False


def test_agents_history_calls_and_orphan_outputs_recorded(store: MemoryService, scope: memwarden.Scope) -> None:
    """on_llm_start: what the model is about to read counts, even if no hook saw it happen."""
    async def main() -> tuple[bool, bool]:
        with store.session(scope) as s1, store.session(scope) as s2:
            mw1 = oa.Memwarden(s1)
            await mw1.run_hooks.on_llm_start(None, Agent(name="a"), None, [
                {"role": "user", "content": "hi"},
                {"type": "function_call", "call_id": "old", "name": "web_fetch", "arguments": "{}"}])
            mw2 = oa.Memwarden(s2)
            await mw2.run_hooks.on_llm_start(None, Agent(name="a"), None, [
                {"type": "function_call_output", "call_id": "gone", "output": "page text"}])
            return s1.tainted, s2.tainted

    assert asyncio.run(main()) == (True, True)


def test_agents_mcp_and_agent_as_tool_names(store: MemoryService, scope: memwarden.Scope) -> None:
    mcp_tool = _plain_tool("read_file", _tool_origin=ToolOrigin(type=ToolOriginType.MCP, mcp_server_name="fs"))
    sub = _plain_tool("translator", _tool_origin=ToolOrigin(type=ToolOriginType.AGENT_AS_TOOL, agent_name="t"))
    assert oa._tool_ledger_name(mcp_tool, "read_file") == "fs__read_file"
    assert oa._tool_ledger_name(sub, "translator") == "delegate_translator"
    assert oa._tool_ledger_name(_plain_tool("x"), "x") == "x"

    async def main() -> bool:
        with store.session(scope, workspace=[str(Path.cwd())]) as s:
            mw = oa.Memwarden(s)
            agent = Agent(name="a", tools=[mcp_tool])
            # a path inside the workspace would not taint for a local read_file; as an MCP tool it does
            await mw.run_hooks.on_tool_start(_ctx("r1", "read_file", {"path": "README.md"}), agent, mcp_tool)
            return s.tainted

    assert asyncio.run(main()) is True


def _model(llm: Any) -> OpenAIChatCompletionsModel:
    return OpenAIChatCompletionsModel(model="fake", openai_client=AsyncOpenAI(base_url=llm.base_url + "/v1",
                                                                              api_key="offline"))


def test_agents_tools_without_hooks_fail_closed(llm: Any, store: MemoryService, scope: memwarden.Scope) -> None:
    """An agent built by hand with mw.tools but none of memwarden's hooks: its saves are held, not accepted."""
    async def main() -> list[str]:
        with store.session(scope) as s:
            mw = oa.Memwarden(s)
            agent = Agent(name="a", instructions="hi", model=_model(llm), tools=mw.tools)
            await Runner.run(agent, "remember: User prefers tea", run_config=RunConfig(tracing_disabled=True))
        return _trust(store)

    assert asyncio.run(main()) == ["untrusted"]


def _trust(store: MemoryService) -> list[str]:
    """The trust of every stored memory (held ones included), read from the table as an auditor would."""
    with store.backend.read() as conn:
        return [r[0] for r in conn.execute("SELECT trust FROM memories ORDER BY rowid").fetchall()]


def test_agents_run_hooks_cover_a_plain_agent(llm: Any, store: MemoryService, scope: memwarden.Scope) -> None:
    async def main() -> list[str]:
        with store.session(scope) as s:
            mw = oa.Memwarden(s)
            agent = Agent(name="a", instructions=mw.instructions("hi"), model=_model(llm),  # type: ignore[arg-type]
                          tools=mw.tools)
            await Runner.run(agent, "remember: User prefers tea", hooks=mw.run_hooks,
                             run_config=RunConfig(tracing_disabled=True))
        return _trust(store)

    assert asyncio.run(main()) == ["trusted"]


def test_agents_sdk_session_records_episodes(llm: Any, store: MemoryService, scope: memwarden.Scope) -> None:
    async def main() -> tuple[int, list[str]]:
        with store.session(scope) as s:
            mw = oa.Memwarden(s)
            history = oa.MemwardenSession(mw)
            agent = mw.agent(Agent(name="a", instructions="hi", model=_model(llm)))
            await Runner.run(agent, "Hello there, I am planning a trip to Lisbon", session=history,
                             run_config=RunConfig(tracing_disabled=True))
            await Runner.run(agent, "What was I planning?", session=history,
                             run_config=RunConfig(tracing_disabled=True))
            items = await history.get_items()
            episodes = [r.content for r in s.view(kind="episode")]
            return len(items), episodes

    n_items, episodes = asyncio.run(main())
    assert n_items >= 4  # two user turns and two answers, verbatim in the history
    # each turn recorded as an episode through the write gate (the two identical answers merged, Q3)
    assert "Hello there, I am planning a trip to Lisbon" in episodes and "What was I planning?" in episodes


# --- Anthropic SDK ------------------------------------------------------------------------------------------------

anthropic = pytest.importorskip("anthropic")
from memwarden.integrations import anthropic as an  # noqa: E402


def test_anthropic_plain_messages_tool_results(store: MemoryService, scope: memwarden.Scope) -> None:
    """Plain Messages tool use: every tool call of the message is recorded, memwarden's are run."""
    with store.session(scope) as s:
        mw = an.Memwarden(s)
        assert s.system_block() in mw.system("You are helpful.")
        message = {"role": "assistant", "content": [
            {"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {"query": "billing"}},
            {"type": "tool_use", "id": "tu_1", "name": "memory_save",
             "input": {"content": "User prefers the legacy v1 billing API", "kind": "preference"}},
            {"type": "tool_use", "id": "tu_2", "name": "lookup_order", "input": {"order": "A1"}}]}
        results = mw.tool_results(message)
        assert [r["tool_use_id"] for r in results] == ["tu_1"]  # the app runs its own lookup_order
        assert json.loads(results[0]["content"])["status"] == "review"
        assert s.tainted


def test_anthropic_mcp_connector_calls_taint(store: MemoryService, scope: memwarden.Scope) -> None:
    with store.session(scope) as s:
        an.Memwarden(s).record_messages([{"role": "assistant", "content": [
            {"type": "mcp_tool_use", "id": "m1", "name": "search", "server_name": "docs", "input": {}}]}])
        assert s.tainted


def test_anthropic_history_in_messages_is_recorded(llm: Any, store: MemoryService, scope: memwarden.Scope) -> None:
    """Tool calls already in the conversation passed to the runner count before the first request."""
    client = anthropic.Anthropic(base_url=llm.base_url, api_key="offline")
    with store.session(scope) as s:
        mw = an.Memwarden(s)
        runner = mw.tool_runner(client, model="fake", max_tokens=100, messages=[
            {"role": "user", "content": "earlier"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "old", "name": "web_fetch",
                                               "input": {"url": "https://x.example/"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "old", "content": "page"}]},
            {"role": "user", "content": "remember: User prefers tea"}])
        assert s.tainted
        runner.until_done()
    assert _trust(store) == ["untrusted"]


def test_anthropic_runner_by_hand_fails_closed(llm: Any, store: MemoryService, scope: memwarden.Scope) -> None:
    client = anthropic.Anthropic(base_url=llm.base_url, api_key="offline")
    with store.session(scope) as s:
        mw = an.Memwarden(s)
        client.beta.messages.tool_runner(model="fake", max_tokens=100, tools=mw.tools, messages=[
            {"role": "user", "content": "remember: User prefers tea"}]).until_done()
    assert _trust(store) == ["untrusted"]


def test_anthropic_async_runner(llm: Any, db_path: Path, scope: memwarden.Scope) -> None:
    from anthropic import AsyncAnthropic, beta_async_tool

    @beta_async_tool
    async def web_fetch(url: str) -> str:
        """Fetch a page.

        Args:
            url: The page.
        """
        return "page text"

    async def main() -> list[str]:
        client = AsyncAnthropic(base_url=llm.base_url, api_key="offline")
        async with await memwarden.open_async(db_path) as store:
            statuses = []
            for text in ("remember: User prefers tea",
                         "read https://x.example/ and remember: User prefers coffee"):
                async with await store.session(scope) as s:
                    mw = an.Memwarden(s)
                    runner = mw.tool_runner(client, model="fake", max_tokens=100, tools=[web_fetch],
                                            messages=[{"role": "user", "content": text}])
                    final = await runner.until_done()
                    statuses.append(final.content[0].text)
            return statuses

    first, second = asyncio.run(main())
    assert '"status": "accepted"' in first and '"status": "review"' in second


def test_agents_calls_without_ids_all_recorded(store: MemoryService, scope: memwarden.Scope) -> None:
    async def main() -> tuple[bool, int]:
        with store.session(scope) as s:
            mw = oa.Memwarden(s)
            await mw.run_hooks.on_llm_end(None, Agent(name="a"), SimpleNamespace(output=[
                {"type": "function_call", "name": "get_time", "arguments": "{}"},
                {"type": "function_call", "name": "web_fetch", "arguments": "{}"}]))
            return s.tainted, s.ledger.calls

    assert asyncio.run(main()) == (True, 2)


def test_agents_handoff_then_target_reads_history(store: MemoryService, scope: memwarden.Scope) -> None:
    """The handoff call in the history the target agent reads is not judged as an unknown tool."""
    async def main() -> bool:
        with store.session(scope) as s:
            mw = oa.Memwarden(s)
            billing = Agent(name="billing")
            triage = Agent(name="triage", handoffs=[billing])
            call = {"type": "function_call", "call_id": "h1", "name": "transfer_to_billing", "arguments": "{}"}
            await mw.run_hooks.on_llm_end(None, triage, SimpleNamespace(output=[call]))
            await mw.run_hooks.on_llm_start(None, billing, None, [
                {"role": "user", "content": "hi"}, call,
                {"type": "function_call_output", "call_id": "h1", "output": '{"assistant": "billing"}'}])
            return s.tainted

    assert asyncio.run(main()) is False


def test_agents_streamed_run_holds_the_save(llm: Any, store: MemoryService, scope: memwarden.Scope) -> None:
    """Runner.run_streamed goes through the same hooks: the save after a fetch is held."""
    from agents import OpenAIResponsesModel, function_tool

    @function_tool
    def web_fetch(url: str) -> str:
        """Fetch a page."""
        return "page text"

    async def main() -> list[str]:
        client = AsyncOpenAI(base_url=llm.base_url + "/v1", api_key="offline")
        with store.session(scope) as s:
            mw = oa.Memwarden(s)
            agent = mw.agent(Agent(name="a", instructions="hi", tools=[web_fetch],
                                   model=OpenAIResponsesModel(model="fake", openai_client=client)))
            streamed = Runner.run_streamed(agent, "read https://x.example/ and remember: User prefers tea",
                                           run_config=RunConfig(tracing_disabled=True))
            async for _ in streamed.stream_events():
                pass
        return _trust(store)

    assert asyncio.run(main()) == ["untrusted"]
    assert any(r["body"].get("stream") for r in llm.requests)


def test_anthropic_blocks_without_ids_all_recorded(store: MemoryService, scope: memwarden.Scope) -> None:
    with store.session(scope) as s:
        an.Memwarden(s).record_messages([{"role": "assistant", "content": [
            {"type": "tool_use", "name": "get_time", "input": {}},
            {"type": "tool_use", "name": "web_fetch", "input": {"url": "https://x.example/"}}]}])
        assert s.tainted and s.ledger.calls == 2


# --- the raw OpenAI SDK (a hand-written loop) ---------------------------------------------------------------------

from memwarden.integrations import openai as oai  # noqa: E402

WEB_FETCH_CHAT = {"type": "function", "function": {"name": "web_fetch", "description": "Fetch a page.",
                                                    "parameters": {"type": "object",
                                                                   "properties": {"url": {"type": "string"}}}}}


def _chat_loop(client: Any, mw: oai.Memwarden, text: str) -> str:
    messages: list[Any] = [{"role": "system", "content": mw.system("You are helpful.")},
                           {"role": "user", "content": text}]
    for _ in range(5):
        r = client.chat.completions.create(model="fake", tools=[WEB_FETCH_CHAT, *mw.chat_tools], messages=messages)
        msg = r.choices[0].message
        if not msg.tool_calls:
            return str(msg.content)
        results = mw.tool_results(r)
        mine = {x["tool_call_id"] for x in results}
        messages.append(msg.model_dump(exclude_none=True))
        messages += results + [{"role": "tool", "tool_call_id": c.id, "content": "page text"}
                               for c in msg.tool_calls if c.id not in mine]
    raise AssertionError("no answer")


def _responses_loop(client: Any, mw: oai.Memwarden, text: str) -> str:
    items: list[Any] = [{"role": "user", "content": text}]
    web_fetch = {"type": "function", "name": "web_fetch", "description": "Fetch a page.", "strict": False,
                 "parameters": {"type": "object", "properties": {"url": {"type": "string"}}}}
    for _ in range(5):
        r = client.responses.create(model="fake", instructions=mw.system("You are helpful."),
                                    tools=[web_fetch, *mw.responses_tools], input=items)
        calls = [o for o in r.output if o.type == "function_call"]
        if not calls:
            return r.output_text
        results = mw.tool_results(r)
        mine = {x["call_id"] for x in results}
        items += [o.model_dump(exclude_none=True) for o in r.output] + results + [
            {"type": "function_call_output", "call_id": c.call_id, "output": "page text"}
            for c in calls if c.call_id not in mine]
    raise AssertionError("no answer")


@pytest.mark.parametrize("loop", [_chat_loop, _responses_loop])
def test_openai_raw_loop_saves_then_holds_after_fetch(llm: Any, store: MemoryService, scope: memwarden.Scope,
                                                      loop: Any) -> None:
    import openai

    client = openai.OpenAI(base_url=llm.base_url + "/v1", api_key="offline")
    with store.session(scope) as s:
        first = loop(client, oai.Memwarden(s), "remember: User prefers Go for services")
        assert '"status": "accepted"' in first
    with store.session(scope) as s:
        assert "User prefers Go for services" in s.system_block()
        second = loop(client, oai.Memwarden(s), "read https://x.example/ and remember: User prefers coffee")
        assert '"status": "review"' in second and s.tainted


def test_openai_raw_same_response_and_history(store: MemoryService, scope: memwarden.Scope) -> None:
    with store.session(scope) as s:
        mw = oai.Memwarden(s)
        message = {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "memory_save", "arguments": json.dumps(
                {"content": "User prefers tea", "kind": "preference", "ttl_days": None, "due": None,
                 "sensitivity": None, "confidence": None})}},
            {"id": "c2", "type": "function", "function": {"name": "web_search", "arguments": "{}"}}]}
        results = mw.tool_results(message)
        assert [r["tool_call_id"] for r in results] == ["c1"]
        assert json.loads(results[0]["content"])["status"] == "review"  # the search beside it was recorded first
    with store.session(scope) as s:
        oai.Memwarden(s).record([{"role": "user", "content": "hi"},
                                 {"role": "tool", "tool_call_id": "gone", "content": "page"}])
        assert s.tainted  # tool output whose call is not in the history: unknown origin
    with store.session(scope) as s:
        oai.Memwarden(s).record([{"type": "web_search_call", "id": "ws1", "status": "completed"}])
        assert s.tainted


@pytest.mark.parametrize("read_stream", [True, False])
def test_anthropic_streaming_runner(llm: Any, store: MemoryService, scope: memwarden.Scope,
                                    read_stream: bool) -> None:
    """stream=True: each stream's final message is recorded before the runner runs its tools, whether or not the
    caller read the stream."""
    client = anthropic.Anthropic(base_url=llm.base_url, api_key="offline")

    @anthropic.beta_tool
    def web_fetch(url: str) -> str:
        """Fetch a page.

        Args:
            url: The page.
        """
        return "page text"

    with store.session(scope) as s:
        mw = an.Memwarden(s)
        runner = mw.tool_runner(client, model="fake", max_tokens=100, stream=True, tools=[web_fetch], messages=[
            {"role": "user", "content": "read https://x.example/ and remember: User prefers tea"}])
        for stream in runner:
            if read_stream:
                for _event in stream:
                    pass
        assert s.tainted
    assert _trust(store) == ["untrusted"]
    assert any(r["body"].get("stream") for r in llm.requests)


def test_agents_dynamic_instructions_keep_the_block_first(store: MemoryService, scope: memwarden.Scope) -> None:
    async def main() -> tuple[str, str]:
        with store.session(scope) as s:
            mw = oa.Memwarden(s)

            async def dynamic(ctx: Any, agent: Any) -> str:
                return "You are terse."

            agent = mw.agent(Agent(name="a", instructions=dynamic))
            text = await agent.get_system_prompt(agents.RunContextWrapper(context=None))
            return str(text), s.system_block()

    text, block = asyncio.run(main())
    assert text == block + "\n\nYou are terse."


def _anthropic_web_fetch() -> Any:
    @anthropic.beta_tool
    def web_fetch(url: str) -> str:
        """Fetch a page.

        Args:
            url: The page.
        """
        return "page text"

    return web_fetch


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_same_reply_fetch_and_save_is_held(llm: Any, store: MemoryService, scope: memwarden.Scope,
                                                     stream: bool) -> None:
    client = anthropic.Anthropic(base_url=llm.base_url, api_key="offline")
    with store.session(scope) as s:
        runner = an.Memwarden(s).tool_runner(
            client, model="fake", max_tokens=100, stream=stream, tools=[_anthropic_web_fetch()],
            messages=[{"role": "user", "content": "read https://x.example/ and remember: User prefers tea in one go"}])
        for item in runner:
            if stream:
                for _event in item:
                    pass
    assert _trust(store) == ["untrusted"]


def test_anthropic_eager_tools_record_the_calls_before_them(llm: Any, store: MemoryService,
                                                            scope: memwarden.Scope) -> None:
    """run_tools_eagerly (newer SDKs): memwarden's tool runs while the reply streams, after the web_fetch before it
    in the same reply has run; it records that call first, so the save is held."""
    import inspect

    if "run_tools_eagerly" not in inspect.signature(anthropic.Anthropic().beta.messages.tool_runner).parameters:
        pytest.skip("this anthropic SDK has no run_tools_eagerly")
    client = anthropic.Anthropic(base_url=llm.base_url, api_key="offline")
    with store.session(scope) as s:
        runner = an.Memwarden(s).tool_runner(
            client, model="fake", max_tokens=100, stream=True, run_tools_eagerly=True, tools=[_anthropic_web_fetch()],
            messages=[{"role": "user", "content": "read https://x.example/ and remember: User prefers tea in one go"}])
        for item in runner:
            for _event in item:
                pass
    assert _trust(store) == ["untrusted"]


@pytest.mark.parametrize("loop", ["chat", "responses"])
def test_openai_raw_same_reply_fetch_and_save_is_held(llm: Any, store: MemoryService, scope: memwarden.Scope,
                                                      loop: str) -> None:
    import openai

    client = openai.OpenAI(base_url=llm.base_url + "/v1", api_key="offline")
    with store.session(scope) as s:
        run = _chat_loop if loop == "chat" else _responses_loop
        out = run(client, oai.Memwarden(s), "read https://x.example/ and remember: User prefers tea in one go")
        assert '"status": "review"' in out or "Done" in out
    assert _trust(store) == ["untrusted"]


def test_agents_same_reply_fetch_and_save_is_held_in_a_real_run(llm: Any, store: MemoryService,
                                                                scope: memwarden.Scope) -> None:
    from agents import function_tool

    @function_tool
    def web_fetch(url: str) -> str:
        """Fetch a page."""
        return "page text"

    async def main() -> list[str]:
        with store.session(scope) as s:
            mw = oa.Memwarden(s)
            agent = mw.agent(Agent(name="a", instructions="hi", tools=[web_fetch], model=_model(llm)))
            await Runner.run(agent, "read https://x.example/ and remember: User prefers tea in one go",
                             run_config=RunConfig(tracing_disabled=True))
        return _trust(store)

    assert asyncio.run(main()) == ["untrusted"]


def test_openai_raw_async_loop(llm: Any, db_path: Path, scope: memwarden.Scope) -> None:
    import openai

    async def loop(client: Any, mw: oai.Memwarden, text: str) -> str:
        items: list[Any] = [{"role": "user", "content": text}]
        for _ in range(5):
            r = await client.responses.create(model="fake", instructions=mw.system(), input=items,
                                              tools=mw.responses_tools)
            if not any(o.type == "function_call" for o in r.output):
                return str(r.output_text)
            items += [o.model_dump(exclude_none=True) for o in r.output] + await mw.atool_results(r)
        raise AssertionError("no answer")

    async def main() -> tuple[str, str]:
        client = openai.AsyncOpenAI(base_url=llm.base_url + "/v1", api_key="offline")
        async with await memwarden.open_async(db_path) as store:
            async with await store.session(scope) as s:
                first = await loop(client, oai.Memwarden(s), "remember: User prefers tea")
            async with await store.session(scope) as s:
                mw = oai.Memwarden(s)
                await mw.arecord([{"type": "web_search_call", "id": "ws1", "status": "completed"}])
                second = await loop(client, mw, "remember: User prefers coffee")
        return first, second

    first, second = asyncio.run(main())
    assert '"status": "accepted"' in first and '"status": "review"' in second


def test_anthropic_plain_messages_async(db_path: Path, scope: memwarden.Scope) -> None:
    async def main() -> list[dict[str, Any]]:
        async with await memwarden.open_async(db_path) as store, await store.session(scope) as s:
            mw = an.Memwarden(s)
            return await mw.atool_results({"role": "assistant", "content": [
                {"type": "tool_use", "id": "a", "name": "web_fetch", "input": {"url": "https://x.example/"}},
                {"type": "tool_use", "id": "b", "name": "memory_save", "input": {"content": "User prefers tea"}}]})

    results = asyncio.run(main())
    assert [r["tool_use_id"] for r in results] == ["b"]
    assert json.loads(results[0]["content"])["status"] == "review"
