"""OpenAI Responses items and Chat Completions messages → the tool calls a session's taint ledger records.

No SDK import: items may be dicts (the SDKs' TypedDicts) or pydantic models (the SDKs' response types).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from memwarden.session import Session

Call = tuple[str, str, Any]
"""(call id, the name the taint policy judges — "" for tool output of unknown origin, arguments)."""


def plain(item: Any) -> dict[str, Any]:
    """An item as a dict (the SDKs pass TypedDicts and pydantic models)."""
    if isinstance(item, dict):
        return item
    dump = getattr(item, "model_dump", None)
    if callable(dump):
        try:
            out = dump()
            return out if isinstance(out, dict) else {}
        except Exception:
            pass
    return {"type": getattr(item, "type", None)}


def responses_calls(items: Iterable[Any], seen: set[str], *, history: bool,
                    resolve: Callable[[str], str | None] = lambda name: name) -> list[Call]:
    """The tool calls among Responses ``items`` whose id is not in ``seen`` (a call without an id always counts):
    a function call under ``resolve(name)`` (``None``: not a tool call — a handoff — and marked seen), a custom
    tool call by its name, a hosted MCP call as ``<server_label>__<tool>``, any other hosted call by its type
    (``web_search``, ``file_search``, ``code_interpreter``, …). With ``history``, a ``*_call_output`` whose call is
    not known is tool output of unknown origin. ``seen`` is not changed, except for handoffs."""
    out: list[Call] = []
    new_ids: set[str] = set()
    for raw in items:
        item = plain(raw)
        typ = item.get("type")
        if not isinstance(typ, str):
            continue
        key = str(item.get("call_id") or item.get("id") or "")
        if key and (key in seen or key in new_ids):
            continue
        if typ == "function_call":
            name = resolve(str(item.get("name") or ""))
            if name is None:
                if key:
                    seen.add(key)
                continue
            out.append((key, name, item.get("arguments")))
        elif typ == "custom_tool_call":
            out.append((key, str(item.get("name") or "custom_tool"), {"input": item.get("input")}))
        elif typ == "mcp_call":
            out.append((key, f"{item.get('server_label') or 'mcp'}__{item.get('name') or 'tool'}",
                        item.get("arguments")))
        elif typ.endswith("_call"):
            action = item.get("action")
            out.append((key, typ[: -len("_call")], action if isinstance(action, dict) else {}))
        elif history and typ.endswith("_call_output"):
            out.append((key, "", typ))
        else:
            continue
        if key:
            new_ids.add(key)
    return out


def chat_calls(messages: Iterable[Any], seen: set[str], *, history: bool) -> list[Call]:
    """The tool calls in Chat Completions ``messages`` (an assistant message's ``tool_calls``) whose id is not
    in ``seen``; with ``history``, a ``tool`` message answering an unknown call is tool output of unknown origin."""
    out: list[Call] = []
    known = set(seen)
    for raw in messages:
        msg = plain(raw)
        for call in msg.get("tool_calls") or ():
            c = plain(call)
            key = str(c.get("id") or "")
            if key and key in known:
                continue
            fn = plain(c.get("function") or c.get("custom") or {})
            args = fn.get("arguments") if "arguments" in fn else {"input": fn.get("input")}
            out.append((key, str(fn.get("name") or "tool"), args))
            if key:
                known.add(key)
        if history and msg.get("role") in ("tool", "function"):
            key = str(msg.get("tool_call_id") or "")
            if not key or key not in known:
                out.append((key, "", "tool message"))
                if key:
                    known.add(key)
    return out


def record(session: Session, calls: list[Call]) -> None:
    """Put ``calls`` into ``session``'s ledger (T1); tool output of unknown origin is untrusted ingest."""
    for _key, name, args in calls:
        if name:
            session.record_tool_call(name, args if args is not None else {})
        else:
            session.record_ingest(f"{args} without its call in the conversation", "tool")
