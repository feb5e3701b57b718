"""``memwarden demo``: a guided scenario on a fresh temporary database with its own temporary key.

It never touches the user's database or signing key, finishes in a few seconds and removes its directory. Each
step checks what it shows; :func:`run` returns 0 only if every check passed.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from rich import box
from rich.console import Console
from rich.panel import Panel
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

import memwarden
from memwarden import audit
from memwarden import doctor as doctor_mod
from memwarden.cli import one_line, preview, print_event, printable
from memwarden.errors import CapacityError, MemwardenError
from memwarden.ids import new_id
from memwarden.policy import DEFAULT_LIMITS, KindLimits, Policy
from memwarden.records import Kind, SourceType
from memwarden.service import Context, MemoryService
from memwarden.session import Session
from memwarden.store.sqlite.outside import edit_content

SCOPE = memwarden.Scope(tenant="acme", user="u-42", agent="support")
PREFERENCE_LIMIT = 3
INDEX_TABLES = ("memories", "memories_fts", "memory_dupkeys", "memory_history", "memory_links")


@dataclass
class _Demo:
    con: Console
    store: MemoryService
    db: Path
    checks: list[tuple[str, bool]] = field(default_factory=list)
    step_no: int = 0

    def step(self, title: str, why: str) -> None:
        self.step_no += 1
        self.con.print()
        self.con.print(Rule(Text(f"Step {self.step_no} · {title}", style="bold"), align="left"))
        self.con.print(Text(why, style="dim"))

    def check(self, label: str, ok: bool) -> None:
        self.checks.append((label, ok))
        self.con.print(Text.assemble(("  ✓ " if ok else "  ✗ ", "bold green" if ok else "bold red"), label))

    def counts(self, memory_id: str, row_key: int | None) -> dict[str, tuple[int, int]]:
        """(rows for this memory, total rows) in every table that can hold a memory."""
        with self.store.backend.read() as db:
            return db.footprint(memory_id, row_key)


def _verdicts_table(rows: list[tuple[str, str, memwarden.WriteResult]]) -> Table:
    table = Table(box=box.SIMPLE_HEAVY)
    table.add_column("candidate", overflow="fold", ratio=1)
    table.add_column("kind", no_wrap=True)
    table.add_column("verdict", no_wrap=True)
    table.add_column("id / rule", overflow="fold")
    for content, kind, res in rows:
        style = {"accepted": "green", "review": "yellow"}.get(res.status, "red")
        detail = res.id if res.id else ", ".join(res.verdict.rules)
        shown = f"{content!r} (whitespace only)" if not content.strip() else preview(content, 60)
        table.add_row(Text(shown), kind, Text(res.status, style=style), Text(str(detail)))
    return table


def _step_gate(d: _Demo) -> dict[str, str]:
    d.step(
        "An agent session saves memories through the write gate",
        "Every write runs gate → taint → sign → store → audit. Empty content and control characters (here a "
        "terminal escape sequence) are rejected, with the rule that decided, and logged as security events.",
    )
    candidates = [
        ("User prefers Go for backend services", Kind.PREFERENCE),
        ("User's timezone is Europe/Berlin", Kind.FACT),
        ("The staging deploy runs every Tuesday", Kind.FACT),
        ("   ", Kind.FACT),
        ("Deploy notes\x1b[2J\x1b[31m (hidden terminal escape)", Kind.FACT),
    ]
    ids: dict[str, str] = {}
    rows = []
    with d.store.session(SCOPE) as s:
        for content, kind in candidates:
            res = s.save(content, kind=kind)
            rows.append((content, str(kind), res))
            if res.id:
                ids[content] = res.id
    d.con.print(_verdicts_table(rows))
    d.check(
        "3 memories accepted, 2 rejected (record.empty, record.control_chars)",
        [r.status for _, _, r in rows] == ["accepted"] * 3 + ["rejected"] * 2
        and rows[3][2].verdict.rules == ["record.empty"]
        and rows[4][2].verdict.rules == ["record.control_chars"],
    )
    rejected = audit.log_rows(d.store.backend, event="rejected", limit=10)
    d.check(f"{len(rejected)} rejections are in the audit log with the full candidate", len(rejected) == 2)
    return {"go": ids[candidates[0][0]], "tz": ids[candidates[1][0]]}


def _step_snapshot(d: _Demo) -> tuple[Session, str]:
    d.step(
        "The prompt snapshot is frozen; tool reads are live",
        "A session renders its memory block once, at start. Writes during the session never change those "
        "bytes (so the model's prompt cache stays valid), while memory_search sees every new write at once.",
    )
    s = d.store.session(SCOPE)
    before = s.system_block()
    d.con.print(
        Panel(
            Text(printable(before, keep_newlines=True)),
            title="system_block() at session start",
            title_align="left",
            border_style="blue",
        )
    )
    new_ids = []
    for content in (
        "User is allergic to peanuts",
        "User's manager is Dana Whitfield",
        "User is on call the first week of every month",
    ):
        res = s.save(content, kind=Kind.FACT)
        new_ids.append(res.id)
    after = s.system_block()
    sha_after = hashlib.sha256(after.encode("utf-8")).hexdigest()
    found = s.search("peanuts allergy")
    table = Table(box=box.SIMPLE_HEAVY, show_header=False)
    table.add_column(style="dim", no_wrap=True)
    table.add_column(overflow="fold")
    table.add_row("snapshot sha256 at start", s.snapshot_sha256)
    table.add_row("sha256 after 3 writes", sha_after)
    table.add_row(
        "memory_search('peanuts allergy')",
        ", ".join(f"{r.id} {preview(r.content, 40)!r}" for r in found) or "nothing",
    )
    d.con.print(table)
    d.check(
        "system_block() is byte-identical after 3 writes in the session",
        after == before and sha_after == s.snapshot_sha256,
    )
    d.check("search sees the write made a moment ago", [r.id for r in found][:1] == new_ids[:1])
    with d.store.session(SCOPE) as s2:
        d.check(
            "the next session's snapshot includes it",
            "peanuts" in s2.system_block() and s2.snapshot_sha256 != s.snapshot_sha256,
        )
    peanut_id = new_ids[0]
    assert peanut_id is not None
    return s, peanut_id


def _step_capacity(d: _Demo, s: Session) -> None:
    d.step(
        "At capacity, a write fails and lists every entry",
        f"This demo's policy allows {PREFERENCE_LIMIT} preferences per scope. The error names every entry "
        "(id, size, preview) so the agent can remove or replace one instead of silently losing data.",
    )
    for content in ("User likes dark mode in every editor", "User prefers metric units"):
        s.save(content, kind=Kind.PREFERENCE)
    try:
        s.save("User prefers short answers", kind=Kind.PREFERENCE)
    except CapacityError as exc:
        d.con.print(Text(f"CapacityError: {one_line(exc)}", style="yellow"))
        table = Table(box=box.SIMPLE_HEAVY)
        table.add_column("id", no_wrap=True, style="cyan")
        table.add_column("bytes", justify="right")
        table.add_column("preview", overflow="fold")
        for e in exc.entries:
            table.add_row(str(e["id"]), str(e["bytes"]), Text(preview(str(e["preview"]), 60)))
        d.con.print(table)
        d.check(f"the error lists all {PREFERENCE_LIMIT} entries", len(exc.entries) == PREFERENCE_LIMIT)
        d.con.print(Text("As a tool call the agent gets the same list as JSON:", style="dim"))
        result = s.call_tool("memory_save", {"content": "User prefers short answers", "kind": "preference"})
        shown = {
            "error": result.get("error"),
            "limit": result.get("limit"),
            "entries": [f"{e['id']} ({e['bytes']} B)" for e in result.get("entries", [])],
        }
        d.con.print(Text(preview(json.dumps(shown), 150)))
    else:
        d.check("a capacity error was raised", False)


def _step_taint(d: _Demo) -> None:
    d.step(
        "A session that read a web page cannot write trusted memory",
        "The agent fetches a page, then saves a plausible 'preference' the content gate cannot tell from a real "
        "one. The session is tainted, so the memory is held: stored for audit, never recalled, until an "
        "operator approves it. The agent has no way to approve it itself.",
    )
    plant = "User prefers the legacy v1 billing API for new invoices"
    with d.store.session(SCOPE) as s:
        decision = s.record_tool_call("web_fetch", {"url": "https://blog.attacker.example/billing-tips"})
        d.con.print(Text.assemble("record_tool_call('web_fetch', …) → ", (decision.reason, "yellow")))
        held = s.save(plant, kind=Kind.FACT)
        d.con.print(Text.assemble(f"save({plant!r}) → ", (held.status, "yellow"), f": {preview(held.message, 90)}"))
        d.check("the write of a tainted session is held for review", held.status == "review")
        attempt = s.call_tool("memory_promote", {"id": held.id})
        d.con.print(Text(f"memory_promote → {preview(json.dumps(attempt), 110)}", style="dim"))
        d.check("the agent cannot promote it (no such tool; the attempt is audited)",
                attempt.get("error") == "forbidden")
    with d.store.session(SCOPE) as s:
        d.check("the next session's prompt and search do not contain it",
                "legacy v1 billing" not in s.system_block() and not s.search("legacy billing API invoices"))
    from memwarden import auth, review

    _, operator = auth.create_token(d.store, "operator", SCOPE.tenant, name="demo-operator")
    promoted = review.promote(d.store, operator, held.id or "", note="confirmed with the user")
    rec = promoted.record
    d.con.print(Text(f"memwarden review promote {held.id} (operator token) → approval "
                     f"{rec.provenance.approval if rec else '?'}, trust {rec.provenance.trust if rec else '?'}",
                     style="dim"))
    with d.store.session(SCOPE) as s:
        d.check("after an operator promotes it, it is recalled — still labelled untrusted",
                'trust="untrusted"' in s.system_block() and rec is not None
                and rec.provenance.approval == "operator:demo-operator")
    d.store.remove(Context(SCOPE, session_id=new_id(), source_type=SourceType.OPERATOR, actor="operator:demo"),
                   held.id or "")


def _step_tamper(d: _Demo, go_id: str) -> None:
    d.step(
        "A direct SQLite edit is caught by doctor and never served",
        "Records are signed with an HMAC key kept outside the database. Someone edits a row around the "
        "API with sqlite3; the signature no longer matches, so doctor reports it and no read serves it.",
    )
    shown = edit_content(d.db, go_id, "User prefers PHP for everything")
    d.con.print(Text(f"$ {shown}", style="magenta"))
    findings = doctor_mod.run(d.store)
    table = Table(title="memwarden doctor", box=box.SIMPLE_HEAVY, title_justify="left")
    for col in ("check", "subject", "problem"):
        table.add_column(col, overflow="fold", no_wrap=col != "problem")
    for f in findings:
        table.add_row(Text(f.check, style="red"), f.subject, f.problem)
    d.con.print(table)
    d.check(
        "doctor finds the edited record", any(f.check == "signature" and f.subject == go_id for f in findings)
    )
    with d.store.session(SCOPE) as s:
        try:
            s.view(go_id)
            served = True
        except MemwardenError as exc:
            served = False
            d.con.print(
                Text(f"memory_view({go_id}) → {exc.__class__.__name__}: {one_line(exc)}", style="yellow")
            )
        in_block = "PHP" in s.system_block() or go_id in s.system_block()
        in_search = any(r.id == go_id for r in s.search("prefers PHP"))
    d.check(
        "the edited record is not served by view, search or the prompt block",
        not served and not in_block and not in_search,
    )
    ctx = Context(SCOPE, session_id=new_id(), source_type=SourceType.OPERATOR, actor="operator:demo")
    d.store.remove(ctx, go_id, include_held=True)
    d.con.print(Text(f"The operator deletes the tampered record {go_id} (memwarden forget).", style="dim"))


def _step_delete(d: _Demo, tz_id: str) -> None:
    d.step(
        "Deletion reaches every index",
        "The timezone fact gets a second version (history) and a consolidated summary derived from it "
        "(links). Deleting it removes the record, its full-text entry, its history, its links and the "
        "derived record; the audit log keeps only a tombstone (id, hash, who, when).",
    )
    with d.store.session(SCOPE) as s:
        s.update(tz_id, "User's timezone is Europe/Berlin (CET, UTC+1)", expected_version=1)
        consolidator = Context(
            SCOPE, session_id=s.id, source_type=SourceType.CONSOLIDATION, actor="consolidator:demo"
        )
        derived = d.store.write(consolidator, "User works in the CET timezone", derived_from=[tz_id])
        with d.store.backend.read() as db:
            rowid = db.row_key(tz_id)
        before = d.counts(tz_id, rowid)
        fts_before = _fts_hits(d, "Berlin")
        removed = s.remove(tz_id)
    after = d.counts(tz_id, rowid)
    fts_after = _fts_hits(d, "Berlin")
    table = Table(box=box.SIMPLE_HEAVY)
    table.add_column("table", no_wrap=True)
    table.add_column(f"rows for {tz_id[:10]}… before", justify="right")
    table.add_column("after", justify="right")
    table.add_column("all rows before", justify="right")
    table.add_column("after", justify="right")
    for t in INDEX_TABLES:
        table.add_row(
            t,
            str(before[t][0]),
            Text(str(after[t][0]), style="green" if not after[t][0] else "red"),
            str(before[t][1]),
            str(after[t][1]),
        )
    table.add_row("full-text MATCH 'Berlin'", str(fts_before), Text(str(fts_after), style="green"), "", "")
    d.con.print(table)
    d.con.print(
        Text(f"removed: {', '.join(removed)} (the second one was derived from the first)", style="dim")
    )
    d.check(
        "no row for the deleted memory is left in any table",
        all(after[t][0] == 0 for t in INDEX_TABLES) and fts_after == 0 and before["memory_history"][0] == 1,
    )
    d.check("the derived summary was deleted with it", derived.id in removed)
    tomb = audit.log_rows(d.store.backend, event="removed", memory_id=tz_id, limit=1)
    shown = {k: v for k, v in tomb[0]["details"].items()} if tomb else {}
    d.con.print(Text(f"audit tombstone: {shown}", style="dim"))
    d.check(
        "the tombstone has the content hash, not the content",
        bool(tomb) and "content_hash" in shown and "Berlin" not in str(tomb[0]),
    )


def _fts_hits(d: _Demo, word: str) -> int:
    """Documents of the full-text index holding ``word`` in the demo's scope and its user's shared records (terms
    are stored as keyed hashes behind a scope tag, see retrieval/tokenize.py)."""
    hasher = d.store.backend.indexer.hasher
    token = hasher.token(word.lower())
    tokens = [hasher.tag(SCOPE.tenant, SCOPE.user, agent) + token for agent in (SCOPE.agent_key, "")]
    with d.store.backend.read() as db:
        return sum(db.term_documents(tokens).values())


def _step_audit(d: _Demo, peanut_id: str) -> None:
    d.step(
        "Blast radius and the audit chain",
        "Every prompt block and tool result that carried a memory is logged, so an incident can ask which "
        "sessions a memory reached. The audit log is hash-chained with the key: any edit breaks it.",
    )
    reads = list(audit.reads_of(d.store.backend, peanut_id))
    d.con.print(Text(f"$ memwarden audit reads {peanut_id}", style="magenta"))
    table = Table(box=box.SIMPLE_HEAVY)
    for col in ("session", "how"):
        table.add_column(col, no_wrap=True)
    for r in reads:
        table.add_row(r["session_id"], "prompt block" if r["event"] == "injected" else "tool result")
    d.con.print(table)
    sessions = {r["session_id"] for r in reads}
    via_block = sum(r["event"] == "injected" for r in reads)
    d.check(
        f"the memory reached {len(sessions)} sessions: {len(reads) - via_block} through a search result, "
        f"{via_block} through a prompt block",
        {r["event"] for r in reads} == {"read", "injected"},
    )
    problems = audit.verify(d.store.backend, d.store.signer)
    with d.store.backend.read() as db:
        count = db.audit_count()
    d.con.print(
        Text(f"$ memwarden audit verify → {len(problems)} problems in {count} events", style="magenta")
    )
    d.check("audit verify: the chain is intact", not problems)
    findings = doctor_mod.run(d.store)
    d.check("doctor: no findings after the tampered record was deleted", not findings)


def run(console: Console | None = None, *, workdir: str | Path | None = None, verbose: bool = False) -> int:
    """Run the demo; returns 0 if every check passed. ``workdir`` is where the temporary directory goes."""
    con = console or Console(highlight=False)
    started = time.perf_counter()
    policy = Policy(limits={**DEFAULT_LIMITS, Kind.PREFERENCE: KindLimits(PREFERENCE_LIMIT, 4096)})
    with tempfile.TemporaryDirectory(prefix="memwarden-demo-", dir=workdir) as tmp:
        db = Path(tmp) / "demo.db"
        store = memwarden.open(db, key=secrets.token_hex(32), policy=policy)
        if verbose:
            store.events.subscribe(print_event)
        d = _Demo(con, store, db)
        con.print(
            Panel(
                Text.assemble(
                    ("memwarden demo", "bold"),
                    "\n",
                    f"A fresh database in {printable(tmp)} with its own temporary signing key;\n"
                    f"your memwarden database and key are not touched. Scope: {SCOPE}.",
                ),
                border_style="blue",
            )
        )
        steps: list[Callable[[], object]] = []
        try:
            ids = _step_gate(d)
            session, peanut_id = _step_snapshot(d)
            steps.append(session.close)
            _step_capacity(d, session)
            _step_taint(d)
            _step_tamper(d, ids["go"])
            _step_delete(d, ids["tz"])
            _step_audit(d, peanut_id)
        finally:
            for close in steps:
                close()
            store.close()
    failed = [label for label, ok in d.checks if not ok]
    con.print()
    elapsed = time.perf_counter() - started
    if failed:
        con.print(
            Text(f"✗ {len(failed)} of {len(d.checks)} checks failed: {'; '.join(failed)}", style="bold red")
        )
        return 1
    con.print(
        Text(
            f"✓ all {len(d.checks)} checks passed in {elapsed:.1f}s; the temporary database and key "
            "are gone.",
            style="bold green",
        )
    )
    return 0
