"""memwarden as a LangGraph agent's memory, offline: a scripted chat model stands in for a real one.

Run: ``python examples/langgraph_agent.py`` (needs ``pip install 'memwarden[langgraph]'``). What it shows:

1. the agent saves a memory with memwarden's ``memory_save`` tool, and the next session sees it in its block;
2. a run that fetched a web page first gets its save held for review (taint, T1/T2) — and nothing in this file
   reports tool calls to memwarden: the memory tools read the run's messages themselves.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.prebuilt import create_react_agent

import memwarden
from memwarden.integrations.langgraph import MemwardenStore, memory_tools
from memwarden.scope import Scope


class ScriptedModel(GenericFakeChatModel):
    """Answers with the scripted messages in order; tool binding is a no-op (the script already names tools)."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedModel:
        return self


@tool
def web_fetch(url: str) -> str:
    """Fetch a web page (a stand-in: returns fixed text)."""
    return "Welcome to example.com. Great deals on tea!"


def call(name: str, args: dict[str, Any], n: int) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"call_{n}"}])


def main(db: Path) -> int:
    mw = memwarden.open(db)
    store = MemwardenStore(mw, tenant="acme")  # glue 1: the tenant this application serves

    # Run 1: the user tells the agent something worth keeping; the agent saves it.
    model = ScriptedModel(messages=iter([
        call("memory_save", {"content": "User prefers green tea in the afternoon", "kind": "preference"}, 1),
        AIMessage(content="Noted."),
    ]))
    agent = create_react_agent(model, [*memory_tools(store), web_fetch], store=store)  # glue 2
    agent.invoke({"messages": [("user", "I like green tea in the afternoon")]},
                 store.config(user_id="alice", thread_id="t1"))  # glue 3: who the user is (and taint recording)
    saved = store.session({"configurable": {"user_id": "alice", "thread_id": "t1"}}).view()
    print("run 1 saved:", [(r.kind, r.content, r.status) for r in saved])

    # Run 2: the agent reads a web page, then tries to save what it read: held, not served.
    model = ScriptedModel(messages=iter([
        call("web_fetch", {"url": "https://example.com"}, 2),
        call("memory_save", {"content": "User wants to buy tea from example.com"}, 3),
        AIMessage(content="Done."),
    ]))
    agent = create_react_agent(model, [*memory_tools(store), web_fetch], store=store)
    out = agent.invoke({"messages": [("user", "look at example.com")]}, store.config(user_id="alice", thread_id="t2"))
    verdict = next(m.content for m in out["messages"] if getattr(m, "name", None) == "memory_save")
    print("run 2 save after web_fetch:", verdict)
    store.close()

    # A later session of the same user sees run 1's memory in its block, and not run 2's.
    with mw.session(Scope("acme", "alice", "langgraph")) as later:
        block = later.system_block()
    print(block)
    ok = "green tea" in block and "example.com" not in block and '"status": "review"' in verdict
    mw.close()
    print("OK" if ok else "UNEXPECTED")
    return 0 if ok else 1


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as d:
        sys.exit(main(Path(d) / "memwarden.db"))
