"""Export and import (D3, G1, R2, T2, T3, T6).

Export writes what memwarden holds about one user, as JSON Lines (one :meth:`Record.to_dict` per line) or
as Markdown a person can read. An export contains only live records: expired ones (D2), deleted ones (D3) and
rows that fail signature verification (I1, T6) are never in it; records held for review (T2) only when asked
for. Every JSONL line is **signed**: its ``signed`` object holds the exact times (milliseconds) and an HMAC under
the store's key over every field of the record and its provenance (domain ``memwarden.export.v1``, so it can never
pass as a row signature). Every export is written to the audit log (which ids left the store, in which format,
for whom).

Import reads JSON Lines and sends every line through **the** write path, :meth:`MemoryService.write`, so the
gate runs on it like on any other write (G1). What a line keeps depends on what this store can verify (R2, T2):

- a line whose signature verifies under this store's key, imported into the scope it was exported from, is
  **restored**: same id, version, times, expiry, due date, status and provenance (held stays held, trust and
  approval are kept) — re-importing an export is lossless and idempotent; an id the store already holds at
  that version is left alone, any other existing id or a deleted one (D3) or an expired record (D2) is refused;
- every other line (unsigned, signature not verifying, edited, or imported into another scope) gets new
  provenance from the import — source type ``import``, the file as its source — and is **untrusted** (held for
  review) unless an operator's credential vouches for the file (``trusted=True`` with ``principal``, T3); a line
  that says it was held or untrusted stays held, whatever the credential (a file can only lower trust).

A line that is not valid JSON, is not an object or has a field of the wrong type is reported with its line
number; it never stops the other lines and never raises.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from types import EllipsisType
from typing import TYPE_CHECKING, Any

from memwarden import procedures
from memwarden.errors import MemwardenError
from memwarden.ids import new_id
from memwarden.policy import KEEP
from memwarden.records import (
    SENSITIVITY_LEVELS,
    Kind,
    Provenance,
    Record,
    SourceType,
    Status,
    Trust,
    iso,
    now_ms,
    sensitivity_level,
)
from memwarden.scope import Scope
from memwarden.service import ALL_AGENTS as SERVICE_ALL_AGENTS
from memwarden.service import Context, MemoryService
from memwarden.session import parse_due
from memwarden.signing import record_fields

if TYPE_CHECKING:
    from memwarden.auth import Principal

ALL_AGENTS: EllipsisType = SERVICE_ALL_AGENTS
"""Pass as ``agent`` to export every agent's records of the user (``None`` means the user's shared scope)."""

AgentSelector = str | None | EllipsisType

IMPORT_BATCH = 500  # lines per durable transaction on import (each still in a savepoint of its own)
IMPORT_FIELDS = frozenset(
    {"content", "kind", "confidence", "sensitivity", "ttl_days", "due", "due_at", "metadata"}
)
EXPORT_DOMAIN = b"memwarden.export.v1"  # an export line's MAC: never valid as a row signature (signing.py)
SIGNED = "signed"  # the field of an export line that holds its exact times and MAC
SIGNED_FORMAT = 1


# --- signed export lines ------------------------------------------------------------------------------------


def _export_mac(service: MemoryService, rec: Record) -> str:
    return service.signer.mac_fields(EXPORT_DOMAIN, record_fields(rec))


def export_line(service: MemoryService, rec: Record) -> dict[str, Any]:
    """One export line: ``rec.to_dict()`` plus ``signed`` (exact times in ms and the MAC of every field)."""
    out = rec.to_dict()
    out[SIGNED] = {"format": SIGNED_FORMAT, "created_at": rec.created_at, "updated_at": rec.updated_at,
                   "expires_at": rec.expires_at, "due_at": rec.due_at, "mac": _export_mac(service, rec)}
    return out


def _int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("not an integer")
    return value


def _strs(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise TypeError("not a list of strings")
    return tuple(value)


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError("not a string")
    return value


def signed_record(service: MemoryService, obj: dict[str, Any]) -> tuple[Record | None, str]:
    """The record a signed export line stands for, if its MAC verifies under this store's key: ``(record, "")``;
    ``(None, "")`` for an unsigned line; ``(None, why)`` for a signature that does not verify (edited, another
    store's key, malformed)."""
    sig = obj.get(SIGNED)
    if sig is None:
        return None, ""
    bad = "its export signature does not verify under this store's key (edited, or from another store)"
    try:
        if not isinstance(sig, dict) or sig.get("format") != SIGNED_FORMAT:
            raise TypeError("unknown signature format")
        p = obj["provenance"]
        if not isinstance(p, dict) or not isinstance(obj["metadata"], dict):
            raise TypeError("not an object")
        agent = p["agent"]
        conf = obj["confidence"]
        if isinstance(conf, bool) or not isinstance(conf, (int, float)):
            raise TypeError("not a number")
        due = sig["due_at"]
        rec = Record(
            id=_str(obj["id"]), version=_int(obj["version"]), kind=_str(obj["kind"]), content=_str(obj["content"]),
            content_hash=_str(obj["content_hash"]), metadata=obj["metadata"], confidence=float(conf),
            sensitivity=sensitivity_level(_str(obj["sensitivity"])), created_at=_int(sig["created_at"]),
            updated_at=_int(sig["updated_at"]), expires_at=_int(sig["expires_at"]),
            due_at=None if due is None else _int(due), status=_str(obj["status"]),
            derived_from=_strs(obj["derived_from"]),
            provenance=Provenance(
                tenant=_str(p["tenant"]), user=_str(p["user"]), agent="" if agent is None else _str(agent),
                session_id=_str(p["session_id"]), source_type=_str(p["source_type"]), sources=_strs(p["sources"]),
                trust=_str(p["trust"]), approval=_str(p["approval"])))
        mac = sig["mac"]
        if not isinstance(mac, str) or not hmac.compare_digest(mac, _export_mac(service, rec)):
            return None, bad
    except (KeyError, TypeError, ValueError, MemwardenError):
        return None, bad
    if rec.status not in Status.__members__.values() or rec.provenance.trust not in Trust.__members__.values():
        return None, bad  # signed by this key, but not a record this store writes
    return rec, ""


def _claims_held(obj: dict[str, Any]) -> bool:
    """A line that says it was held or untrusted: believed without a signature, since it only lowers trust."""
    p = obj.get("provenance")
    return obj.get("status") == Status.REVIEW or (isinstance(p, dict) and p.get("trust") == Trust.UNTRUSTED)


# --- export -------------------------------------------------------------------------------------------------


def user_agents(service: MemoryService, tenant: str, user: str) -> list[str | None]:
    """The agents that hold live records of a user (``None`` = the user's shared scope), sorted."""
    return service.agents_of(tenant, user)


def _operator_ctx(tenant: str, user: str, agent: AgentSelector, actor: str) -> Context:
    agent_id = None if isinstance(agent, EllipsisType) else agent
    return Context(Scope(tenant, user, agent_id), session_id=new_id(), source_type=SourceType.OPERATOR,
                   actor=actor, clearance=len(SENSITIVITY_LEVELS) - 1)


def live_records(
    service: MemoryService,
    tenant: str,
    user: str,
    agent: AgentSelector = ALL_AGENTS,
    include_held: bool = False,
    *,
    skipped: list[str] | None = None,
    actor: str = "operator:cli",
) -> list[Record]:
    """Live, verified records of a user: scope, expiry and status are filtered in SQL (S3, D2); a row the
    service would refuse is left out, reported as a security event and its id appended to ``skipped`` (T6)."""
    checked = service.operator_rows(tenant, user, agent, include_held=include_held)
    bad = [c for c in checked if not c.ok]
    service.report_integrity(_operator_ctx(tenant, user, agent, actor), bad, via="export")
    if skipped is not None:
        skipped.extend(c.id for c in bad)
    return [c.record for c in checked if c.ok and c.record is not None]


def _log_export(service: MemoryService, tenant: str, user: str, agent: AgentSelector, fmt: str,
                records: list[Record], include_held: bool, actor: str) -> None:
    """A1: an export is data leaving the store; record which ids left, never their content."""
    service.record_event(_operator_ctx(tenant, user, agent, actor), "exported",
                         {"format": fmt, "count": len(records), "include_held": include_held,
                          "all_agents": isinstance(agent, EllipsisType), "ids": [r.id for r in records]})


def export_jsonl(
    service: MemoryService,
    tenant: str,
    user: str,
    agent: AgentSelector = ALL_AGENTS,
    include_held: bool = False,
    *,
    skipped: list[str] | None = None,
    actor: str = "operator:cli",
) -> Iterator[str]:
    """Yield one JSON object per live record (``Record.to_dict()`` and its ``signed`` object, see
    :func:`export_line`), without a trailing newline.

    ``agent``: an agent id, ``None`` for the user's shared scope, or :data:`ALL_AGENTS` (default)."""
    records = live_records(service, tenant, user, agent, include_held, skipped=skipped, actor=actor)
    _log_export(service, tenant, user, agent, "jsonl", records, include_held, actor)
    for rec in records:
        yield json.dumps(export_line(service, rec), ensure_ascii=False, separators=(",", ":"))


EXPORT_PAGE = 200  # records per page of a streamed export: read, verified, audited, then sent


def export_jsonl_pages(
    service: MemoryService,
    tenant: str,
    user: str | None,
    agent: AgentSelector = ALL_AGENTS,
    include_held: bool = False,
    *,
    actor: str,
    via: str,
    page_size: int | None = None,
    skipped: list[str] | None = None,
) -> Iterator[str]:
    """:func:`export_jsonl` for a caller that streams it (``GET /v1/export``): the same lines, records and
    checks, read ``page_size`` records at a time so a large export is never held in memory; ``user=None``
    exports every user of the tenant, one after the other (sorted by user, then as :func:`export_jsonl`).

    Each page is written to the audit log (an ``exported`` event in that user's scope with the page's ids, and
    ``export``/``page`` to tie the pages of one export together) *before* its lines are yielded, so no id leaves
    the store unaudited; an export that finds nothing is one ``exported`` event with count 0. Not one snapshot:
    a record written while the export runs may or may not be in it."""
    export_id = new_id()
    pages = 0
    for who in _export_users(service, tenant, user):
        ctx = _operator_ctx(tenant, who, agent, actor)
        after: tuple[object, ...] | None = None
        while True:
            checked, after = service.operator_page(tenant, who, agent, include_held=include_held, after=after,
                                                   limit=page_size or EXPORT_PAGE)
            bad = [c for c in checked if not c.ok]
            service.report_integrity(ctx, bad, via="export")
            if skipped is not None:
                skipped.extend(c.id for c in bad)
            records = [c.record for c in checked if c.ok and c.record is not None]
            if records:
                pages += 1
                _log_page(service, ctx, agent, records, include_held, via, export_id, pages)
                for rec in records:
                    yield json.dumps(export_line(service, rec), ensure_ascii=False, separators=(",", ":"))
            if after is None:
                break
    if not pages:
        _log_page(service, _operator_ctx(tenant, user or "*", agent, actor), agent, [], include_held, via,
                  export_id, 0)


def _export_users(service: MemoryService, tenant: str, user: str | None) -> Iterator[str]:
    if user is not None:
        yield user
        return
    last = ""
    while found := service.users_of(tenant, after=last):
        yield from found
        last = found[-1]


def _log_page(service: MemoryService, ctx: Context, agent: AgentSelector, records: list[Record],
              include_held: bool, via: str, export_id: str, page: int) -> None:
    service.record_event(ctx, "exported", {
        "format": "jsonl", "count": len(records), "include_held": include_held,
        "all_agents": isinstance(agent, EllipsisType), "ids": [r.id for r in records], "via": via,
        "export": export_id, "page": page})


def _fence(text: str) -> str:
    """A backtick fence longer than any backtick run in ``text`` (so content can never close it)."""
    longest = run = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    return "`" * max(3, longest + 1)


def _md_escape(text: str) -> str:
    """Escape Markdown punctuation in short inline values (ids, labels, sources)."""
    return "".join("\\" + ch if ch in "\\`*_{}[]<>()#+!|" else ch for ch in text)


def _source(rec: Record) -> str:
    p = rec.provenance
    return p.source_type + (f" ({', '.join(p.sources)})" if p.sources else "")


def export_markdown(
    service: MemoryService,
    tenant: str,
    user: str,
    agent: AgentSelector = ALL_AGENTS,
    include_held: bool = False,
    *,
    skipped: list[str] | None = None,
    actor: str = "operator:cli",
) -> str:
    """A report a person can read: grouped by agent, then kind; each entry with id, dates, trust, source,
    approval and its content in a code fence (so stored text cannot inject Markdown or HTML)."""
    records = live_records(service, tenant, user, agent, include_held, skipped=skipped, actor=actor)
    _log_export(service, tenant, user, agent, "markdown", records, include_held, actor)
    who = Scope(tenant, user)
    lines = [f"# memwarden export: {_md_escape(who.tenant)} / {_md_escape(who.user)}", ""]
    held = sum(r.status == Status.REVIEW for r in records)
    lines += [
        f"- Generated: {iso(now_ms())}",
        f"- Agents: {'all' if isinstance(agent, EllipsisType) else _md_escape(agent or 'shared only')}",
        f"- Records: {len(records)}" + (f" ({held} held for operator review)" if held else ""),
        "- Only live records are included: expired, deleted and unverifiable records never are"
        + ("" if include_held else "; records held for review are left out")
        + ".",
        "",
    ]
    if not records:
        lines += ["_No memories held._", ""]
    current_agent: str | None = None
    current_kind: str | None = None
    for rec in records:  # already ordered by agent, kind, created_at
        if rec.provenance.agent != current_agent:
            current_agent, current_kind = rec.provenance.agent, None
            title = (
                f"Agent: {_md_escape(current_agent)}" if current_agent else "Shared (all agents of the user)"
            )
            lines += [f"## {title}", ""]
        if rec.kind != current_kind:
            current_kind = rec.kind
            count = sum(r.provenance.agent == current_agent and r.kind == current_kind for r in records)
            lines += [f"### {current_kind} ({count})", ""]
        p = rec.provenance
        lines += [
            f"#### {rec.id}",
            "",
            f"- Version {rec.version}; created {iso(rec.created_at)}; updated {iso(rec.updated_at)};"
            + (" kept until deleted" if rec.kept_until_deleted else f" expires {iso(rec.expires_at)}")
            + (f"; due {iso(rec.due_at)}" if rec.due_at else ""),
            f"- Trust: {p.trust}; source: {_md_escape(_source(rec))}; approval: {_md_escape(p.approval)}",
            f"- Status: {'held for operator review' if rec.status == Status.REVIEW else rec.status};"
            f" sensitivity: {rec.sensitivity_name}; confidence: {rec.confidence:g}",
            f"- Session: {_md_escape(p.session_id)}"
            + (f"; derived from: {', '.join(rec.derived_from)}" if rec.derived_from else ""),
            "",
        ]
        fence = _fence(rec.content)
        lines += [f"{fence}text", rec.content, fence, ""]
    return "\n".join(lines)


# --- import -------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LineOutcome:
    line: int  # 1-based line number in the input
    status: str  # accepted | review | rejected | error
    message: str
    id: str | None = None
    rules: tuple[str, ...] = ()
    restored: bool = False  # a signed line stored again with its own id, times and provenance
    unverified: str = ""  # why a line's signature was not accepted ("" = unsigned, or it verified)

    def to_dict(self) -> dict[str, Any]:
        out = {
            "line": self.line,
            "status": self.status,
            "id": self.id,
            "rules": list(self.rules),
            "message": self.message,
            "restored": self.restored,
        }
        if self.unverified:
            out["unverified"] = self.unverified
        return out


@dataclass
class ImportReport:
    source_label: str
    session_id: str
    trusted: bool  # an operator vouched for the lines that are not restored from a verified signature (T3)
    outcomes: list[LineOutcome] = field(default_factory=list)
    blank_lines: int = 0
    ignored_fields: set[str] = field(default_factory=set)  # e.g. provenance fields present in the file
    actor: str = "operator:cli"

    def _count(self, status: str) -> int:
        return sum(o.status == status for o in self.outcomes)

    @property
    def accepted(self) -> int:
        return self._count("accepted")

    @property
    def review(self) -> int:
        return self._count("review")

    @property
    def rejected(self) -> int:
        return self._count("rejected")

    @property
    def restored(self) -> int:
        """Lines restored losslessly from a signature this store verified."""
        return sum(o.restored for o in self.outcomes)

    @property
    def unverified(self) -> list[LineOutcome]:
        """Lines that carried a signature this store could not verify (imported as unsigned: untrusted)."""
        return [o for o in self.outcomes if o.unverified]

    @property
    def errors(self) -> list[LineOutcome]:
        return [o for o in self.outcomes if o.status == "error"]

    @property
    def failed(self) -> list[LineOutcome]:
        """Lines that were not stored: rejected by the gate or not understood."""
        return [o for o in self.outcomes if o.status in ("rejected", "error")]

    @property
    def ok(self) -> bool:
        return not self.failed

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source_label,
            "session_id": self.session_id,
            "actor": self.actor,
            "trust": Trust.TRUSTED if self.trusted else Trust.UNTRUSTED,
            "accepted": self.accepted,
            "review": self.review,
            "rejected": self.rejected,
            "errors": len(self.errors),
            "restored": self.restored,
            "unverified": len(self.unverified),
            "blank_lines": self.blank_lines,
            "ignored_fields": sorted(self.ignored_fields),
            "lines": [o.to_dict() for o in self.outcomes],
        }


