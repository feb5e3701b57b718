"""The ``memwarden`` CLI: every command's happy path and its error path. An error is always ONE line on stderr
and a non-zero exit, never a traceback. Requirement ids in test names refer to SPEC.md."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner, Result

import memwarden
from memwarden.cli import app, printable
from memwarden.ids import new_id
from memwarden.records import now_ms
from memwarden.service import Context, MemoryService
from raw_sql import raw_sql

ID = ["--tenant", "acme", "--user", "u-42", "--agent", "support"]
DAY_MS = 86_400_000


@pytest.fixture(autouse=True)
def _no_ambient_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("MEMWARDEN_TENANT", "MEMWARDEN_USER", "MEMWARDEN_AGENT", "MEMWARDEN_DEBUG", "COLUMNS"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def lib(store: MemoryService) -> MemoryService:
    """The library view of the same database the CLI uses (``--db db_path``)."""
    return store


class Cli:
    def __init__(self, runner: CliRunner, db: Path) -> None:
        self.runner, self.db = runner, db

    def __call__(self, *args: str, input: str | bytes | None = None, db: bool = True) -> Result:
        argv = (["--db", str(self.db)] if db else []) + list(args)
        result = self.runner.invoke(app, argv, input=input)
        assert "Traceback" not in result.output, result.output
        assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
        return result

    def ok(self, *args: str, input: str | bytes | None = None) -> Result:
        result = self(*args, input=input)
        assert result.exit_code == 0, result.output
        return result

    def fails(
        self, *args: str, code: int | None = None, input: str | bytes | None = None, db: bool = True
    ) -> str:
        """Run a command that must fail; return its single stderr line."""
        result = self(*args, input=input, db=db)
        assert result.exit_code != 0, result.output
        if code is not None:
            assert result.exit_code == code, result.output
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1, result.stderr
        assert lines[0].startswith("error: ")
        return lines[0]

    def json(self, *args: str) -> Any:
        return json.loads(self.ok(*args, "--json").stdout)


@pytest.fixture
def cli(runner: CliRunner, db_path: Path, lib: MemoryService) -> Cli:
    return Cli(runner, db_path)


def _ctx(scope: memwarden.Scope, trust: str = "trusted", source_type: str = "model") -> Context:
    return Context(scope, session_id=new_id(), source_type=source_type, actor="system:test", trust=trust)


def _save(cli: Cli, text: str, *extra: str) -> str:
    return str(cli.json("save", text, *ID, *extra)["id"])


def _raw_sql(db: Path, sql: str, *params: object) -> None:
    raw_sql(db, (sql, params))


# --- help and global behaviour ------------------------------------------------------------------------------


def _walk(cmd: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, cmd
    for name, sub in getattr(cmd, "commands", {}).items():
        yield from _walk(sub, (*path, name))


def test_help_lists_every_command(cli: Cli) -> None:
    out = cli.ok("--help").stdout
    for name in (
        "save",
        "search",
        "list",
        "show",
        "forget",
        "beliefs",
        "audit",
        "export",
        "import",
        "gc",
        "doctor",
        "demo",
        "scan",
    ):
        assert name in out
    assert "reads" in cli.ok("audit", "--help").stdout


def test_every_command_and_option_has_help() -> None:
    root = typer.main.get_command(app)
    for path, cmd in _walk(root):
        assert (cmd.help or "").strip(), f"{' '.join(path)} has no help"
        for param in cmd.params:
            if param.name in ("help", "ctx"):
                continue
            assert (getattr(param, "help", None) or "").strip(), f"{' '.join(path)} {param.name} has no help"


def test_no_arguments_shows_help(cli: Cli) -> None:
    result = cli.runner.invoke(app, [])
    assert result.exit_code == 0 and "Usage" in result.output


def test_usage_errors_are_one_line(cli: Cli) -> None:
    assert "Missing argument" in cli.fails("save", *ID, code=2)
    assert "No such command" in cli.fails("frobnicate", code=2)
    assert "No such option" in cli.fails("list", "--colour", code=2)
    assert "--kind" in cli.fails("save", "x", "--kind", "opinion", *ID, code=2)
    assert "-k" in cli.fails("search", "x", "-k", "0", *ID, code=2)


def test_version(cli: Cli) -> None:
    assert cli.ok("--version").stdout.strip() == f"memwarden {memwarden.__version__}"


def test_s2_missing_identity_is_one_clear_line(cli: Cli) -> None:
    line = cli.fails("save", "User prefers tea", code=2)
    assert "--tenant" in line and "--user" in line and "MEMWARDEN_TENANT" in line
    assert "--user" in cli.fails("list", "--tenant", "acme", code=2)
    assert "--user" in cli.fails("beliefs", "--tenant", "acme", code=2)
    assert "--tenant" in cli.fails("export", "--user", "u-42", code=2)


def test_s2_identity_from_environment(cli: Cli, monkeypatch: pytest.MonkeyPatch, lib: MemoryService) -> None:
    monkeypatch.setenv("MEMWARDEN_TENANT", "acme")
    monkeypatch.setenv("MEMWARDEN_USER", "u-42")
    monkeypatch.setenv("MEMWARDEN_AGENT", "support")
    mid = cli.json("save", "User prefers tea")["id"]
    assert lib.operator_get(mid).provenance.agent == "support"


def test_invalid_identity_is_one_line(cli: Cli) -> None:
    assert "tenant" in cli.fails("list", "--tenant", "ac\u202eme", "--user", "u")


def test_default_database_from_memwarden_url(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(app, ["save", "User prefers tea", *ID])
    assert result.exit_code == 0, result.output
    assert Path(os.environ["MEMWARDEN_URL"]).exists()
    other = tmp_path / "other.db"
    result = runner.invoke(app, ["--url", str(other), "list", *ID, "--json"])
    assert result.exit_code == 0 and json.loads(result.stdout) == []


def test_unsupported_database_url_is_one_line(cli: Cli) -> None:
    result = cli.runner.invoke(app, ["--db", "postgresql://db/x", "list", *ID])
    assert result.exit_code == 1 and result.stderr.count("\n") == 1 and "PostgreSQL" in result.stderr


def test_wrong_key_is_one_line(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    cli.ok("save", "User prefers tea", *ID)
    monkeypatch.setenv("MEMWARDEN_KEY", "x" * 64)
    assert "different key" in cli.fails("list", *ID)


def test_unreadable_database_path_is_one_line(cli: Cli, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    result = cli.runner.invoke(app, ["--db", str(blocker / "sub" / "x.db"), "list", *ID])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert len(result.stderr.strip().splitlines()) == 1


def test_real_entry_point_prints_no_traceback(tmp_path: Path) -> None:
    env = {**os.environ, "MEMWARDEN_URL": str(tmp_path / "e.db")}
    proc = subprocess.run(
        [sys.executable, "-m", "memwarden.cli", "show", "01NOSUCHID"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1
    # issue 12 item 16: a store created on first use is announced, so a mistyped --db does not pass unnoticed
    assert proc.stderr.strip().splitlines() == [
        f"note: created a new, empty store at {tmp_path / 'e.db'}",
        "error: no memory 01NOSUCHID",
    ]
    assert "Traceback" not in proc.stdout + proc.stderr


def test_internal_errors_are_one_line(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*a: object, **k: object) -> None:
        raise RuntimeError("kaboom")

    monkeypatch.setattr(MemoryService, "gc", boom)
    result = cli("gc")
    assert result.exit_code == 70 and "internal error: RuntimeError: kaboom" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_a3_verbose_prints_events(cli: Cli) -> None:
    result = cli.runner.invoke(app, ["--db", str(cli.db), "--verbose", "save", "User prefers tea", *ID])
    assert result.exit_code == 0
    assert "event #" in result.stderr and " added " in result.stderr and "actor=operator:cli" in result.stderr
    quiet = cli.ok("save", "User prefers coffee", *ID)
    assert "event #" not in quiet.stderr


def test_printable_escapes_terminal_controls() -> None:
    assert printable("a\x1b[31mb\u202ec\u200bd") == "a\\x1b[31mb\\u202ec\\u200bd"
    assert printable("line\nnext", keep_newlines=True) == "line\nnext"


# --- save / search / list / show ----------------------------------------------------------------------------


def test_r2_save_is_an_operator_write(cli: Cli, lib: MemoryService) -> None:
    out = cli.ok(
        "save",
        "User prefers Go for services",
        *ID,
        "--kind",
        "preference",
        "--ttl-days",
        "10",
        "--sensitivity",
        "confidential",
        "--confidence",
        "0.9",
    ).stdout
    assert "saved" in out
    mid = out.split()[2]
    rec = lib.operator_get(mid)
    p = rec.provenance
    assert (rec.kind, rec.sensitivity_name, rec.confidence) == ("preference", "confidential", 0.9)
    assert rec.expires_at - rec.created_at == 10 * DAY_MS
    assert (p.source_type, p.trust, p.approval, p.sources) == ("operator", "trusted", "none", ("cli",))
    audit_row = memwarden.audit.log_rows(lib.backend, memory_id=mid)[0]
    assert audit_row["actor"] == "operator:cli"


def test_save_reminder_with_due(cli: Cli, lib: MemoryService) -> None:
    mid = _save(cli, "Renew the certificate", "--kind", "reminder", "--due", "2030-12-01T09:00Z")
    due = datetime(2030, 12, 1, 9, 0, tzinfo=UTC)
    assert lib.operator_get(mid).due_at == int(due.timestamp() * 1000)
    assert "due" in cli.fails("save", "Renew", *ID, "--kind", "reminder", "--due", "someday")
    assert "due date" in cli.fails("save", "Renew", *ID, "--kind", "reminder")


def test_g1_save_rejected_by_gate(cli: Cli, lib: MemoryService) -> None:
    line = cli.fails("save", "Notes\x1b[2J hidden", *ID, code=1)
    assert "record.control_chars" in line and "\x1b" not in line
    assert "record.empty" in cli.fails("save", "   ", *ID)
    assert memwarden.audit.log_rows(lib.backend, event="rejected")


def test_save_bad_ttl_is_one_line(cli: Cli) -> None:
    assert "ttl_days" in cli.fails("save", "x", *ID, "--ttl-days", "999")


def test_d1_capacity_error_lists_every_entry(runner: CliRunner, db_path: Path, lib: MemoryService) -> None:
    scope = memwarden.Scope("acme", "u-42", "support")
    limit = lib.policy.limits_for("preference").max_entries
    ids = [lib.write(_ctx(scope), f"preference number {i}", kind="preference").id for i in range(limit)]
    result = runner.invoke(app, ["--db", str(db_path), "save", "one too many", *ID, "--kind", "preference"])
    assert result.exit_code == 1 and "Traceback" not in result.output
    first, *entries = result.stderr.strip().splitlines()
    assert first.startswith("error: memory is full for kind 'preference'")
    assert len(entries) == limit and all(mid and mid in result.stderr for mid in ids)


def test_search_live_scoped_and_json(cli: Cli, lib: MemoryService) -> None:
    mid = _save(cli, "User is allergic to peanuts")
    lib.write(_ctx(memwarden.Scope("acme", "u-99", "support")), "Another user is allergic to peanuts")
    lib.write(_ctx(memwarden.Scope("acme", "u-42", "support"), trust="untrusted"), "Held peanuts note")
    assert mid in cli.ok("search", "peanuts", *ID).stdout
    found = cli.json("search", "peanuts", *ID)
    assert [r["id"] for r in found] == [mid]
    assert "nothing found" in cli.ok("search", "zebra", *ID).stdout
    assert cli.json("search", "peanuts", *ID, "--kind", "preference") == []


def test_list_kind_and_all_agents(cli: Cli, lib: MemoryService) -> None:
    fact = _save(cli, "Deploys are on Tuesday")
    pref = _save(cli, "User prefers tea", "--kind", "preference")
    billing = lib.write(_ctx(memwarden.Scope("acme", "u-42", "billing")), "Pays by invoice").id
    shared = lib.write(_ctx(memwarden.Scope("acme", "u-42")), "Lives in Berlin").id
    assert {r["id"] for r in cli.json("list", *ID)} == {fact, pref}
    assert [r["id"] for r in cli.json("list", *ID, "--kind", "preference")] == [pref]
    assert {r["id"] for r in cli.json("list", *ID, "--all-agents")} == {fact, pref, billing, shared}
    out = cli.ok("list", *ID, "--all-agents").stdout
    assert "billing" in out and "*shared*" in out and "Pays by invoice" in out
    assert "no memories" in cli.ok("list", "--tenant", "acme", "--user", "nobody").stdout


def test_show_full_record_history_and_verification(cli: Cli, lib: MemoryService) -> None:
    scope = memwarden.Scope("acme", "u-42", "support")
    with lib.session(scope) as s:
        mid = s.save("User's timezone is Europe/Berlin").id
        assert mid is not None
        s.update(mid, "User's timezone is Europe/Berlin (CET)", expected_version=1)
    out = cli.ok("show", mid).stdout
    for needle in (
        mid,
        "✓ verified",
        "Europe/Berlin (CET)",
        "earlier versions",
        "source type",
        "model",
        "trusted",
        "approval",
    ):
        assert needle in out
    data = cli.json("show", mid)
    assert data["verified"] is True and data["record"]["version"] == 2
    assert data["history"][0]["content"] == "User's timezone is Europe/Berlin"
    assert data["record"]["provenance"]["source_type"] == "model"


def test_show_unknown_id_is_one_line(cli: Cli) -> None:
    assert cli.fails("show", "01NOSUCHID", code=1) == "error: no memory 01NOSUCHID"


def test_i1_show_reports_tampered_record(cli: Cli) -> None:
    mid = _save(cli, "User prefers Go")
    _raw_sql(cli.db, "UPDATE memories SET content = 'User prefers PHP' WHERE id = ?", mid)
    result = cli("show", mid)
    assert result.exit_code == 1 and "NOT SERVED" in result.stdout
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"error: memory {mid} failed verification") and "not served to agents" in line
    data = json.loads(cli("show", mid, "--json").stdout)
    assert data["verified"] is False and "edited outside memwarden" in data["refused"]
    assert cli.json("search", "PHP", *ID) == []


# --- forget -------------------------------------------------------------------------------------------------


def _rows_for(db: Path, mid: str) -> dict[str, int]:
    with sqlite3.connect(db) as raw:
        out = {
            t: raw.execute(f"SELECT count(*) FROM {t} WHERE id = ?", (mid,)).fetchone()[0]
            for t in ("memories", "memory_history")
        }
        out["memory_links"] = raw.execute(
            "SELECT count(*) FROM memory_links WHERE derived_id = ? OR source_id = ?", (mid, mid)
        ).fetchone()[0]
        with memwarden.open(db) as svc:  # FTS terms are keyed hashes behind a scope tag: any scope's 'berlin'
            berlin = svc.backend.indexer.hasher.token("berlin")
        out["fts"] = raw.execute(
            "SELECT coalesce(sum(doc), 0) FROM memories_fts_vocab WHERE term LIKE ?", (f"%{berlin}",)
        ).fetchone()[0]
    raw.close()
    return out


def test_d3_forget_reaches_every_table(cli: Cli, lib: MemoryService) -> None:
    scope = memwarden.Scope("acme", "u-42", "support")
    with lib.session(scope) as s:
        mid = s.save("User lives in Berlin").id
        assert mid is not None
        s.update(mid, "User lives in Berlin, Germany", expected_version=1)
    derived = lib.write(_ctx(scope, source_type="consolidation"), "User is in Germany", derived_from=[mid]).id
    assert _rows_for(cli.db, mid) == {"memories": 1, "memory_history": 1, "memory_links": 1, "fts": 1}
    out = cli.ok("forget", mid).stdout  # no identity: the scope comes from the record
    assert mid in out and f"1 derived: {derived}" in out
    assert _rows_for(cli.db, mid) == {"memories": 0, "memory_history": 0, "memory_links": 0, "fts": 0}
    tomb = memwarden.audit.log_rows(lib.backend, event="removed", memory_id=mid)[0]
    assert tomb["actor"] == "operator:cli" and "Berlin" not in json.dumps(tomb)
    assert cli.ok("doctor").exit_code == 0


def test_t2_forget_removes_held_record(cli: Cli, lib: MemoryService) -> None:
    held = lib.write(_ctx(memwarden.Scope("acme", "u-42", "support"), trust="untrusted"), "Held note").id
    assert held is not None
    cli.ok("forget", held, *ID)
    with pytest.raises(memwarden.NotFound):
        lib.operator_get(held)


def test_s4_forget_with_wrong_scope_is_refused(cli: Cli, lib: MemoryService) -> None:
    mid = _save(cli, "User prefers tea")
    line = cli.fails("forget", mid, "--tenant", "acme", "--user", "u-99", "--agent", "support")
    assert "no memory" in line and "acme/u-99/support" in line
    assert lib.operator_get(mid).id == mid
    assert "no memory" in cli.fails("forget", "01NOSUCHID")


def test_s4_forget_all_clears_exactly_one_scope(cli: Cli, lib: MemoryService) -> None:
    fact = _save(cli, "Deploys are on Tuesday")
    pref = _save(cli, "User prefers tea", "--kind", "preference")
    held = lib.write(_ctx(memwarden.Scope("acme", "u-42", "support"), trust="untrusted"), "held fact").id
    other = lib.write(_ctx(memwarden.Scope("acme", "u-42", "billing")), "Pays by invoice").id
    other_user = lib.write(_ctx(memwarden.Scope("acme", "u-43", "support")), "Other user's fact").id
    assert "--yes" in cli.fails("forget", "--all", *ID, code=2)
    cli.ok("forget", "--all", "--kind", "fact", "--yes", *ID)
    left = {r.id for r in lib.beliefs("acme", "u-42")} | {r.id for r in lib.beliefs("acme", "u-43")}
    assert fact not in left and held not in left and {pref, other, other_user} <= left
    cli.ok("forget", "--all", "--yes", *ID)
    assert {r.id for r in lib.beliefs("acme", "u-42")} == {other}


def test_forget_usage_errors(cli: Cli) -> None:
    assert "--all" in cli.fails("forget", code=2)
    assert "not both" in cli.fails("forget", "01X", "--all", "--yes", *ID, code=2)
    assert "--tenant" in cli.fails("forget", "--all", "--yes", code=2)


# --- beliefs (A4) -------------------------------------------------------------------------------------------


def test_a4_beliefs_shows_source_trust_and_approval(cli: Cli, lib: MemoryService) -> None:
    op = _save(cli, "User prefers Go for services", "--kind", "preference")
    held = lib.write(
        Context(
            memwarden.Scope("acme", "u-42", "research"),
            session_id=new_id(),
            source_type="tool",
            actor="system:research",
            sources=("web_fetch:https://example.com/x",),
            trust="untrusted",
        ),
        "User's company uses Kubernetes",
    ).id
    shared = lib.write(_ctx(memwarden.Scope("acme", "u-42"), source_type="user"), "User lives in Berlin").id
    assert held is not None and shared is not None
    lib.write(_ctx(memwarden.Scope("acme", "u-43", "support")), "Someone else's fact")
    out = cli.ok("beliefs", "--tenant", "acme", "--user", "u-42").stdout
    for needle in (
        op,
        held,
        shared,
        "operator: cli",
        "tool: web_fetch:https://example.com/x",
        "untrusted",
        "trusted",
        "held",
        "research",
        "*shared*",
        "none",
        "3 memories",
        "1 held for review",
    ):
        assert needle in out, needle
    assert "Someone else" not in out
    data = cli.json("beliefs", "--tenant", "acme", "--user", "u-42")
    assert data["count"] == 3
    by_id = {m["id"]: m for m in data["memories"]}
    assert by_id[held]["status"] == "review" and by_id[held]["verified"] is True
    assert by_id[held]["provenance"] == {
        "tenant": "acme",
        "user": "u-42",
        "agent": "research",
        "session_id": by_id[held]["provenance"]["session_id"],
        "source_type": "tool",
        "sources": ["web_fetch:https://example.com/x"],
        "trust": "untrusted",
        "approval": "none",
    }
    assert by_id[op]["provenance"]["source_type"] == "operator"


def test_a4_beliefs_withholds_tampered_content(cli: Cli) -> None:
    mid = _save(cli, "User prefers Go")
    _raw_sql(cli.db, "UPDATE memories SET content = 'User prefers PHP' WHERE id = ?", mid)
    out = cli.ok("beliefs", "--tenant", "acme", "--user", "u-42").stdout
    assert "failed verification" in out and "PHP" not in out
    data = cli.json("beliefs", "--tenant", "acme", "--user", "u-42")
    assert data["memories"][0]["verified"] is False and data["memories"][0]["content"] is None


def test_a4_beliefs_for_unknown_user(cli: Cli) -> None:
    assert "nothing is held" in cli.ok("beliefs", "--tenant", "acme", "--user", "nobody").stdout


# --- audit --------------------------------------------------------------------------------------------------


def test_a1_audit_log_filters(cli: Cli) -> None:
    mid = _save(cli, "User prefers tea")
    cli.fails("save", "\x00", *ID)
    out = cli.ok("audit", "log").stdout
    assert "added" in out and "rejected" in out and mid in out
    rows = cli.json("audit", "log", "--event", "rejected")
    assert [r["event"] for r in rows] == ["rejected"] and rows[0]["details"]["candidate"] == "\x00"
    assert [r["memory_id"] for r in cli.json("audit", "log", "--memory", mid)] == [mid]
    assert len(cli.json("audit", "log", "--limit", "1")) == 1
    assert "no audit events" in cli.ok("audit", "log", "--event", "promoted").stdout
    shown = cli.ok("audit", "log", "--event", "rejected").stdout
    assert "\\u0000" in shown and "\x00" not in shown  # escaped, never raw


def test_a1_audit_verify_passes(cli: Cli) -> None:
    _save(cli, "User prefers tea")
    assert "audit chain intact" in cli.ok("audit", "verify").stdout


def test_a1_audit_verify_fails_after_audit_row_edit(cli: Cli) -> None:
    _save(cli, "User prefers tea")
    _save(cli, "User prefers Go")
    with sqlite3.connect(cli.db) as raw:
        raw.execute("DROP TRIGGER audit_no_update")
        raw.execute("UPDATE audit SET actor = 'someone-else' WHERE seq = 1")
    raw.close()
    result = cli("audit", "verify")
    assert result.exit_code == 1
    assert "edited" in result.stdout
    # 3 events: the store's anchor_created (I5) and the two saves
    assert result.stderr.strip().splitlines() == ["error: audit chain broken: 1 problem(s) in 3 events"]


def test_a1_audit_verify_fails_after_audit_row_deleted(cli: Cli) -> None:
    for text in ("one", "two", "three"):
        _save(cli, f"User fact {text}")
    with sqlite3.connect(cli.db) as raw:
        raw.execute("DROP TRIGGER audit_no_delete")
        raw.execute("DELETE FROM audit WHERE seq = 2")
    raw.close()
    assert "audit chain broken" in cli.fails("audit", "verify", code=1)


def test_a2_audit_reads_lists_sessions(cli: Cli, lib: MemoryService) -> None:
    mid = _save(cli, "User is allergic to peanuts")
    assert "has not reached any session" in cli.ok("audit", "reads", mid).stdout
    scope = memwarden.Scope("acme", "u-42", "support")
    with lib.session(scope) as s1:
        s1.search("peanuts")
    with lib.session(scope) as s2:
        pass
    out = cli.ok("audit", "reads", mid).stdout
    assert s1.id in out and s2.id in out and "tool result" in out and "prompt block" in out
    rows = cli.json("audit", "reads", mid)
    assert {r["session_id"] for r in rows} == {s1.id, s2.id}


# --- export / import ----------------------------------------------------------------------------------------


def test_t2_export_excludes_held_by_default(cli: Cli, lib: MemoryService) -> None:
    live = _save(cli, "User prefers tea")
    held = lib.write(_ctx(memwarden.Scope("acme", "u-42", "support"), trust="untrusted"), "Held note").id
    lines = [json.loads(x) for x in cli.ok("export", *ID).stdout.splitlines()]
    assert [x["id"] for x in lines] == [live]
    lines = [json.loads(x) for x in cli.ok("export", *ID, "--include-held").stdout.splitlines()]
    assert {x["id"] for x in lines} == {live, held}


def test_export_markdown_to_file(cli: Cli, tmp_path: Path) -> None:
    mid = _save(cli, "User prefers tea", "--kind", "preference")
    out = tmp_path / "export.md"
    assert "exported 1 memory" in cli.ok("export", *ID, "--format", "md", "--out", str(out)).stdout
    text = out.read_text()
    assert f"#### {mid}" in text and "### preference (1)" in text and "User prefers tea" in text
    assert "Trust: trusted; source: operator \\(cli\\); approval: none" in text
    assert out.stat().st_mode & 0o077 == 0


def test_export_all_agents(cli: Cli, lib: MemoryService) -> None:
    mine = _save(cli, "Support fact")
    other = lib.write(_ctx(memwarden.Scope("acme", "u-42", "billing")), "Billing fact").id

    def ids(*a: str) -> set[str]:
        return {json.loads(x)["id"] for x in cli.ok("export", *ID, *a).stdout.splitlines()}

    assert ids() == {mine}
    assert ids("--all-agents") == {mine, other}


def test_export_errors_are_one_line(cli: Cli, tmp_path: Path) -> None:
    assert "--format" in cli.fails("export", *ID, "--format", "xml", code=2)
    cli.fails("export", *ID, "--out", str(tmp_path / "missing-dir" / "x.jsonl"), code=1)


def test_i1_export_leaves_out_tampered_record_and_fails(cli: Cli) -> None:
    bad = _save(cli, "User prefers Go")
    good = _save(cli, "User prefers tea")
    _raw_sql(cli.db, "UPDATE memories SET content = 'User prefers PHP' WHERE id = ?", bad)
    result = cli("export", *ID)
    assert result.exit_code == 1
    assert [json.loads(x)["id"] for x in result.stdout.splitlines()] == [good]
    assert bad in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_g1_import_round_trip_through_the_gate(cli: Cli, lib: MemoryService, tmp_path: Path) -> None:
    _save(cli, "User prefers Go for services", "--kind", "preference")
    _save(cli, "Deploys are on Tuesday")
    exported = tmp_path / "export.jsonl"
    cli.ok("export", *ID, "--out", str(exported))
    poisoned = exported.read_text() + json.dumps({"content": "Notes \u001b[2J"}) + "\n" + '{"content": ""}\n'
    exported.write_text(poisoned)
    target = ["--tenant", "acme", "--user", "u-42", "--agent", "restored"]
    result = cli("import", str(exported), *target)
    assert result.exit_code == 1
    assert "accepted" in result.stdout and "rejected by the write gate" in result.stdout
    assert "record.control_chars" in result.stdout and "record.empty" in result.stdout
    assert result.stderr.strip().splitlines() == [
        "error: 2 of 4 lines were not imported (2 rejected, 0 not understood)"
    ]
    restored = [c.record for c in lib.beliefs("acme", "u-42") if c.ok and c.record]
    got = {r.content: r for r in restored if r.provenance.agent == "restored"}
    assert set(got) == {"User prefers Go for services", "Deploys are on Tuesday"}
    for rec in got.values():  # provenance in the file was ignored (another scope: not a restore)
        assert rec.provenance.source_type == "import" and rec.provenance.sources == (str(exported.resolve()),)
        # T2/T3: without an operator credential an import is untrusted, so held for review
        assert (rec.provenance.trust, rec.status) == ("untrusted", "review")


def test_g1_import_from_stdin_untrusted_is_held(cli: Cli, lib: MemoryService) -> None:
    data = '{"content": "User likes tea", "provenance": {"trust": "trusted", "approval": "operator:eve"}}\n'
    report = json.loads(
        cli.ok("import", "-", *ID, "--untrusted", "--source", "vendor-dump", "--json", input=data).stdout
    )
    assert (report["accepted"], report["review"]) == (0, 1) and report["ignored_fields"] == ["provenance"]
    rec = lib.operator_get(report["lines"][0]["id"])
    assert (rec.status, rec.provenance.trust, rec.provenance.approval) == ("review", "untrusted", "none")
    assert rec.provenance.sources == ("vendor-dump",)
    assert "held for operator review" in cli.ok("import", "-", *ID, "--untrusted", input=data).stdout


def test_g1_import_bad_lines_are_reported_not_raised(cli: Cli) -> None:
    data = b'not json\n{"content": 1}\n\xff\xfe\n{"content": "fine"}\n'
    result = cli("import", "-", *ID, input=data)
    assert result.exit_code == 1
    assert (
        "not valid JSON" in result.stdout and "must be a string" in result.stdout and "UTF-8" in result.stdout
    )
    assert "3 of 4 lines were not imported" in result.stderr


def test_import_errors_are_one_line(cli: Cli) -> None:
    assert "no such file" in cli.fails("import", "/nonexistent/file.jsonl", *ID)
    assert "--tenant" in cli.fails("import", "-", input="", code=2)


# --- gc / doctor --------------------------------------------------------------------------------------------


def test_d2_gc_purges_expired(cli: Cli, lib: MemoryService, monkeypatch: pytest.MonkeyPatch) -> None:
    scope = memwarden.Scope("acme", "u-42", "support")
    past = now_ms() - 2 * DAY_MS
    with monkeypatch.context() as m:
        m.setattr("memwarden.service.now_ms", lambda: past)
        old = lib.write(_ctx(scope), "An old fact", ttl_days=1).id
    keep = _save(cli, "A current fact")
    assert [r["id"] for r in cli.json("list", *ID)] == [keep]  # invisible before gc (D2)
    assert "purged 1 expired memory" in cli.ok("gc").stdout
    with pytest.raises(memwarden.NotFound):
        lib.operator_get(old or "")
    assert cli.json("gc") == {"purged": 0, "ids": []}


def test_i1_doctor_clean_then_fails_after_direct_sql_edit(cli: Cli) -> None:
    mid = _save(cli, "User prefers Go")
    assert "no problems found" in cli.ok("doctor").stdout
    _raw_sql(cli.db, "UPDATE memories SET content = 'User prefers PHP' WHERE id = ?", mid)
    result = cli("doctor")
    assert result.exit_code == 1 and "signature" in result.stdout and mid in result.stdout
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: doctor found ") and line.endswith(" problem(s)")
    data = json.loads(cli("doctor", "--json").stdout)
    assert data["ok"] is False
    assert any(f["check"] == "signature" and f["subject"] == mid for f in data["findings"])


def test_i1_doctor_detects_provenance_edit(cli: Cli) -> None:
    mid = _save(cli, "User prefers Go")
    _raw_sql(cli.db, "UPDATE memories SET approval = 'operator:mallory', trust = 'trusted' WHERE id = ?", mid)
    assert "doctor found" in cli.fails("doctor")


def test_d3_doctor_detects_zombie_index_row(cli: Cli) -> None:
    mid = _save(cli, "User prefers Go")
    with sqlite3.connect(cli.db) as raw:
        raw.execute("DELETE FROM memories WHERE id = ?", (mid,))
    raw.close()
    result = cli("doctor")
    assert result.exit_code == 1 and "zombie" in result.stdout and "memories_fts" in result.stdout


# --- scan / demo --------------------------------------------------------------------------------------------


def test_scan_lines_and_jsonl(cli: Cli, lib: MemoryService) -> None:
    data = (
        'User prefers tea\n\n{"text": "bad\\u0007", "source": "tool", "kind": "preference"}\n'
        '{"text": 5}\n{"not_text": "x"}\n'
    )
    out = [json.loads(x) for x in cli.ok("scan", input=data).stdout.splitlines()]
    assert {k: out[0][k] for k in ("line", "verdict", "kind", "rules", "spans", "hits")} == {
        "line": 1, "verdict": "accept", "kind": "preference", "rules": [], "spans": [], "hits": []}  # G2 class
    assert out[0]["rules_version"]
    assert out[1]["line"] == 3 and out[1]["verdict"] == "reject" and out[1]["kind"] == "rejectable"
    assert out[1]["rules"] == ["record.control_chars"] and out[1]["spans"] == [[3, 4]]
    assert out[2] == {"line": 4, "error": "'text' must be a string"}
    assert out[3]["line"] == 5 and out[3]["verdict"] in ("accept", "review")  # no "text": read as plain text
    assert lib.beliefs("acme", "u-42") == []  # scan never stores


def test_scan_file_and_summary(cli: Cli, tmp_path: Path) -> None:
    f = tmp_path / "candidates.txt"
    f.write_text("User prefers tea\nbad\x07one\nbad\x1btwo\n   \n")
    out = cli.ok("scan", str(f), "--summary").stdout
    assert "3 candidates" in out and "record.control_chars" in out
    assert "2" in out.split("record.control_chars")[1].splitlines()[0]
    assert "no such file" in cli.fails("scan", str(tmp_path / "missing.txt"))


def test_demo_command_runs(cli: Cli) -> None:
    result = cli.ok("demo")
    assert "checks passed" in result.stdout


def test_t6_malformed_row_is_reported_never_raised(cli: Cli) -> None:
    mid = _save(cli, "User prefers Go")
    good = _save(cli, "User prefers tea")
    _raw_sql(cli.db, "UPDATE memories SET metadata = '{not json' WHERE id = ?", mid)
    out = cli.ok("beliefs", "--tenant", "acme", "--user", "u-42").stdout
    assert mid in out and "malformed" in out and good in out
    data = cli.json("beliefs", "--tenant", "acme", "--user", "u-42")
    assert {m["id"]: m["verified"] for m in data["memories"]} == {mid: False, good: True}
    assert "malformed" in cli.fails("show", mid)
    result = cli("export", *ID)
    assert result.exit_code == 1 and [json.loads(x)["id"] for x in result.stdout.splitlines()] == [good]
    assert "doctor found" in cli.fails("doctor")


def test_I1_list_says_when_rows_failed_verification(cli: Cli) -> None:
    """Outside trial: after a row was edited in the file, `list` printed "no memories" and exited 0."""
    mid = _save(cli, "User prefers Go")
    good = _save(cli, "User prefers tea")
    _raw_sql(cli.db, "UPDATE memories SET content = 'User prefers Rust' WHERE id = ?", mid)
    result = cli("list", *ID)
    assert result.exit_code == 1 and good in result.stdout and mid not in result.stdout
    assert "1 memory of this scope failed verification" in result.stderr and "memwarden doctor" in result.stderr
