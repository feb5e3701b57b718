"""Agent tools: JSON schemas (OpenAI Chat Completions and Responses, Anthropic, MCP; OpenAI strict mode) and
the dispatcher.

No schema has a tenant, user or agent parameter (S2): identity comes from the session the application opened.
Arguments are validated with pydantic (unknown fields are refused), and every outcome — success or error — is a
JSON-serialisable dict, so an agent always gets a clear answer and never a stack trace.
"""

from __future__ import annotations

import copy
import functools
import logging
import re
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from memwarden.errors import MemwardenError
from memwarden.records import Record, SourceType, iso
from memwarden.timevalues import iso_expiry

if TYPE_CHECKING:
    from memwarden.session import Session

log = logging.getLogger("memwarden.tools")

KindName = Literal["preference", "fact", "episode", "procedure", "reminder", "task_state"]
SensitivityName = Literal["public", "internal", "confidential", "secret"]


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class SaveArgs(_Args):
    """Save a new memory. Write durable preferences and facts about the user or the work, stated as facts
    ("User prefers Go for services"), not instructions to yourself. Do not save secrets or credentials, details
    that only matter for the current task, or text copied from web pages, files or tool output. Saved memories
    appear in the memory block of the next session, not this one."""

    content: Annotated[str, Field(description="The memory, one fact or preference, at most 10 KB.")]
    kind: Annotated[KindName, Field(description="What sort of memory this is.")] = "fact"
    ttl_days: Annotated[Annotated[int, Field(ge=1, le=365)] | Literal["keep"] | None, Field(
        description='Keep it this many days (1-365, default 30). "keep" (until the user deletes it) only for what '
                    "the user asked to keep, and only where the operator's policy allows it: otherwise the save "
                    "is refused.")] = None
    due: Annotated[str | None, Field(max_length=64, description="Reminders only (refused on other kinds): due "
                                     "time, ISO-8601 (e.g. 2026-12-01T09:00Z), not more than 1.5 days ago.")
                   ] = None
    sensitivity: Annotated[SensitivityName | None, Field(description="How sensitive it is.")] = None
    confidence: Annotated[float, Field(ge=0, le=1, description="How sure you are, 0 to 1.")] = 1.0


class UpdateArgs(_Args):
    """Replace the content of a memory you can see. Pass the version you last viewed; if it changed meanwhile
    the update is refused and you should view it again."""

    id: Annotated[str, Field(description="Memory id.")]
    content: Annotated[str, Field(description="The new content.")]
    expected_version: Annotated[int, Field(ge=1, description="The version you last read.")]


class RemoveArgs(_Args):
    """Delete one memory by id (it is removed from every index)."""

    id: Annotated[str, Field(description="Memory id.")]


class ClearArgs(_Args):
    """Delete every memory in your own scope, or only those of one kind. Cannot be undone."""

    confirm: Annotated[bool, Field(description="Must be true.")]
    kind: Annotated[KindName | None, Field(description="Only this kind.")] = None


class SearchArgs(_Args):
    """Search your memories (live: includes what you saved this session)."""

    query: Annotated[str, Field(description="Words to look for (read up to 2,000 characters).")]
    k: Annotated[int, Field(ge=1, le=50, description="How many results.")] = 5
    kind: Annotated[KindName | None, Field(description="Only this kind.")] = None


class ViewArgs(_Args):
    """Show one memory by id (full content and version), or list your current memories when no id is given."""

    id: Annotated[str | None, Field(description="Memory id; omit to list.")] = None
    kind: Annotated[KindName | None, Field(description="When listing: only this kind.")] = None
    limit: Annotated[int, Field(ge=1, le=100, description="When listing: at most this many.")] = 20


TOOLS: dict[str, type[_Args]] = {
    "memory_save": SaveArgs,
    "memory_update": UpdateArgs,
    "memory_remove": RemoveArgs,
    "memory_clear": ClearArgs,
    "memory_search": SearchArgs,
    "memory_view": ViewArgs,
}
TOOL_NAMES = tuple(TOOLS)
WRITE_TOOL_NAMES = frozenset({"memory_save", "memory_update", "memory_remove", "memory_clear"})
"""The tools that write: a server's per-token write limit counts their calls."""
_PROMOTION_LIKE = re.compile(r"promot|approv|unquarantin|trust|whitelist|allowlist|review|release_held|unhold",
                             re.IGNORECASE)