class _LineError(Exception):
    pass


def _type_name(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number" if isinstance(value, (int, float)) else type(value).__name__
    )


def _want(obj: dict[str, Any], name: str, types: tuple[type, ...], what: str) -> Any:
    value = obj.get(name)
    if value is None:
        return None
    if (isinstance(value, bool) and bool not in types) or not isinstance(value, types):
        raise _LineError(f"'{name}' must be {what}, got {_type_name(value)}")
    return value


def _parse_line(raw: str | bytes) -> dict[str, Any]:
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _LineError(f"not valid UTF-8 (byte {exc.start})") from None
    try:
        obj = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise _LineError(f"not valid JSON: {exc.msg} at column {exc.colno}") from None
    except RecursionError:
        raise _LineError("not valid JSON: nested too deeply") from None
    if not isinstance(obj, dict):
        raise _LineError(f"each line must be a JSON object with a 'content' field, got {_type_name(obj)}")
    if "content" not in obj:
        raise _LineError("missing the 'content' field")
    return obj


def _vouch(service: MemoryService, ctx: Context, scope: Scope, principal: Principal | None) -> Context:
    """T3: importing unsigned lines as trusted needs an operator credential for the scope's tenant and user;
    anything else is refused (and audited)."""
    if principal is None or not principal.may_review(scope.tenant, scope.user):
        who = "no credential" if principal is None else f"a {principal.role} credential"
        why = (f"importing as trusted needs an operator credential for {scope.tenant}/{scope.user} (T3); got {who}."
               " Without it, signed lines of this store are restored and every other line is held for review")
        service.refuse(ctx if principal is None else replace(ctx, actor=principal.actor), "import_refused", None,
                       via="import", why=why)
    return replace(ctx, actor=principal.actor, trust=Trust.TRUSTED)


