"""Taint over the wire (issue 13; T1, T2, T6): what a host reports its sessions ingested, across processes, and
what a session is when nobody reports it.

A memwarden server cannot see the host's other tool calls — the web pages, files and other MCP servers' results
the model read went through the host. A host reports them in one of three ways:

1. **Per session**, over REST: ``POST /v1/sessions/{id}/ingest`` records tool calls and documents in that
   session's ledger (the library's ``record_tool_call``/``record_ingest``).
2. **Per scope**, from another process: ``memwarden hook`` (a tool-use hook of the host, e.g. Claude Code's
   PreToolUse/PostToolUse) or ``POST /v1/ingest``. The call is judged by the session taint policy (T1, the same
   :class:`memwarden.taint.Ledger` logic) and a call that taints becomes a **host ingest report**: a signed row of
   ``host_reports`` scoped by tenant/user/agent, with an audit event per reported call (tainting or not).
3. **A token profile** (``memwarden token create --host-reports-ingest``, a signed field of the token row) says
   the host does one of the above. Without it — and with no ``--host-reports-ingest`` for a local ``memwarden mcp``
   set-up — a session over any transport (REST, MCP stdio, MCP HTTP) starts untrusted
   (:func:`start_session`): its saves are held for review, each saying why.

The cross-process channel: every session (of any transport, and of the library) keeps a cursor, the seq of the
last report of its scope it has seen; before each write it reads the reports after it (one probe of the
``(tenant, user_id, agent, seq)`` index, a few microseconds when there are none), verifies each row's signature
and applies it to its ledger: the session is tainted from then on (monotonic). A report taints every session of
its scope open when it is made, in every process sharing the store, and — because the host's conversation may
have read the page before memwarden's session began — every session the scope starts within
``Policy.host_report_window_seconds`` (a day) after it. The scope is the whole (tenant, user, agent): reports are
not tied to one session, since the host's session id means nothing to memwarden; two hosts sharing one agent
scope taint each other's sessions. Over-tainting is the safe direction: a clean save is held for review, never
the reverse. A row that fails verification taints (fail closed, T6); a report can only take trust away, so a
forged one grants nothing. Deleting rows around the API would hide reports from sessions — as deleting any row
would — but the chained audit log keeps every report (``host_ingest_reported``) and ``audit verify`` sees a gap.
"""

from __future__ import annotations

import hmac
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memwarden.records import now_ms
from memwarden.scope import Scope
from memwarden.taint import MAX_SOURCE_CHARS, Ledger, TaintDecision, TaintPolicy
from memwarden.tools import TOOL_NAMES

if TYPE_CHECKING:
    from memwarden.service import MemoryService
    from memwarden.session import Session
    from memwarden.store.base import Writes

UNREPORTED_INGEST_KIND = "unreported-host-ingest"  # not in any taint policy's trusted_ingest: it taints
UNJUDGED_INGEST_KIND = "unjudged-host-ingest"  # a hook input that could not be judged (fail closed)
REPORT_EVENT = "host_ingest_reported"
MAX_PULL = 256  # reports read per query (a session that is far behind reads again)
MAX_HOST_SESSION = 200
_DOMAIN = b"memwarden.host-report.v1"
HELD_HINT = ("memwarden cannot see what the model read through the host's other tools, and this session's "
             "credential does not declare that the host reports it")


# --- sessions of a transport ----------------------------------------------------------------------------------


def unreported_source(transport: str, via: str) -> str:
    """The ledger source of a session whose ingest nobody reports (it appears in every held record's reason)."""
    return f"{transport} ({via} has no host-reports-ingest profile: nobody reports what the model read)"


def start_session(service: MemoryService, scope: Scope, *, reports_ingest: bool, transport: str, via: str,
                  workspace: Sequence[str | os.PathLike[str]] = ()) -> Session:
    """A session for a host over ``transport`` (``REST``, ``MCP stdio``, ``MCP streamable HTTP``), vouched for by
    ``via`` (``token <name>``, ``local flags``). Its snapshot is taken now (P1). Unless ``reports_ingest`` (the
    token's signed profile, or the local set-up's flag), it is untrusted from its start: what it saves is held for
    review, for the strict tiers and every other kind alike (the safe direction), with the reason in each result."""
    session = service.session(scope, workspace=workspace)
    if not reports_ingest:
        session.record_ingest(unreported_source(transport, via), UNREPORTED_INGEST_KIND)
    return session


# --- judging and recording reports ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Judged:
    """One reported call or document, as the taint policy judged it."""

    tool: str  # the tool's name, or "<kind>:<source>" for a document
    decision: TaintDecision


def is_own_tool(name: object, server: str) -> bool:
    """Whether ``name`` is one of memwarden's own tools as the host names them (``mcp__<server>__memory_save``,
    Claude Code's convention): their results are memwarden's own trusted memories, not ingest."""
    if not isinstance(name, str) or not server:
        return False
    prefix = f"mcp__{server}__"
    return name.startswith(prefix) and name[len(prefix):] in TOOL_NAMES