def _parameters(model: type[_Args]) -> dict[str, Any]:
    """The tool's JSON schema: computed once per model (pydantic's schema generation is ~0.5 ms a tool, and MCP
    over HTTP looks a tool's schema up on every call); a fresh copy each time, so a caller may change it."""
    return copy.deepcopy(_schema(model))


def input_schema(name: str) -> dict[str, Any] | None:
    """The JSON schema of memwarden's tool ``name`` (``None`` for another name)."""
    model = TOOLS.get(name)
    return None if model is None else _parameters(model)


@functools.cache
def _schema(model: type[_Args]) -> dict[str, Any]:
    schema = model.model_json_schema()
    schema.pop("title", None)
    schema.pop("description", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
        for alt in prop.get("anyOf", ()):  # a one-value Literal ("keep"): enum is what every tool API reads
            if "const" in alt:
                alt["enum"] = [alt.pop("const")]
    schema["additionalProperties"] = False
    return schema


def description(model: type[BaseModel]) -> str:
    """A tool's description: its argument model's docstring on one line."""
    return " ".join((model.__doc__ or "").split())


def strict_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` rewritten for OpenAI strict mode (structured outputs): in every object, nested ones too, every
    property is required, an optional one becomes nullable (``anyOf [..., {"type": "null"}]``) and loses its
    ``default``, and ``additionalProperties`` is false. The dispatcher treats a null for an optional argument as
    omitted, so a strict-mode call means what the same call without those nulls means. Returns a new dict."""
    out = copy.deepcopy(schema)
    _make_strict(out)
    return out


def _make_strict(node: Any) -> None:
    if isinstance(node, list):
        for item in node:
            _make_strict(item)
        return
    if not isinstance(node, dict):
        return
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        _make_strict(node.get(key))
    for key in ("items", "additionalItems", "not"):
        _make_strict(node.get(key))
    for defs in ("$defs", "definitions"):
        for sub in (node.get(defs) or {}).values():
            _make_strict(sub)
    props = node.get("properties")
    if node.get("type") == "object" or isinstance(props, dict):
        props = props if isinstance(props, dict) else {}
        node["properties"] = props
        required = set(node.get("required", ()))
        for name, prop in props.items():
            _make_strict(prop)
            prop.pop("default", None)
            if name not in required:
                props[name] = _nullable(prop)
        node["required"] = list(props)
        node["additionalProperties"] = False


def _nullable(prop: dict[str, Any]) -> dict[str, Any]:
    alts = prop.get("anyOf")
    if isinstance(alts, list):
        if not any(isinstance(a, dict) and a.get("type") == "null" for a in alts):
            alts.append({"type": "null"})
        return prop
    described = {k: prop.pop(k) for k in ("description", "title") if k in prop}
    return {"anyOf": [prop, {"type": "null"}], **described}


FORMATS = ("openai", "chat_completions", "responses", "anthropic", "mcp")
"""Tool-schema formats: ``openai`` = ``chat_completions`` (Chat Completions ``{"type": "function", "function":
{...}}``), ``responses`` (OpenAI Responses API flat function tools), ``anthropic`` (Messages ``input_schema``),
``mcp`` (MCP ``Tool``: ``inputSchema``)."""


def format_tool(fmt: str, name: str, description: str, parameters: dict[str, Any], *,
                strict: bool = False) -> dict[str, Any]:
    """One tool definition in ``fmt`` (see :data:`FORMATS`). ``strict`` rewrites ``parameters`` with
    :func:`strict_schema` and, for the OpenAI formats, sets ``strict: true``."""
    if fmt not in FORMATS:
        raise ValueError(f"fmt must be one of {', '.join(FORMATS)}; got {fmt!r}")
    params = strict_schema(parameters) if strict else parameters
    if fmt in ("openai", "chat_completions"):
        fn: dict[str, Any] = {"name": name, "description": description, "parameters": params}
        if strict:
            fn["strict"] = True
        return {"type": "function", "function": fn}
    if fmt == "responses":
        return {"type": "function", "name": name, "description": description, "parameters": params,
                "strict": strict}
    if fmt == "anthropic":
        return {"name": name, "description": description, "input_schema": params}
    return {"name": name, "description": description, "inputSchema": params}


def tool_schemas(fmt: str = "openai", *, strict: bool = False) -> list[dict[str, Any]]:
    """memwarden's six agent tools in ``fmt`` (see :data:`FORMATS`); ``strict=True`` for OpenAI strict mode."""
    return [format_tool(fmt, n, description(m), _parameters(m), strict=strict) for n, m in TOOLS.items()]


def openai_tools(*, strict: bool = False) -> list[dict[str, Any]]:
    """Schemas in the OpenAI Chat Completions function-calling format (``tools=[...]``)."""
    return tool_schemas("chat_completions", strict=strict)


def anthropic_tools() -> list[dict[str, Any]]:
    """Schemas in the Anthropic tool-use format (``tools=[...]``)."""
    return tool_schemas("anthropic")


def _omit_nulls(model: type[_Args], arguments: dict[str, Any]) -> dict[str, Any]:
    """A null for an optional argument means "omitted" (what OpenAI strict mode sends for an argument the model
    leaves out); a null for a required argument or an unknown one stays, and is refused."""
    if not any(v is None for v in arguments.values()):
        return arguments
    fields = model.model_fields
    return {k: v for k, v in arguments.items()
            if not (v is None and k in fields and not fields[k].is_required())}


def record_for_agent(r: Record, *, full: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {"id": r.id, "kind": r.kind, "version": r.version, "updated_at": iso(r.updated_at),
                           "expires_at": iso_expiry(r.expires_at), "confidence": r.confidence,
                           "sensitivity": r.sensitivity_name, "trust": r.provenance.trust,
                           "content": r.content if full else r.preview(120)}
    if r.due_at is not None:
        out["due"] = iso(r.due_at)
    return out


def _error(code: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"error": code, "message": message, **extra}


def dispatch(session: Session, name: str, arguments: Any) -> dict[str, Any]:
    """Run one tool call for ``session``; always returns a JSON-serialisable dict."""
    if not isinstance(name, str):
        return _error("unknown_tool", f"a tool name must be a string; available: {', '.join(TOOL_NAMES)}")
    model = TOOLS.get(name)
    if model is None:
        provider = session.service.providers.provider
        if provider is not None and name in {t.get("name") for t in provider.tool_schemas()}:
            try:
                return {"result": provider.call_tool(name, arguments or {}, session.scope)}
            except Exception as exc:  # the provider is outside our control; report, never raise
                return _error("provider_error", f"{provider.name}: {type(exc).__name__}: {exc}")
        if _PROMOTION_LIKE.search(name):  # T3: an agent reaching for approval is a security event
            session.service.record_event(session.context, "promotion_refused",
                                         {"via": "tool", "tool": name[:100]})
            return _error("forbidden", f"there is no tool {name[:100]!r}: approving, promoting or trusting "
                                       "memories is an operator action, not an agent tool (T3)")
        return _error("unknown_tool", f"no tool named {name!r}; available: {', '.join(TOOL_NAMES)}")
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        return _error("invalid_arguments", f"{name} takes a JSON object of arguments")
    try:
        args = model.model_validate(_omit_nulls(model, arguments))
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}"
                             for e in exc.errors(include_url=False))
        return _error("invalid_arguments", f"{name}: {problems}")
    try:
        return _run(session, args)
    except MemwardenError as exc:
        return exc.to_dict()
    except Exception:  # never a stack trace to the agent; the operator gets it in the log
        log.exception("memwarden tool %s failed", name)
        return _error("internal", f"{name} failed with an internal error; an operator can find the details "
                                  "in the memwarden log")


def _run(session: Session, args: _Args) -> dict[str, Any]:
    if isinstance(args, SaveArgs):
        return session.save(args.content, kind=args.kind, source=SourceType.MODEL, ttl_days=args.ttl_days,
                            due=args.due, sensitivity=args.sensitivity, confidence=args.confidence).to_dict()
    if isinstance(args, UpdateArgs):
        return session.update(args.id, args.content, expected_version=args.expected_version,
                              source=SourceType.MODEL).to_dict()
    if isinstance(args, RemoveArgs):
        return {"status": "removed", "ids": session.remove(args.id)}
    if isinstance(args, ClearArgs):
        if not args.confirm:
            return _error("invalid_arguments", "memory_clear needs confirm=true")
        ids = session.clear(args.kind)
        return {"status": "cleared", "count": len(ids), "ids": ids}
    if isinstance(args, SearchArgs):
        return {"results": [record_for_agent(r) for r in session.search(args.query, k=args.k, kind=args.kind)]}
    assert isinstance(args, ViewArgs)
    if args.id is not None:
        return {"memory": record_for_agent(session.view(args.id))}
    listed = session.view(kind=args.kind, limit=args.limit)
    return {"memories": [record_for_agent(r, full=False) for r in listed], "count": len(listed)}
