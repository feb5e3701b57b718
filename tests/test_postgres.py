"""Issue 14 on PostgreSQL: row-level security as the second wall (S3), the roles memwarden serves through,
``memwarden migrate`` (versioned, refusing a newer database), clear errors, and one audit chain under writers in
several processes (A1). Needs the PostgreSQL test server (tests/pg_helpers.py): unreachable → these fail.
Behaviour shared with SQLite runs on both engines in the modules marked ``engines`` and at the end of this one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from typer.testing import CliRunner

import memwarden
import memwarden.store.base
from memwarden import audit
from memwarden.cli import app
from memwarden.errors import UnsupportedURL
from memwarden.service import MemoryService
from memwarden.store.base import View
from memwarden.store.postgres.schema import SCHEMA_VERSION
from memwarden.store.postgres.views import dropped_scope_filter
from pg_helpers import ADMIN_URL, PgServer, url_for

A = memwarden.Scope("acme", "u1", "a")
B = memwarden.Scope("acme", "u1", "b")  # another agent of the same user
C = memwarden.Scope("acme", "u2", "a")  # another user of the same tenant
D = memwarden.Scope("other", "u1", "a")  # another tenant
OTHERS = (B, C, D)


def _owner(pg_server: PgServer, name: str) -> psycopg.Connection[tuple[object, ...]]:
    return psycopg.connect(pg_server.owner_url(name), autocommit=True)


def _rows_outside(pg_server: PgServer, name: str, scope: memwarden.Scope) -> list[tuple[object, ...]]:
    """Every row of every memory table not in ``scope``, as the owner sees them (RLS admits the owner)."""
    out: list[tuple[object, ...]] = []
    with _owner(pg_server, name) as conn:
        for table, cols in (("memories", "id, version, content, signature"), ("memory_terms", "rk, content"),
                            ("memory_dupkeys", "rk, dup"), ("memory_history", "id, version"),
                            ("scope_usage", "kind, entries, bytes")):
            out += [(table, *r) for r in conn.execute(
                f"SELECT {cols} FROM {table} WHERE NOT (tenant = %s AND user_id = %s AND agent = %s)"
                "", (scope.tenant, scope.user, scope.agent_key)).fetchall()]
    return sorted(out, key=repr)


@pytest.fixture
def seeded(pg_database: tuple[str, str]) -> tuple[str, str, MemoryService, dict[memwarden.Scope, str]]:
    name, url = pg_database
    store = memwarden.open(url)
    ids = {}
    for scope in (A, *OTHERS):
        with store.session(scope) as s:
            r = s.save(f"The deploy target of {scope} is the blue cluster", kind="fact")
            assert r.id is not None
            ids[scope] = r.id
            s.save(f"A second fact about the blue cluster for {scope}", kind="fact")
    return name, url, store, ids


def test_S3_rls_dropped_scope_filter_reads_return_only_the_readers_scope(seeded: tuple) -> None:
    _name, _url, store, ids = seeded
    try:
        with dropped_scope_filter(), store.session(A) as s:
            seen = {r.provenance.agent for r in s.view()} | {r.provenance.agent for r in s.search("blue cluster")}
            got = {(r.provenance.tenant, r.provenance.user, r.provenance.agent) for r in s.view()}
            assert got == {("acme", "u1", "a")} and seen == {"a"}
            for other in OTHERS:
                with pytest.raises(memwarden.NotFound):  # by id, with the filter gone: RLS still refuses it
                    s.view(ids[other])
        with dropped_scope_filter():  # the operator's listing of one user: never another user's or tenant's
            rows = [c.record for c in store.operator_rows("acme", "u1") if c.record is not None]
            assert {(r.provenance.tenant, r.provenance.user) for r in rows} == {("acme", "u1")}
            assert {r.provenance.agent for r in rows} == {"a", "b"}
    finally:
        store.close()


def test_S3_rls_dropped_scope_filter_updates_and_deletes_touch_only_the_writers_scope(
        seeded: tuple, pg_server: PgServer) -> None:
    name, _url, store, ids = seeded
    before = _rows_outside(pg_server, name, A)
    try:
        with dropped_scope_filter(), store.session(A) as s:
            s.update(ids[A], "The deploy target is the green cluster", expected_version=1)
            assert _rows_outside(pg_server, name, A) == before
            s.remove(ids[A])
            assert _rows_outside(pg_server, name, A) == before
    finally:
        store.close()
    for scope in OTHERS:  # and every other scope still reads its own records, signatures intact
        with memwarden.open(_url) as again, again.session(scope) as s:
            assert s.view(ids[scope]).id == ids[scope]


def test_S3_rls_app_role_cannot_disable_rls_or_become_the_operator(seeded: tuple, pg_server: PgServer) -> None:
    name, url, store, _ids = seeded
    store.close()
    with psycopg.connect(url, autocommit=True) as conn:
        for stmt in ("ALTER TABLE memories DISABLE ROW LEVEL SECURITY", "ALTER TABLE memories NO FORCE ROW LEVEL"
                     " SECURITY", "DROP POLICY memories_app ON memories",
                     f'SET ROLE "{pg_server.migrated.operator_role}"', "UPDATE audit SET actor = 'x'",
                     "DELETE FROM audit", "ALTER TABLE audit DISABLE TRIGGER ALL"):
            with pytest.raises(psycopg.Error):
                conn.execute(stmt)
        # no scope given: no memory row at all; and what the app role can see of audit rows is none
        assert conn.execute("SELECT count(*) FROM memories").fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM memory_terms").fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM audit").fetchone() == (0,)
        # a tenant's scope admits that tenant's rows only, never all of them ('all' is the operator's reach)
        conn.execute("BEGIN")
        conn.execute("SELECT set_config('memwarden.reach', 'all', true)")
        assert conn.execute("SELECT count(*) FROM memories").fetchone() == (0,)
        conn.execute("ROLLBACK")
        row = conn.execute("SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user").fetchone()
        assert row == (False, False)
        owned = conn.execute("SELECT count(*) FROM pg_tables WHERE tableowner = current_user").fetchone()
        assert owned == (0,)
    with _owner(pg_server, name) as conn:  # every memory table: RLS enabled and forced
        tables = {r[0]: (r[1], r[2]) for r in conn.execute(
            "SELECT relname, relrowsecurity, relforcerowsecurity FROM pg_class WHERE relkind = 'r'"
            " AND relnamespace = 'public'::regnamespace").fetchall()}
        for t in ("memories", "memory_history", "memory_links", "memory_terms", "memory_dupkeys", "memory_vectors",
                  "audit", "scope_usage", "host_reports"):
            assert tables[t] == (True, True), t


@pytest.mark.parametrize("tenant", ["acme' OR '1'='1", "*", "acme', true), set_config('memwarden.reach', 'all",
                                    "acme\\", "{acme}"])
def test_S3_rls_a_tenant_name_cannot_reach_another_tenant(seeded: tuple, tenant: str) -> None:
    _name, _url, store, _ids = seeded
    try:
        evil = memwarden.Scope(tenant, "u1", "a")
        with store.session(evil) as s:
            assert s.view() == [] and s.search("blue cluster") == []
            assert s.save("The evil tenant's own note").id is not None
        assert {c.record.provenance.tenant for c in store.operator_rows(tenant, "u1") if c.record} == {tenant}
        with store.session(A) as s:  # and acme sees nothing of it
            assert {r.provenance.tenant for r in s.view()} == {"acme"}
    finally:
        store.close()


def test_S3_rls_refuses_to_serve_through_a_role_that_bypasses_rls(pg_database: tuple[str, str],
                                                                  pg_server: PgServer) -> None:
    name, _url = pg_database
    with pytest.raises(UnsupportedURL, match=r"refusing to serve through role 'postgres' \(a superuser.*connect as"
                                             f" '{pg_server.migrated.app_role}'"):
        memwarden.open(pg_server.owner_url(name))
    role = f"{name}_bypass"
    with pg_server.admin() as conn:
        conn.execute(f'CREATE ROLE "{role}" LOGIN BYPASSRLS')
    try:
        with pytest.raises(UnsupportedURL, match="BYPASSRLS"):
            memwarden.open(url_for(f"postgresql://{role}@127.0.0.1:5432/x", name))
    finally:
        with pg_server.admin() as conn:
            conn.execute(f'DROP ROLE "{role}"')


def test_S3_rls_operator_role_reaches_every_tenant(seeded: tuple, pg_server: PgServer) -> None:
    name, _url, store, ids = seeded
    store.close()
    with memwarden.open(pg_server.operator_url(name)) as op:
        assert op.backend.operator
        with op.backend.read() as db:
            assert set(ids.values()) <= {r[0] for r in db.records(View.unscoped())}
            assert db.count(View.unscoped()) == 8


def test_migrate_creates_roles_prints_the_application_url_and_refuses_a_newer_database(
        pg_server: PgServer) -> None:
    name = f"{pg_server.run}_mig"
    with pg_server.admin() as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        owner = url_for(ADMIN_URL, name)
        runner = CliRunner()
        result = runner.invoke(app, ["--db", owner, "migrate", "--json"])
        assert result.exit_code == 0, result.output
        out = json.loads(result.stdout)
        assert out["version_before"] == 0 and out["applied"] == list(range(1, SCHEMA_VERSION + 1)) and out["app_url"].startswith("postgresql://")
        assert out["app_role"] == f"{name}_app" and set(out["created_roles"]) == {f"{name}_app", f"{name}_operator"}
        again = runner.invoke(app, ["--db", owner, "migrate"])
        assert again.exit_code == 0 and "already current" in again.stdout and "serve with" in again.stdout
        with memwarden.open(out["app_url"]) as store, store.session(A) as s:
            assert s.save("User prefers tea").id is not None
        with psycopg.connect(owner, autocommit=True) as conn:
            conn.execute("UPDATE meta SET value = '99' WHERE key = 'pg_schema_version'")
        newer = runner.invoke(app, ["--db", owner, "migrate"])
        assert newer.exit_code == 1 and "newer than this memwarden" in newer.stderr
        assert newer.stderr.count("\n") == 1
        with pytest.raises(UnsupportedURL, match="newer than this memwarden"):
            memwarden.open(out["app_url"])
    finally:
        with pg_server.admin() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            for role in (f"{name}_app", f"{name}_operator"):
                conn.execute(f'DROP ROLE IF EXISTS "{role}"')


def test_a_database_without_the_schema_or_an_unreachable_server_is_one_line(pg_server: PgServer) -> None:
    runner = CliRunner()
    for url, want in (("postgresql://postgres@127.0.0.1:1/none", "cannot connect to PostgreSQL"),
                      (f"{ADMIN_URL}", "no memwarden schema: run `memwarden migrate"),
                      ("postgresql://%zz@127.0.0.1:5432/x?sslmode=bogus", "PostgreSQL")):
        result = runner.invoke(app, ["--db", url, "list", "--tenant", "t", "--user", "u"])
        assert result.exit_code == 1 and result.stderr.count("\n") == 1 and want in result.stderr, result.output
        assert "Traceback" not in result.output


def test_migrate_refuses_a_sqlite_url(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["--db", str(tmp_path / "m.db"), "migrate"])
    assert result.exit_code == 1 and "migrate is for PostgreSQL" in result.stderr


_CHILD = """
import sys, memwarden
store = memwarden.open(sys.argv[1])
scope = memwarden.Scope("acme", "u-%s" % sys.argv[2], "a")
with store.session(scope) as s:
    for i in range(int(sys.argv[3])):
        assert s.save(f"Writer {sys.argv[2]} note number {i} about the build").id is not None
