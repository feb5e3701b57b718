"""LangGraph / LangChain: a ``BaseStore`` backed by memwarden, memory tools for agents, and taint from tool calls.

Needs the ``langgraph`` extra (``pip install 'memwarden[langgraph]'``). Three lines give a graph memwarden memory
with taint tracking::

    store = MemwardenStore(memwarden.open(), tenant="acme")
    agent = create_react_agent(model, [*memory_tools(store), *your_tools], store=store)
    agent.invoke(inputs, store.config(user_id="alice", thread_id="t1"))

**Identity** comes from the application, never from the model or a namespace: the tenant is fixed when the store
is made, the user is the ``user_id`` of the run's ``configurable`` (the application sets it when it calls the
graph), the agent is fixed (default ``langgraph``). A store made with a :class:`~memwarden.session.Session`
instead uses exactly that session's scope.

**Namespaces** are labels inside that scope (``memwarden.items``): ``("memories", "alice")`` and
``("memories",)`` are two collections of the same user, and no namespace can name another user's records.
``list_namespaces`` lists what the caller's scope holds.

**Sessions and taint**: each LangGraph thread (``thread_id``) of a user is one memwarden session, opened at its
first use; what an untrusted tool brought into the run taints it (T1), and its later writes are held for review.
The memory tools (:func:`memory_tools`) read the run's messages (LangGraph's injected state) and feed every tool
call and tool result into the session's taint ledger before they save — no hook or callback to write.
``store.config(...)`` adds a :class:`TaintCallback`, which records every tool the run calls for the store's own
``put``/``get``/``search`` in graph nodes. A run that uses the store without it **fails closed**: its session is
marked tainted (``unreported``) and its puts are held, since nothing told memwarden what its tools read. A held
put is logged (``memwarden.integrations.langgraph``, warning); ``get`` keeps returning the previous value.

**TTL**: ``ttl`` in minutes on ``put`` (or the store's ``TTLConfig.default_ttl``) is the item's expiry (from 1
minute up to the kind's retention). Refreshing on read is not supported: the expiry counts from the last put
(``refresh_ttl`` is ignored; a ``TTLConfig`` with ``refresh_on_read=True`` is refused).

**Async**: the ``a*`` methods run the same calls on one worker thread owned by the store (the sessions' work is
serialised there; the event loop is never blocked), not on a thread per call.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Annotated, Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.config import get_config
from langgraph.prebuilt import InjectedState
from langgraph.store.base import (
    NOT_PROVIDED,
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)
from pydantic import BaseModel, create_model

from memwarden import tools
from memwarden.errors import InvalidInput
from memwarden.items import Item as MwItem
from memwarden.items import Items
from memwarden.records import Kind
from memwarden.scope import Scope
from memwarden.service import MemoryService
from memwarden.session import Session

__all__ = ["MemwardenStore", "TaintCallback", "memory_tools"]

log = logging.getLogger("memwarden.integrations.langgraph")
UNREPORTED = "unreported"  # record_ingest kind of a run that does not report its tool calls (taints)

_MAX_SCAN = 1000  # a listing without a query reads at most this many items of a namespace prefix


class MemwardenStore(BaseStore):
    """A LangGraph ``BaseStore`` over memwarden (see the module docstring for identity, namespaces and taint).

    ``target``: an open store (``memwarden.open()``; scope per run from ``configurable``) or one session (fixed
    scope). ``kind``: what items are stored as (the gate's tier; default fact). ``ttl``: LangGraph's TTL config
    (``default_ttl`` in minutes)."""

    supports_ttl = True

    def __init__(self, target: MemoryService | Session, *, tenant: str | None = None, agent: str = "langgraph",
                 user_key: str = "user_id", kind: str = Kind.FACT, ttl: TTLConfig | None = None) -> None:
        if isinstance(target, Session):
            self._fixed: Session | None = target
            self.service = target.service
        elif isinstance(target, MemoryService):
            if not tenant:
                raise InvalidInput("MemwardenStore(store, tenant=...): name the tenant this application serves")
            self._fixed = None
            self.service = target
        else:
            raise InvalidInput("MemwardenStore takes memwarden.open() or a memwarden Session")
        if ttl is not None and ttl.get("refresh_on_read"):
            raise InvalidInput("refresh_on_read is not supported: an item's expiry counts from its last put")
        self.tenant, self.agent, self.user_key, self.kind = tenant, agent, user_key, kind
        self.ttl_config = ttl
        self._items: dict[tuple[str, str], Items] = {}
        self._lock = threading.Lock()
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memwarden-langgraph")

    # --- sessions ----------------------------------------------------------------------------------------------

    def items(self, config: Mapping[str, Any] | None = None) -> Items:
        """The keyed items of the session this run belongs to (``config``: the run's config; default the
        current LangGraph run's)."""
        if self._fixed is not None:
            return self._items_for(("", ""), lambda: self._fixed)  # type: ignore[arg-type,return-value]
        conf = dict(config) if config is not None else _current_config()
        configurable = conf.get("configurable") or {}
        user = configurable.get(self.user_key)
        if not isinstance(user, str) or not user:
            raise InvalidInput(f"this memwarden store takes the user from the run's configurable "
                               f"{self.user_key!r}; call the graph with config={{'configurable': "
                               f"{{'{self.user_key}': ..., 'thread_id': ...}}}}")
        thread = str(configurable.get("thread_id") or "")
        scope = Scope(self.tenant, user, self.agent)
        return self._items_for((user, thread), lambda: self.service.session(scope))

    def session(self, config: Mapping[str, Any] | None = None) -> Session:
        return self.items(config).session

    def config(self, user_id: str, thread_id: str, **configurable: Any) -> dict[str, Any]:
        """The run config for a user's thread: ``configurable`` with the user and thread, and a
        :class:`TaintCallback` so every tool the run calls reaches the session's ledger (T1). Pass it to
        ``graph.invoke(inputs, store.config("alice", "t1"))``."""
        return {"configurable": {self.user_key: user_id, "thread_id": thread_id, **configurable},
                "callbacks": [TaintCallback(self)]}

    def _items_for(self, key: tuple[str, str], start: Callable[[], Session]) -> Items:
        with self._lock:
            found = self._items.get(key)
            if found is None or found.session.closed:
                found = self._items[key] = Items(start(), kind=self.kind)
            return found

    def close(self) -> None:
        """End every session this store opened (not a session it was given) and its worker thread."""
        with self._lock:
            opened = [] if self._fixed is not None else [i.session for i in self._items.values()]
            self._items.clear()
        for s in opened:
            s.close()
        self._worker.shutdown(wait=True)

    # --- BaseStore ---------------------------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        if not ops:
            return []
        config = _current_config() if self._fixed is None else None
        items = self._checked(config)
        return [self._run(items, op) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        if not ops:
            return []
        config = _current_config() if self._fixed is None else None
        loop = asyncio.get_running_loop()

        def run() -> list[Result]:
            items = self._checked(config)
            return [self._run(items, op) for op in ops]

        return await loop.run_in_executor(self._worker, run)

    def _checked(self, config: Mapping[str, Any] | None) -> Items:
        """The run's items; fail closed (T1) when the run does not report its tool calls: a store used inside a
        LangGraph run whose callbacks hold no :class:`TaintCallback` of this store cannot know what its tools
        read, so its session is marked tainted (``unreported``) and its writes are held."""
        items = self.items(config)
        if config is not None and not _recorded(config, self):
            items.session.record_ingest("a LangGraph run that does not report its tool calls to memwarden (pass "
                                        "store.config(...) or callbacks=[TaintCallback(store)])", UNREPORTED)
        return items

    def _run(self, items: Items, op: Op) -> Result:
        if isinstance(op, GetOp):
            found = items.get(op.namespace, op.key)
            return None if found is None else _lg_item(found)
        if isinstance(op, PutOp):
            if op.value is None:
                items.delete(op.namespace, op.key)
                return None
            res = items.put(op.namespace, op.key, op.value, ttl_minutes=_minutes(op.ttl, self.ttl_config))
            if res.status == "review":  # stored, not served until an operator approves it: say so, once per put
                log.warning("memwarden held the put of %s %r for review (get returns the previous value until an "
                            "operator approves it): %s", op.namespace, op.key, res.message)
            return None
        if isinstance(op, SearchOp):
            return self._search(items, op)
        if isinstance(op, ListNamespacesOp):
            return _namespaces(items, op)
        raise InvalidInput(f"unknown store operation {type(op).__name__}")

    def _search(self, items: Items, op: SearchOp) -> list[SearchItem]:
        for what, value in (("limit", op.limit), ("offset", op.offset)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InvalidInput(f"search {what} must be a whole number from 0")
        want = op.offset + op.limit
        if op.query:
            found = [(i, s) for i, s in items.search(op.namespace_prefix, op.query, limit=min(100, want * 2))]
        else:
            found = [(i, None) for i in items.list(op.namespace_prefix, limit=_MAX_SCAN)]
        if op.filter:
            found = [(i, s) for i, s in found if _matches(i.value, op.filter)]
        return [_lg_item(i, score=s) for i, s in found[op.offset:want]]


class TaintCallback(BaseCallbackHandler):
    """A LangChain callback that records every tool a run calls into the run's memwarden session (T1): pass it
    in the run's ``callbacks`` when the graph uses the store without :func:`memory_tools`."""

    def __init__(self, store: MemwardenStore) -> None:
        self.store = store

    def on_tool_start(self, serialized: dict[str, Any], input_str: str, *, inputs: dict[str, Any] | None = None,
                      metadata: dict[str, Any] | None = None, **kwargs: Any) -> None:
        name = str((serialized or {}).get("name") or kwargs.get("name") or "tool")
        if name in _OWN_TOOLS:
            return
        self.store.session().record_tool_call(name, inputs if inputs is not None else input_str)


def memory_tools(store: MemwardenStore) -> list[BaseTool]:
    """memwarden's agent tools (save, update, remove, clear, search, view) for ``create_react_agent`` /
    LangChain agents, each answered by the agent tool dispatcher (``Session.call_tool``: the one write path; the
    model never picks the scope). Before each call they feed the run's earlier tool calls and tool results into
    the session's taint ledger (T1)."""
    return [_tool(store, name, model) for name, model in tools.TOOLS.items()]


_OWN_TOOLS = frozenset(tools.TOOLS)


def _tool(store: MemwardenStore, name: str, model: type[BaseModel]) -> BaseTool:
    def call(state: Any = None, **arguments: Any) -> str:
        session = store.session()
        _ingest_messages(session, state, seen=_seen(session))
        return json.dumps(session.call_tool(name, {k: v for k, v in arguments.items() if v is not None}))

    # the tool's own argument model, plus the graph state LangGraph injects (hidden from the model's schema)
    args = create_model(f"{name}_args", __base__=model, state=(Annotated[Any, InjectedState], None))
    return StructuredTool.from_function(func=call, name=name, description=tools.description(model),
                                        args_schema=args)


def _seen(session: Session) -> set[tuple[str, str]]:
    seen = getattr(session, "_langgraph_seen", None)
    if seen is None:
        seen = set()
        session._langgraph_seen = seen  # type: ignore[attr-defined]
    return seen


def _ingest_messages(session: Session, state: Mapping[str, Any] | None, seen: set[tuple[str, str]]) -> None:
    """T1: every tool call in the run's messages, and every tool result, goes into the ledger once."""
    messages: Sequence[BaseMessage] = list((state or {}).get("messages") or ())
    for m in messages:
        if isinstance(m, AIMessage):
            for call in m.tool_calls:
                cid = str(call.get("id") or id(call))
                if call.get("name") in _OWN_TOOLS or ("call", cid) in seen:
                    continue
                seen.add(("call", cid))
                session.record_tool_call(str(call.get("name")), call.get("args") or {})
        elif isinstance(m, ToolMessage) and m.name not in _OWN_TOOLS:
            cid = str(m.tool_call_id)
            if ("result", cid) in seen:
                continue
            seen.add(("result", cid))
            session.record_ingest(m.name or "tool output", "tool")


def _recorded(config: Mapping[str, Any], store: MemwardenStore) -> bool:
    """Does the run's callback configuration hold a :class:`TaintCallback` of ``store``?"""
    callbacks = config.get("callbacks")
    handlers: list[Any] = []
    if isinstance(callbacks, (list, tuple)):
        handlers = list(callbacks)
    elif callbacks is not None:
        handlers = [*getattr(callbacks, "handlers", ()), *getattr(callbacks, "inheritable_handlers", ())]
    return any(isinstance(h, TaintCallback) and h.store is store for h in handlers)


def _current_config() -> dict[str, Any]:
    try:
        return dict(get_config())
    except RuntimeError:
        raise InvalidInput("this memwarden store takes the user from the LangGraph run it is called in; outside "
                           "a run, use store.items(config) or a store made with a session") from None


def _minutes(ttl: Any, config: TTLConfig | None) -> int | None:
    if ttl is NOT_PROVIDED:
        ttl = (config or {}).get("default_ttl")
    if ttl is None:
        return None
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not math.isfinite(ttl) or ttl <= 0:
        raise InvalidInput("ttl is a number of minutes above 0")
    return max(1, math.ceil(ttl))


def _lg_item(i: MwItem, score: float | None = None) -> Item:
    created = datetime.fromtimestamp(i.created_at / 1000, tz=UTC)
    updated = datetime.fromtimestamp(i.updated_at / 1000, tz=UTC)
    if score is None:
        return Item(value=i.value, key=i.key, namespace=i.namespace, created_at=created, updated_at=updated)
    return SearchItem(namespace=i.namespace, key=i.key, value=i.value, created_at=created, updated_at=updated,
                      score=score)


def _namespaces(items: Items, op: ListNamespacesOp) -> list[tuple[str, ...]]:
    for what, value, least in (("limit", op.limit, 0), ("offset", op.offset, 0), ("max_depth", op.max_depth, 1)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < least):
            raise InvalidInput(f"list_namespaces {what} must be a whole number from {least}")
    conds: Sequence[MatchCondition] = op.match_conditions or ()
    prefix: tuple[str, ...] = ()
    for c in conds:  # the literal head of a prefix condition narrows the SQL
        if c.match_type == "prefix":
            head = []
            for label in c.path:
                if label == "*":
                    break
                head.append(label)
            prefix = tuple(head)
            break
    found = items.namespaces(prefix, limit=10_000)
    found = [ns for ns in found if all(_ns_match(c, ns) for c in conds)]
    if op.max_depth is not None:
        found = sorted({ns[:op.max_depth] for ns in found})
    return found[op.offset:op.offset + op.limit]


def _ns_match(cond: MatchCondition, ns: tuple[str, ...]) -> bool:
    path = tuple(cond.path)
    if len(ns) < len(path):
        return False
    part = ns[:len(path)] if cond.match_type == "prefix" else ns[len(ns) - len(path):]
    return all(p == "*" or p == n for p, n in zip(path, part, strict=True))


_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "$eq": lambda a, b: a == b, "$ne": lambda a, b: a != b,
    "$gt": lambda a, b: a > b, "$gte": lambda a, b: a >= b,
    "$lt": lambda a, b: a < b, "$lte": lambda a, b: a <= b,
}


def _matches(value: Any, flt: Any) -> bool:
    """LangGraph's filter language: exact values (nested mappings compared field by field) and ``$eq``,
    ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``. A comparison of unlike types does not match."""
    if isinstance(flt, Mapping):
        if any(str(k).startswith("$") for k in flt):
            for op, want in flt.items():
                fn = _OPS.get(op)
                if fn is None:
                    raise InvalidInput(f"unknown filter operator {str(op)[:20]!r}")
                try:
                    if not fn(value, want):
                        return False
                except TypeError:
                    return False
            return True
        return isinstance(value, Mapping) and all(_matches(value.get(k), v) for k, v in flt.items())
    return bool(value == flt)

