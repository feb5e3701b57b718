"""A PostgreSQL server for the tests (issue 14): ``$MEMWARDEN_TEST_PG`` (an admin URL; default the local server,
trust auth, user ``postgres``). Each run migrates one template database (creating its two roles), and each test
gets its own database cloned from it; both are dropped afterwards, roles included. An unreachable server fails
the tests that need it — it never skips them. The only SQL here is the administration of databases and roles."""

from __future__ import annotations

import os
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from memwarden.store.postgres.migrate import Migrated, migrate
from raw_sql import raw_sql

ADMIN_URL = os.environ.get("MEMWARDEN_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")


def url_for(url: str, database: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + database, parts.query, ""))


@dataclass
class PgServer:
    run: str
    template: str
    migrated: Migrated
    count: int = 0

    def admin(self) -> psycopg.Connection[tuple[object, ...]]:
        return psycopg.connect(ADMIN_URL, autocommit=True, connect_timeout=5)

    def new_database(self) -> tuple[str, str]:
        """(name, application URL) of a fresh migrated database."""
        self.count += 1
        name = f"{self.run}_{self.count}"
        with self.admin() as conn:
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{self.template}"')
        return name, url_for(self.migrated.app_url, name)

    def owner_url(self, name: str) -> str:
        return url_for(ADMIN_URL, name)

    def operator_url(self, name: str) -> str:
        return url_for(self.migrated.operator_url, name)

    def drop(self, name: str) -> None:
        with self.admin() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def start() -> PgServer:
    run = "mwt_" + secrets.token_hex(4)
    template = run + "_tpl"
    try:
        with psycopg.connect(ADMIN_URL, autocommit=True, connect_timeout=5) as conn:
            conn.execute(f'CREATE DATABASE "{template}"')
    except psycopg.Error as exc:
        pytest.fail(f"PostgreSQL test server unreachable at {ADMIN_URL} ($MEMWARDEN_TEST_PG): {exc}", pytrace=False)
    return PgServer(run, template, migrate(url_for(ADMIN_URL, template)))


def stop(server: PgServer) -> None:
    with server.admin() as conn:
        names = [r[0] for r in conn.execute("SELECT datname FROM pg_database WHERE datname LIKE %s",
                                            (server.run + "%",)).fetchall()]
        for name in names:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        for role in (server.migrated.app_role, server.migrated.operator_role):
            conn.execute(f'DROP ROLE IF EXISTS "{role}"')


def edit_around_the_api(store_url: str, sql: str, params: tuple[object, ...] = ()) -> None:
    """Run ``sql`` (``?`` placeholders) on the store's database outside memwarden, as an attacker with file or
    owner access would: on SQLite with sqlite3, on PostgreSQL as the admin role (which row-level security does not
    confine)."""
    _around_the_api(store_url, [(sql, params)])


def tamper_audit(store_url: str, *statements: tuple[str, tuple[object, ...]]) -> None:
    """Edit the audit log around the API, as its owner would: past the append-only triggers (SQLite: dropped;
    PostgreSQL: disabled for the edit, as the owner can), ``?`` placeholders on both engines."""
    if _is_postgres(store_url):
        _around_the_api(store_url, [("ALTER TABLE audit DISABLE TRIGGER audit_no_change", ()), *statements,
                                    ("ALTER TABLE audit ENABLE TRIGGER audit_no_change", ())])
    else:
        _around_the_api(store_url, [("DROP TRIGGER IF EXISTS audit_no_update", ()),
                                    ("DROP TRIGGER IF EXISTS audit_no_delete", ()), *statements])


def _is_postgres(store_url: str) -> bool:
    return store_url.startswith(("postgresql://", "postgres://"))


def _around_the_api(store_url: str, statements: Sequence[tuple[str, tuple[object, ...]]]) -> None:
    """``statements`` committed together outside memwarden: SQLite through raw_sql, PostgreSQL as the admin."""
    if not _is_postgres(store_url):
        raw_sql(Path(store_url), *statements)
        return
    database = urlsplit(store_url).path.lstrip("/")
    with psycopg.connect(url_for(ADMIN_URL, database), autocommit=True) as conn, conn.transaction():
        for sql, params in statements:
            conn.execute(sql.replace("?", "%s"), params)  # type: ignore[arg-type]