store.close()
"""


def test_A1_one_audit_chain_under_writers_in_several_processes(pg_database: tuple[str, str]) -> None:
    _name, url = pg_database
    with memwarden.open(url) as store:  # the store's first open (key fingerprint, anchor) before the writers
        pass
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    procs = [subprocess.Popen([sys.executable, "-c", _CHILD, url, str(n), "15"], env=env) for n in range(4)]
    assert [p.wait(timeout=300) for p in procs] == [0, 0, 0, 0]
    with memwarden.open(url) as store:
        assert audit.verify(store.backend, store.signer) == []
        with store.backend.read() as db:
            seqs = [int(r[0]) for r in db.audit_rows()]
            assert seqs == list(range(1, len(seqs) + 1))
            added = [r for r in db.audit_rows() if r[2] == "added"]
            assert len(added) == 60
        for n in range(4):
            with store.session(memwarden.Scope("acme", f"u-{n}", "a")) as s:
                assert len(s.view()) == 15 and len(s.search("build note")) > 0


# --- shared behaviour, both engines -----------------------------------------------------------------------

@pytest.mark.engines
def test_D3_a_removed_record_leaves_no_row_in_any_index(store: MemoryService) -> None:
    with store.session(A) as s:
        first = s.save("The staging database lives in eu-west-1").id
        assert first is not None
        s.update(first, "The staging database lives in eu-central-1", expected_version=1)
        with store.backend.read() as db:
            key = db.row_key(first)
            assert key is not None and db.footprint(first, key)["memories"][0] == 1
            assert db.history(first)
        s.remove(first)
        with store.backend.read() as db:
            assert all(mine == 0 for mine, _total in db.footprint(first, key).values())
            assert db.history(first) == []
    assert audit.verify(store.backend, store.signer) == []


@pytest.mark.engines
def test_D2_expired_records_are_invisible_and_gc_purges_them(store: MemoryService) -> None:
    with store.session(A) as s:
        r = s.save("The temporary access code rotates weekly", ttl_days=1)
        assert r.id is not None
    import memwarden.service as svc

    real = svc.now_ms
    try:
        svc.now_ms = lambda: real() + 2 * 86_400_000  # type: ignore[assignment]
        with store.session(A) as s:
            assert s.view() == [] and s.search("access code") == []
        assert r.id in store.gc()
    finally:
        svc.now_ms = real  # type: ignore[assignment]
    with store.backend.read() as db:
        assert db.count(View.unscoped()) == 0


@pytest.mark.engines
def test_A2_reads_are_audited_and_the_chain_verifies(store: MemoryService) -> None:
    with store.session(A) as s:
        rid = s.save("User's favourite editor is helix").id
        assert rid is not None
    with store.session(A) as s:
        assert [r.id for r in s.search("favourite editor")] == [rid]
    with store.backend.read() as db:
        reads = db.audit_reads(audit.READ_EVENTS, memory_id=rid)
        assert reads and all(r[3] == "acme" for r in reads)
    assert audit.verify(store.backend, store.signer) == []


@pytest.mark.engines
def test_T2_a_tainted_write_is_held_and_invisible_until_approved(store: MemoryService) -> None:
    from conftest import held_write

    r = held_write(store, A, "The release checklist lives at docs/release.md")
    assert r.status == "review" and r.id is not None
    with store.session(A) as s:
        assert s.search("release checklist") == []
        with pytest.raises(memwarden.MemwardenError):
            s.view(r.id)
    from memwarden import auth, review

    _token, principal = auth.create_token(store, "operator", "acme")
    review.promote(store, principal, r.id)
    with store.session(A) as s:
        assert s.view(r.id).id == r.id


def test_writes_of_one_process_share_commits_and_a_serialization_failure_is_retried(
        pg_database: tuple[str, str]) -> None:
    import threading

    from psycopg import errors as pg_errors

    _name, url = pg_database
    with memwarden.open(url) as store:
        backend = store.backend
        before = (backend.commits, backend.committed_writes)

        def writer(n: int) -> None:
            with store.session(memwarden.Scope("acme", f"w{n}", "a")) as s:
                for i in range(10):
                    assert s.save(f"Thread {n} wrote note {i} about the deploy").id is not None

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        commits, writes = backend.commits - before[0], backend.committed_writes - before[1]
        assert writes >= 60 and commits <= writes  # grouped when they queued (never more commits than writes)
        assert audit.verify(backend, store.signer) == []
        calls = []

        def flaky(tx: object) -> str:
            calls.append(1)
            if len(calls) == 1:
                raise pg_errors.SerializationFailure("could not serialize access")
            return "done"

        assert backend.run_write(flaky) == "done" and len(calls) == 2

        def always(tx: object) -> None:
            raise pg_errors.SerializationFailure("could not serialize access")

        with pytest.raises(memwarden.store.base.NotCommitted, match="serialization"):
            backend.run_write(always)


@pytest.mark.engines
def test_Q4_records_folded_into_a_consolidation_are_served_only_through_it(store: MemoryService) -> None:
    from memwarden.consolidate import consolidate
    from memwarden.service import Context

    ctx = Context(A, session_id="s-test", source_type="user", actor="system:test", clearance=1)
    a = store.write(ctx, "The user's team ships the billing API every second Tuesday", kind="fact").id
    b = store.write(ctx, "The user's team keeps billing API notes in the wiki", kind="fact").id
    assert a is not None and b is not None
    assert store.write(ctx, "The user's team ships the billing API every second Tuesday, as agreed", kind="fact",
                       update_id=b, expected_version=1).id == b
    other = store.write(ctx, "The billing API dashboard lives in Grafana", kind="fact").id
    assert {r.id for r in store.search(ctx, "billing API Tuesday", k=10)} >= {a, b}
    out = consolidate(store, ctx, "fact", threshold=0.5)
    assert len(out) == 1 and set(out[0].ids) == {a, b}
    merged = out[0].merged_id
    found = [r.id for r in store.search(ctx, "billing API Tuesday", k=10)]
    assert merged in found and a not in found and b not in found and other in found


def _drop(pg_server: PgServer, databases: list[str], roles: list[str]) -> None:
    with pg_server.admin() as conn:
        for name in databases:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        for role in roles:
            conn.execute(f'DROP ROLE IF EXISTS "{role}"')


def test_S4_databases_whose_names_differ_after_40_characters_never_share_roles(pg_server: PgServer) -> None:
    """Outside trial: role names were the first 40 characters of the database name, so two such databases got
    the same roles and one's application URL wrote into the other."""
    from memwarden.store.postgres.schema import role_names

    names = [f"{pg_server.run}_{'y' * 40}{i}" for i in (1, 2)]
    roles = [r for n in names for r in role_names(n)]
    assert len(set(roles)) == 4 and all(len(r) <= 63 for r in roles)
    assert role_names("Prod") != role_names("prod") and role_names("a-b") != role_names("a_b")
    try:
        urls = []
        for name in names:
            with pg_server.admin() as conn:
                conn.execute(f'CREATE DATABASE "{name}"')
            result = CliRunner().invoke(app, ["migrate", "--db", url_for(ADMIN_URL, name), "--json"])  # --db here
            assert result.exit_code == 0, result.output
            out = json.loads(result.stdout)
            assert sorted(out["created_roles"]) == sorted(role_names(name))
            urls.append(out["app_url"])
        with memwarden.open(urls[0]) as store, store.session(A) as s:
            s.save("User prefers tea")
        wrong = url_for(urls[0], names[1])  # database 1's credentials against database 2
        with pytest.raises(UnsupportedURL):
            memwarden.open(wrong)
    finally:
        _drop(pg_server, names, roles)