def import_jsonl(
    service: MemoryService,
    scope: Scope,
    lines: Iterable[str | bytes],
    *,
    source_label: str,
    trusted: bool | None = None,
    principal: Principal | None = None,
    actor: str = "operator:cli",
) -> ImportReport:
    """Import JSON Lines into ``scope`` through the write gate (G1); returns what happened to every line.

    A line exported by this store (its ``signed`` MAC verifies) and imported into its own scope is restored as
    it was (see the module docstring). Any other line is an object with ``content`` and optionally ``kind``,
    ``confidence``, ``sensitivity``, ``ttl_days``, ``due`` (or ``due_at``) and ``metadata``; every other field,
    including any provenance, is ignored (R2), and it is **untrusted** (held for review, T2) unless
    ``trusted=True`` with ``principal``, an operator credential of the scope's tenant and user (T3; without one,
    :class:`~memwarden.errors.Forbidden`). A line marked held or untrusted, or whose signature does not verify,
    is held whatever the credential. ``trusted=False``: every line is untrusted, restored ones included."""
    ctx = Context(
        scope,
        session_id=new_id(),
        source_type=SourceType.IMPORT,
        actor=actor,
        sources=(source_label,),
        trust=Trust.UNTRUSTED,
        clearance=len(SENSITIVITY_LEVELS) - 1,  # an operator import may carry any sensitivity
        taint=(f"imported from {source_label} without an operator's credential (T3)",),
    )
    if trusted:
        ctx = _vouch(service, ctx, scope, principal)
    elif principal is not None:
        ctx = replace(ctx, actor=principal.actor)
    if trusted is False:
        ctx = replace(ctx, taint=(f"imported from {source_label}, marked untrusted by the operator",))
    # A verified line carries its own trust; the import can only lower it (trusted=False).
    restore_ctx = ctx if trusted is False else replace(ctx, trust=Trust.TRUSTED, taint=())
    report = ImportReport(source_label=source_label, session_id=ctx.session_id, trusted=bool(trusted),
                          actor=ctx.actor)
    slots: list[LineOutcome | None] = []  # one per non-blank line, in order; writes are filled in per batch
    pending: list[tuple[int, int, dict[str, Any], str]] = []  # (slot, line number, write arguments, unverified)
    pending_ctx = ctx

    def flush() -> None:
        # one durable transaction per batch; every line still runs write()'s whole path in a savepoint of its own
        results = service.write_many(pending_ctx, [args for _slot, _number, args, _u in pending])
        for (slot, number, args, unverified), result in zip(pending, results, strict=True):
            if isinstance(result, MemwardenError):  # bad ttl/sensitivity/due, capacity, …: this line only
                slots[slot] = LineOutcome(number, "error", " ".join(str(result).split()), unverified=unverified)
            else:
                slots[slot] = LineOutcome(number, result.status, result.message, result.id,
                                          tuple(result.verdict.rules), restored="restore" in args,
                                          unverified=unverified)
        pending.clear()

    for number, raw in enumerate(lines, start=1):
        text = raw.strip() if isinstance(raw, (str, bytes)) else raw
        if isinstance(text, (str, bytes)) and not text:
            report.blank_lines += 1
            continue
        slots.append(None)
        unverified = ""
        try:
            if not isinstance(raw, (str, bytes)):
                raise _LineError(f"expected a line of text, got {type(raw).__name__}")
            obj = _parse_line(raw)
            rec, unverified = signed_record(service, obj)
            p = rec.provenance if rec is not None else None
            if rec is not None and p is not None and (p.tenant, p.user, p.agent) == (
                    scope.tenant, scope.user, scope.agent_key):
                line_ctx, args = restore_ctx, {  # restored as this store signed it (T2, R2)
                    "content": rec.content, "kind": rec.kind, "confidence": rec.confidence,
                    "sensitivity": rec.sensitivity, "due_at": rec.due_at, "metadata": rec.metadata, "restore": rec}
            else:
                line_ctx, args = _plain_line(service, ctx, obj, report)
                if unverified:
                    args["hold"] = unverified
                elif _claims_held(obj):  # also a verified line copied into another scope: held stays held
                    args["hold"] = "the file marks it held for review or untrusted"
        except _LineError as exc:
            slots[-1] = LineOutcome(number, "error", str(exc), unverified=unverified)
            continue
        except MemwardenError as exc:  # a bad due date or trigger list: this line only
            slots[-1] = LineOutcome(number, "error", " ".join(str(exc).split()), unverified=unverified)
            continue
        if pending and (line_ctx is not pending_ctx or len(pending) >= IMPORT_BATCH):
            flush()
        pending_ctx = line_ctx
        pending.append((len(slots) - 1, number, args, unverified))
    if pending:
        flush()
    report.outcomes.extend(o for o in slots if o is not None)
    return report


