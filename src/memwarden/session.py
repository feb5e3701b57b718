"""A session: one bound identity, a frozen prompt snapshot (P1) and live tool reads (P2).

The memory block is rendered once, when the session starts, and kept as a string: ``system_block()`` returns the
same bytes for the whole session whatever is written meanwhile, so the model's prompt-cache prefix never moves.
``view``/``search`` read the live store, so the agent is never misinformed about what it just saved.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from collections.abc import Iterable, MutableMapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

from memwarden import host_ingest, procedures, tools
from memwarden.errors import InvalidInput, MemwardenError
from memwarden.extract import ExtractionReport, Extractor, extract_into
from memwarden.ids import new_id
from memwarden.prompt_block import BlockEntry, render_memory_block, render_reminders_block
from memwarden.records import Kind, Record, SourceType, Trust, iso
from memwarden.scope import Scope
from memwarden.service import UNSET, Context, WriteResult
from memwarden.taint import Ledger, TaintDecision
from memwarden.timevalues import parse_due
from memwarden.turns import ROLES, TextPart, ToolCall, read_turns, split_text

SAVE_SOURCES = (SourceType.USER, SourceType.MODEL, SourceType.TOOL, SourceType.IMPORT, SourceType.OPERATOR)


@dataclass(frozen=True, slots=True)
class RecordedTurn:
    """One stored part of a conversation turn: which message it came from and what the write path decided."""

    index: int  # the message's position in the list given to record_turns
    role: str  # user | assistant | tool
    part: int  # 1-based part number (a turn longer than the record limit is stored in parts)
    parts: int
    result: WriteResult | MemwardenError

    @property
    def status(self) -> str:
        """accepted | review | rejected, or ``error`` when the write failed (e.g. capacity)."""
        return self.result.status if isinstance(self.result, WriteResult) else "error"

if TYPE_CHECKING:
    from memwarden.service import MemoryService


def _entry(r: Record) -> BlockEntry:
    return BlockEntry(id=r.id, kind=r.kind, created_at=iso(r.created_at) or "", sensitivity=r.sensitivity_name,
                      confidence=r.confidence, trust=r.provenance.trust, content=r.content,
                      due_at=iso(r.due_at))


def workspace_roots(workspace: Any) -> tuple[str, ...]:
    """T1: the session's workspace roots, resolved. One path (a ``str`` or ``PathLike``) is one root — never its
    characters; the filesystem root is refused, since it would make every file read trusted."""
    if isinstance(workspace, (str, os.PathLike)):
        workspace = (workspace,)
    if isinstance(workspace, bytes) or not all(isinstance(w, (str, os.PathLike)) for w in workspace):
        raise InvalidInput("workspace is a path, or a list of paths, of the directories the agent may read")
    roots = tuple(str(Path(w).expanduser().resolve()) for w in workspace)
    if any(r == "/" or Path(r).parent == Path(r) for r in roots):
        raise InvalidInput("the filesystem root cannot be a workspace: every file read would count as trusted "
                           "(T1); name the project's directories")
    return roots


class Session:
    def __init__(self, service: MemoryService, scope: Scope, *, workspace: Sequence[str | os.PathLike[str]],
                 clearance: int, read_shared: bool, source_type: str = SourceType.MODEL) -> None:
        if not isinstance(scope, Scope):
            raise InvalidInput("session() needs a memwarden.Scope bound by the application (S2)")
        self.service = service
        self.scope = scope
        self.id = new_id()
        self.workspace = workspace_roots(workspace)
        actor = f"agent:{scope.agent}" if scope.agent else f"user:{scope.user}"
        self._base = Context(scope=scope, session_id=self.id, source_type=source_type, actor=actor,
                             clearance=clearance, read_shared=read_shared)
        self.ledger = Ledger(service.policy.taint, self.workspace)  # T1
        # what hosts report for this scope from other processes (memwarden hook, POST /v1/ingest), issue 13
        self._reports = host_ingest.ReportCursor(service, scope)
        self._reports.pull(self.ledger)
        self._ctx, self._ctx_at = self._base, 0
        self.closed = False
        self.skipped_turns: list[tuple[int, str]] = []  # what the last record_turns left out, and why
        service.open_session(self.id)
        self._block, self.snapshot_sha256 = self._snapshot()

    @property
    def context(self) -> Context:
        """Who is acting, with this session's taint and sources as of now (rebuilt only when they change)."""
        ledger = self.ledger
        if ledger.changes != self._ctx_at:
            self._ctx = replace(self._base, trust=Trust.UNTRUSTED if ledger.tainted else Trust.TRUSTED,
                                taint=tuple(ledger.reasons), sources=ledger.sources)
            self._ctx_at = ledger.changes
        return self._ctx

    # --- T1: the taint ledger ----------------------------------------------------------------------------------

    def record_tool_call(self, name: str, arguments: dict[str, Any] | str | None = None,
                         result_meta: dict[str, Any] | None = None) -> TaintDecision:
        """Tell memwarden the agent called a tool (T1). Web fetches, web search, MCP tools (``server__tool``),
        sub-agents, unknown tools, unparseable arguments and file reads outside the workspace taint the session:
        from then on everything it saves is held for operator review. ``result_meta`` may name the URL or path
        the result came from, or set ``untrusted: True``."""
        return self.ledger.record_tool_call(name, arguments, result_meta)

    def record_ingest(self, source: str, kind: str) -> TaintDecision:
        """Tell memwarden the session took in content that did not come through a tool call: ``kind`` is
        ``user`` for the user's own words (trusted), or ``paste``, ``attachment``, ``document``, ``email``, …
        (untrusted unless the taint policy trusts that kind)."""
        return self.ledger.record_ingest(source, kind)

    @property
    def tainted(self) -> bool:
        """True once the session ingested untrusted content (monotonic), reports of its host included."""
        self.sync_reports()
        return self.ledger.tainted

    def sync_reports(self) -> None:
        """Apply what hosts reported for this session's scope since it last looked (:mod:`memwarden.host_ingest`:
        ``memwarden hook``, ``POST /v1/ingest``); every write does this first."""
        self._reports.pull(self.ledger)

    def _recalled(self, records: Iterable[Record], via: str) -> None:
        """T7: memories that reached the session are ingest — an automatically approved one taints it, and the
        text of an operator-approved (still untrusted) one is remembered for :meth:`repeating`."""
        ledger = self.ledger
        for r in records:
            p = r.provenance
            if p.trust != Trust.TRUSTED:
                ledger.record_recall(r.id, p.trust, p.approval, r.content, via)

    def repeating(self, ctx: Context, content: Any) -> Context:
        """``ctx`` for a write of ``content``, naming the untrusted memories recalled into this session that it
        repeats or contains (T7): the write path then stores it as untrusted."""
        if not self.ledger.recalled:
            return ctx
        found = self.ledger.repeats(content)
        return replace(ctx, repeats=found) if found else ctx

    # --- P1/P3/P4: the frozen block ----------------------------------------------------------------------------

    def _snapshot(self) -> tuple[str, str]:
        svc, ctx = self.service, self.context
        records, total = svc.block_records(ctx)
        reminders, due_total = svc.due_reminders(ctx)
        block = render_memory_block([_entry(r) for r in records], total, max_entries=svc.policy.block_entries)
        if reminders:
            block += "\n" + render_reminders_block([_entry(r) for r in reminders], due_total,
                                                   max_entries=svc.policy.block_entries)
        digest = hashlib.sha256(block.encode("utf-8")).hexdigest()
        shown = [r.id for r in records] + [r.id for r in reminders]
        svc.begin_session(ctx, self.workspace, digest, shown, total)
        self._recalled(records, "memory block")
        self._recalled(reminders, "reminders block")
        return block, digest

    def system_block(self) -> str:
        """The memory block built at session start; byte-identical for the whole session (P1)."""
        return self._block

    # --- writes: every one goes through MemoryService.write (gate → taint → sign → store → audit) -------------

    def _live(self) -> None:
        if self.closed:
            raise InvalidInput(f"session {self.id} is closed; start a new session")

    def _said_by(self, source: str | None) -> Context:
        """The context of a write whose words came from ``source`` (R2: the application says who said it).
        ``tool`` output is ingest too (T1): it taints the session before the write, so the write is held."""
        self.sync_reports()
        if source is None:
            return self.context
        if source not in SAVE_SOURCES:
            raise InvalidInput(f"source must be one of {', '.join(SAVE_SOURCES)}; got {str(source)[:40]!r}")
        if source == SourceType.TOOL:
            self.ledger.record_ingest("saved tool output", "tool")
        return replace(self.context, source_type=source)

    def save(self, content: str, kind: str = Kind.FACT, *, source: str | None = None, confidence: float = 1.0,
             sensitivity: str | None = None, ttl_days: int | str | None = None, due: Any = None,
             metadata: dict[str, Any] | None = None, ttl_minutes: int | None = None) -> WriteResult:
        """Save a memory through the write gate. ``source`` says who said it (``user``, ``model``, ``tool``,
        ``import``, ``operator``; default: the session's, ``model``): the gate is sized to it and to ``kind``
        (G8), and it is kept in the record's provenance (R2). The agent's own tools always write ``model``.
        ``ttl_days``: 1..365 days (default: the kind's policy), or ``"keep"`` (until deleted) where the kind's
        ``KindLimits.keep_sources`` names ``source`` (by default only ``operator``; R3); or ``ttl_minutes``, a
        shorter retention in minutes."""
        self._live()
        return self.service.write(self.repeating(self._said_by(source), content), content, kind=kind,
                                  confidence=confidence,
                                  sensitivity=sensitivity, ttl_days=ttl_days, due_at=parse_due(due),
                                  metadata=metadata, ttl_minutes=ttl_minutes)

    def update(self, memory_id: str, content: str, *, expected_version: int, source: str | None = None,
               confidence: float | None = None, sensitivity: str | None = None, ttl_days: int | str | None = None,
               due: Any = None, metadata: dict[str, Any] | None = None,
               ttl_minutes: int | None = None) -> WriteResult:
        """Write a new version of a memory in this scope; refused if it is no longer at ``expected_version``.
        Confidence, sensitivity, retention and metadata stay as they were unless given."""
        self._live()
        ctx = self._said_by(source)
        current = self.service.get(ctx, memory_id)
        return self.service.write(self.repeating(ctx, content), content, kind=current.kind,
                                  confidence=UNSET if confidence is None else confidence,
                                  sensitivity=sensitivity, ttl_days=ttl_days, due_at=parse_due(due),
                                  metadata=metadata, update_id=memory_id, expected_version=expected_version,
                                  ttl_minutes=ttl_minutes)

    def record_turns(self, messages: Iterable[Any], *, ttl_days: int | str | None = None,
                     sensitivity: str | None = None) -> list[RecordedTurn]:
        """Store conversation turns as episodes, each through the write gate with the source of its role
        (``user`` → user, ``assistant`` → model, ``tool`` → tool; G8: a question or a request someone made is a
        record of what was said and is kept; what would act on a model when replayed is still refused).

        ``messages`` is a chat API's message list as it is (see :mod:`memwarden.turns`: plain text, content
        blocks, OpenAI ``tool_calls``, Anthropic ``tool_use``/``tool_result``). Tool calls go into the taint
        ledger (T1) and tool output counts as ingest, so everything after it in this session is untrusted.
        System and developer messages are skipped. A turn longer than the record limit is stored in parts.
        The whole list is validated first: a malformed message raises :class:`InvalidInput` naming it, and
        nothing is stored. Returns one :class:`RecordedTurn` per stored part, in order."""
        self._live()
        self.sync_reports()
        turns = read_turns(messages)
        limit = self.service.policy.max_record_bytes
        out: list[RecordedTurn] = []
        batch: list[tuple[TextPart, int, int, dict[str, Any]]] = []  # (turn, part, parts, write arguments)
        batch_ctx: Context | None = None

        def flush() -> None:
            nonlocal batch_ctx
            if batch and batch_ctx is not None:
                results = self.service.write_many(batch_ctx, [kw for *_, kw in batch])
                for (turn, j, n, _kw), res in zip(batch, results, strict=True):
                    out.append(RecordedTurn(turn.index, turn.role, j, n, res))
            batch.clear()
            batch_ctx = None

        for item in turns.parts:
            if isinstance(item, ToolCall):
                flush()
                self.ledger.record_tool_call(item.name, item.arguments)
                continue
            if item.role == "tool":
                flush()
                self.ledger.record_ingest(item.name or "tool output", "tool")
            base = replace(self.context, source_type=ROLES[item.role])
            pieces = split_text(item.text, limit)
            for j, piece in enumerate(pieces, start=1):
                ctx = self.repeating(base, piece)
                if ctx != batch_ctx:
                    flush()
                    batch_ctx = ctx
                md: dict[str, Any] = {"role": item.role, "turn": item.index}
                if item.name:
                    md["name"] = item.name[:200]
                if len(pieces) > 1:
                    md["part"], md["parts"] = j, len(pieces)
                batch.append((item, j, len(pieces), {"content": piece, "kind": Kind.EPISODE, "metadata": md,
                                                     "ttl_days": ttl_days, "sensitivity": sensitivity}))
        flush()
        self.skipped_turns = list(turns.skipped)
        return out

    def remove(self, memory_id: str) -> list[str]:
        self._live()
        self.sync_reports()
        return self.service.remove(self.context, memory_id)

    def clear(self, kind: str | None = None) -> list[str]:
        """Delete every memory in exactly this session's scope (S4)."""
        self._live()
        self.sync_reports()
        return self.service.clear(self.context, kind)

    # --- P2: live reads ----------------------------------------------------------------------------------------

    def search(self, query: str, k: int = 5, kind: str | None = None) -> list[Record]:
        self._live()
        found = self.service.search(self.context, query, k=k, kind=kind)
        self.service.log_reads(self.context, "read", found, {"via": "search"})
        self._recalled(found, "search")
        return found

    @overload
    def view(self, memory_id: str) -> Record: ...
    @overload
    def view(self, memory_id: None = None, *, kind: str | None = None, limit: int = 100,
             item_key: str | None = None, item_prefix: str | None = None) -> list[Record]: ...

    def view(self, memory_id: str | None = None, *, kind: str | None = None, limit: int = 100,
             item_key: str | None = None, item_prefix: str | None = None) -> Record | list[Record]:
        """One memory by id, or the newest visible ones (of ``kind``; keyed items, :mod:`memwarden.items`: with
        the key ``item_key``, or in namespaces starting ``item_prefix``). Every read is logged (A2) and what an
        untrusted memory brings into the session counts as ingest (T7)."""
        self._live()
        if memory_id is not None:
            rec = self.service.get(self.context, memory_id)
            self.service.log_reads(self.context, "read", [rec], {"via": "view"})
            self._recalled([rec], "view")
            return rec
        found = self.service.list_records(self.context, kind=kind, limit=limit, item_key=item_key,
                                          item_prefix=item_prefix)
        self.service.log_reads(self.context, "read", found, {"via": "list"})
        self._recalled(found, "list")
        return found

    def item_namespaces(self, prefix: str | None = None, limit: int = 1000) -> list[str]:
        """The namespaces of the keyed items this session may see (:mod:`memwarden.items`)."""
        self._live()
        return self.service.item_namespaces(self.context, prefix, limit)

    # --- T4 / T5 ------------------------------------------------------------------------------------------------

    def extract_facts(self, extractor: Extractor, turns: Iterable[Any]) -> ExtractionReport:
        """Extract candidate memories from conversation turns with ``extractor`` (T4). Does nothing unless
        ``Policy.extract_facts`` is on, and never for a tainted session; every candidate passes the gate and the
        confidence threshold, and extracted facts at capacity evict lower-confidence extracted ones (D1)."""
        self._live()
        self.sync_reports()
        return extract_into(self, extractor, turns)

    def match_procedures(self, text: str, limit: int = 5) -> list[Record]:
        """Procedures whose trigger phrases occur in ``text`` — only trusted or operator-approved ones (T5)."""
        self._live()
        found = procedures.match(self.service, self.context, text, limit)
        if found:
            self.service.log_reads(self.context, "read", found, {"via": "procedure"})
            self._recalled(found, "procedure")
        return found

    # --- agent tools -------------------------------------------------------------------------------------------

    def tool_schemas(self, fmt: str = "openai", *, strict: bool = False) -> list[dict[str, Any]]:
        """Tool definitions for function calling, with a registered provider's tools after memwarden's.
        ``fmt``: ``"openai"``/``"chat_completions"``, ``"responses"`` (OpenAI Responses flat function tools),
        ``"anthropic"`` or ``"mcp"``; ``strict=True`` rewrites every schema for OpenAI strict mode (every
        property required, optional ones nullable, ``additionalProperties: false``) — :meth:`call_tool` takes a
        null for an optional memwarden argument as omitted."""
        if fmt not in tools.FORMATS:
            raise InvalidInput(f"fmt must be one of {', '.join(tools.FORMATS)}")
        schemas = tools.tool_schemas(fmt, strict=strict)
        provider = self.service.providers.provider
        if provider is not None:
            for t in provider.tool_schemas():
                schemas.append(tools.format_tool(fmt, str(t["name"]), str(t.get("description", "")),
                                                 dict(t.get("parameters") or {"type": "object"}), strict=strict))
        return schemas

    def call_tool(self, name: str, arguments: dict[str, Any] | str | None = None) -> dict[str, Any]:
        """Dispatch an agent tool call; ``arguments`` may be a dict or the JSON string a model produced. Never
        raises: every outcome, an internal failure included, is a JSON-serialisable dict."""
        try:
            if isinstance(arguments, str):
                try:
                    arguments = json.loads(arguments) if arguments.strip() else {}
                except json.JSONDecodeError as exc:
                    return {"error": "invalid_arguments", "message": f"arguments are not valid JSON: {exc.msg}"}
                except RecursionError:
                    return {"error": "invalid_arguments", "message": "arguments are nested too deeply"}
                except ValueError as exc:  # an integer of more than 4,300 digits (Python's int parsing limit)
                    return {"error": "invalid_arguments", "message": f"arguments are not usable JSON: {exc}"[:300]}
            self._live()
            return tools.dispatch(self, name, arguments)
        except MemwardenError as exc:
            return exc.to_dict()
        except Exception as exc:  # never a stack trace to the agent; the operator gets it in the log
            tools.log.error("memwarden tool call failed: %s", type(exc).__name__, exc_info=True)
            return {"error": "internal", "message": "the tool call failed with an internal error; an operator can "
                                                    "find the details in the memwarden log"}

    # --- lifecycle ---------------------------------------------------------------------------------------------

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        ledger = self.ledger
        self.service.end_session(self.context, {"tainted": ledger.tainted, "taint": list(ledger.reasons),
                                                "sources": list(ledger.sources), "recorded": ledger.calls})

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


log = logging.getLogger("memwarden.session")


def close_quietly(session: Session) -> None:
    """End ``session``; a failure is logged, never raised (a server ending many sessions carries on)."""
    try:
        session.close()
    except Exception:
        log.exception("closing session %s failed", session.id)


def close_all(lock: threading.Lock, held: MutableMapping[Any, Any]) -> None:
    """End every session a server's registry holds (``held``: entries with ``.session`` and their own
    ``.lock``, guarded by ``lock``) and empty it; each is ended under its own lock, after any call in flight."""
    with lock:
        gone = list(held.values())
        held.clear()
    for h in gone:
        with h.lock:
            close_quietly(h.session)