def test_S4_migrate_refuses_roles_made_for_another_database(pg_server: PgServer) -> None:
    from memwarden.store.postgres.schema import role_comment, role_names

    name = f"{pg_server.run}_clash"
    app_role, op_role = role_names(name)
    try:
        with pg_server.admin() as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
            conn.execute(f'CREATE ROLE "{app_role}" LOGIN')
            conn.execute(f"COMMENT ON ROLE \"{app_role}\" IS '{role_comment('someone_else')}'")
        result = CliRunner().invoke(app, ["--db", url_for(ADMIN_URL, name), "migrate"])
        assert result.exit_code == 1 and "already serves another database" in result.stderr, result.output
        assert result.stderr.count("\n") == 1
    finally:
        _drop(pg_server, [name], [app_role, op_role])


def test_I6_a_password_in_the_query_string_is_never_shown(pg_server: PgServer) -> None:
    """Outside trial: ``?user=…&password=…`` was printed in clear by doctor and by connection errors."""
    from memwarden.store.postgres.backend import redact

    assert redact("postgresql://h/db?user=x&password=hunter2&sslmode=require") == \
        "postgresql://h/db?user=x&password=***&sslmode=require"
    assert "s3cret" not in redact("postgresql://u:s3cret@h/db?sslpassword=s3cret")
    assert redact("postgres://[bad/db") == "(a URL that does not parse)"
    name, app_url = pg_server.new_database()
    try:
        parts = psycopg.conninfo.conninfo_to_dict(app_url)
        query_url = (f"postgresql://{parts['host']}:{parts.get('port', 5432)}/{name}?user={parts['user']}"
                     f"&password={parts['password']}")
        result = CliRunner().invoke(app, ["--db", query_url, "doctor"])
        assert result.exit_code == 0 and parts["password"] not in result.output and "password=***" in result.output
        bad = CliRunner().invoke(app, ["--db", f"postgresql://127.0.0.1:5432/{name}?user=nobody&password=hunter2",
                                       "list", "--tenant", "t", "--user", "u"])
        assert bad.exit_code == 1 and "hunter2" not in bad.output and "password=***" in bad.output
    finally:
        pg_server.drop(name)


