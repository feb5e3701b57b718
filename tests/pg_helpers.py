"""A PostgreSQL server for the tests (issue 14): ``$MEMWARDEN_TEST_PG`` (an admin URL; default the local server,
trust auth, user ``postgres``). Each run migrates one template database (creating its two roles), and each test
gets its own database cloned from it; both are dropped afterwards, roles included. An unreachable server fails
the tests that need it — it never skips them. The only SQL here is the administration of databases and roles."""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from memwarden.store.postgres.migrate import Migrated, migrate

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
    if store_url.startswith(("postgresql://", "postgres://")):
        database = urlsplit(store_url).path.lstrip("/")
        with psycopg.connect(url_for(ADMIN_URL, database), autocommit=True) as conn:
            conn.execute(sql.replace("?", "%s"), params)  # type: ignore[arg-type]
        return
    import sqlite3

    conn3 = sqlite3.connect(store_url)
    try:
        conn3.execute(sql, params)
        conn3.commit()
    finally:
        conn3.close()


def tamper_audit(store_url: str, *statements: tuple[str, tuple[object, ...]]) -> None:
    """Edit the audit log around the API, as its owner would: past the append-only triggers (SQLite: dropped;
    PostgreSQL: disabled for the edit, as the owner can), ``?`` placeholders on both engines."""
    if store_url.startswith(("postgresql://", "postgres://")):
        database = urlsplit(store_url).path.lstrip("/")
        with psycopg.connect(url_for(ADMIN_URL, database), autocommit=True) as conn, conn.transaction():
            conn.execute("ALTER TABLE audit DISABLE TRIGGER audit_no_change")
            for sql, params in statements:
                conn.execute(sql.replace("?", "%s"), params)  # type: ignore[arg-type]
            conn.execute("ALTER TABLE audit ENABLE TRIGGER audit_no_change")
        return
    import sqlite3

    conn3 = sqlite3.connect(store_url)
    try:
        conn3.execute("DROP TRIGGER IF EXISTS audit_no_update")
        conn3.execute("DROP TRIGGER IF EXISTS audit_no_delete")
        for sql, params in statements:
            conn3.execute(sql, params)
        conn3.commit()
    finally:
        conn3.close()