def judge(policy: TaintPolicy, workspace: Iterable[str | os.PathLike[str]],
          calls: Iterable[tuple[Any, Any, Any]] = (), documents: Iterable[tuple[Any, Any]] = ()) -> list[Judged]:
    """Judge reported tool calls ``(name, arguments, result_meta)`` and documents ``(source, kind)`` exactly as a
    session's ledger would (T1): file reads against ``workspace`` (real paths, symlinks resolved). Never raises:
    what cannot be judged taints (T6)."""
    roots = tuple(str(Path(w).expanduser().resolve()) for w in workspace)
    ledger = Ledger(policy, roots)
    out = []
    for name, arguments, meta in calls:
        label = name[:MAX_SOURCE_CHARS] if isinstance(name, str) and name.strip() else "(unnamed tool)"
        out.append(Judged(label, ledger.record_tool_call(name, arguments, meta)))
    for source, kind in documents:
        label = f"{str(kind)[:64]}:{str(source)[:MAX_SOURCE_CHARS]}"
        out.append(Judged(label, ledger.record_ingest(source, kind)))
    return out


def _mac(service: MemoryService, fields: Sequence[object]) -> str:
    return service.signer.mac_fields(_DOMAIN, fields)


def record(service: MemoryService, scope: Scope, judged: Sequence[Judged], *, actor: str, host_session: str = "",
           event: str = "") -> list[dict[str, Any]]:
    """Persist what a host reported for ``scope``: for each judged call, an audit event ``host_ingest_reported``
    and, when it taints, a signed ``host_reports`` row that the scope's sessions apply before their next write.
    Returns one dict per call: ``tool``, ``tainted``, ``reason``, ``sources``, ``report`` (the row's seq or None)."""
    host_session = host_session[:MAX_HOST_SESSION] if isinstance(host_session, str) else ""
    out = []
    for j in judged:
        d = j.decision
        details: dict[str, Any] = {"tool": j.tool, "tainted": d.tainted, "reason": d.reason,
                                   "sources": list(d.sources), "host_session": host_session,
                                   "hook_event": event[:64] if isinstance(event, str) else "", "report": None}

        def work(tx: Writes, d: TaintDecision = d, j: Judged = j, details: dict[str, Any] = details) -> None:
            if not d.tainted:
                return
            seq = tx.next_host_report_seq()
            fields = (seq, scope.tenant, scope.user, scope.agent_key, now_ms(), actor, host_session, j.tool,
                      d.reason, json.dumps(list(d.sources), ensure_ascii=False))
            tx.insert_host_report(fields, _mac(service, fields))
            details["report"] = seq

        service.transact_audited(work, actor, REPORT_EVENT, scope=scope, details=details)
        out.append({k: details[k] for k in ("tool", "tainted", "reason", "sources", "report")})
    return out


# --- sessions read the reports of their scope ---------------------------------------------------------------


class ReportCursor:
    """A session's position in its scope's host ingest reports: :meth:`pull` applies the ones it has not seen."""

    __slots__ = ("_scope", "_service", "_start", "seq")

    def __init__(self, service: MemoryService, scope: Scope) -> None:
        self._service = service
        self._scope = scope
        since = now_ms() - int(service.policy.host_report_window_seconds * 1000)
        self.seq = -1  # until the first pull: nothing known (pull starts from the window)
        self._start = since

    def pull(self, ledger: Ledger) -> None:
        """Taint ``ledger`` with every report of the scope after the last one seen (T1, T2). Never raises: a row
        that fails verification, or reports that cannot be read, taint (T6)."""
        try:
            self._pull(ledger)
        except Exception as exc:  # T6: any failure while judging an ingest taints
            ledger.record_host_report(f"the host ingest reports of this scope could not be read "
                                      f"({type(exc).__name__}; fail closed)", ())

    def _pull(self, ledger: Ledger) -> None:
        service = self._service
        while True:
            with service.backend.read() as db:
                if self.seq < 0:
                    self.seq = db.host_report_before(self._scope, self._start)
                found = db.host_reports(self._scope, self.seq, MAX_PULL)
            for row in found:
                seq, _t, _u, _a, _at, actor, _hs, _tool, reason, sources, sig = row
                if not (isinstance(sig, str) and hmac.compare_digest(sig, _mac(service, row[:-1]))):
                    ledger.record_host_report(f"host ingest report #{seq} fails verification (edited outside "
                                              "memwarden; fail closed)", ())
                else:
                    listed = json.loads(str(sources))
                    ledger.record_host_report(f"reported by the host ({str(actor)[:80]}): {reason}",
                                              [s for s in listed if isinstance(s, str)] if isinstance(listed, list)
                                              else ())
                self.seq = int(seq)  # type: ignore[call-overload]
            if len(found) < MAX_PULL:
                return