@pytest.mark.parametrize("tamper", ["edit", "delete", "truncate_tail"])
def test_A1_audit_log_tampered_as_the_owner_on_postgresql_fails_verify(pg_server: PgServer, tamper: str) -> None:
    """A1/I5 on PostgreSQL: an owner who disables the append-only trigger and edits, deletes or truncates audit
    rows is caught — by the chain (edit, delete) or by the anchor kept beside the key (a truncated tail); the
    store then refuses to serve until an operator accepts the restore."""
    name, app_url = pg_server.new_database()
    try:
        with memwarden.open(app_url) as store:
            with store.session(A) as s:
                for i in range(4):
                    s.save(f"User note number {i} about the tea order")
            assert audit.verify(store.backend, store.signer) == []
        statement = {"edit": "UPDATE audit SET actor = 'operator:mallory' WHERE seq = 3",
                     "delete": "DELETE FROM audit WHERE seq = 3",
                     "truncate_tail": "DELETE FROM audit WHERE seq >= (SELECT max(seq) - 1 FROM audit)"}[tamper]
        with psycopg.connect(pg_server.owner_url(name), autocommit=True) as conn:
            conn.execute("ALTER TABLE audit DISABLE TRIGGER audit_no_change")
            conn.execute(statement)  # type: ignore[arg-type]
            conn.execute("ALTER TABLE audit ENABLE TRIGGER audit_no_change")
        if tamper == "truncate_tail":
            with pytest.raises(memwarden.errors.RollbackDetected):
                memwarden.open(app_url)
        with memwarden.open(app_url, refuse_rollback=False) as store:
            assert audit.verify(store.backend, store.signer) != [] or store.rollback
        result = CliRunner().invoke(app, ["--db", pg_server.operator_url(name), "audit", "verify"])
        assert result.exit_code == 1, result.output
    finally:
        pg_server.drop(name)