def _plain_line(service: MemoryService, ctx: Context, obj: dict[str, Any],
                report: ImportReport) -> tuple[Context, dict[str, Any]]:
    """The write of a line that is not restored: its content fields only, provenance from the import (R2)."""
    content = obj["content"]
    if not isinstance(content, str):
        raise _LineError(f"'content' must be a string, got {_type_name(content)}")
    kind = _want(obj, "kind", (str,), "a string") or "fact"
    confidence = _want(obj, "confidence", (int, float), "a number from 0 to 1")
    sensitivity = _want(obj, "sensitivity", (str,), f"one of {', '.join(SENSITIVITY_LEVELS)}")
    ttl_days = _want(obj, "ttl_days", (int, str), f"a whole number of days or \"{KEEP}\"")
    if isinstance(ttl_days, str) and ttl_days != KEEP:
        raise _LineError(f"'ttl_days' must be a whole number of days or \"{KEEP}\", got {ttl_days[:20]!r}")
    metadata = _want(obj, "metadata", (dict,), "an object")
    due_raw = obj.get("due") if obj.get("due") is not None else obj.get("due_at")
    if due_raw is not None and (isinstance(due_raw, bool) or not isinstance(due_raw, (str, int))):
        raise _LineError(f"'due' must be an ISO-8601 time or unix milliseconds, got {_type_name(due_raw)}")
    due_at = parse_due(due_raw)
    report.ignored_fields.update(k for k in obj if k not in IMPORT_FIELDS)
    line_ctx = ctx
    if kind == Kind.PROCEDURE:  # T5: every imported procedure carries a risk assessment
        triggers = procedures.check_triggers((metadata or {}).get("triggers"))
        risk = procedures.assess(service, content)
        metadata = {**(metadata or {}), "triggers": triggers, "risk": risk}
        if risk["level"] == "high":  # flagged: held until an operator promotes it, even from a trusted file
            flagged = ", ".join(risk["rules"]) or "destructive commands"
            line_ctx = replace(ctx, trust=Trust.UNTRUSTED,
                               taint=(f"imported procedure assessed high risk ({flagged})",))
    return line_ctx, {"content": content, "kind": kind, "confidence": 1.0 if confidence is None else confidence,
                      "sensitivity": sensitivity, "ttl_days": ttl_days, "due_at": due_at, "metadata": metadata}
