"""``memwarden migrate``: bring a PostgreSQL database to this code's schema, as its owner.

Applies the migrations of schema.py the database has not seen (in one transaction, under a session advisory lock
so two migrates never interleave), refuses a database newer than the code, creates the application and operator
roles if they do not exist (``LOGIN NOSUPERUSER NOBYPASSRLS NOINHERIT``, a random password each, members of
nothing) and (re)creates every policy and grant. Returns the application URL: the owner's URL with the
application role's name and password."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import psycopg
from psycopg import sql

from memwarden.errors import UnsupportedURL
from memwarden.store.postgres.backend import connect, redact
from memwarden.store.postgres.schema import MIGRATIONS, SCHEMA_VERSION, policy_statements, role_comment, role_names

MIGRATE_LOCK = 0x6D656D6D  # session advisory lock of a migrate ("memm")


@dataclass(frozen=True)
class Migrated:
    version_before: int
    version: int
    applied: list[int]
    app_role: str
    operator_role: str
    app_url: str  # with the password when the role was created by this run, else without it
    operator_url: str
    created_roles: list[str]


def _with_user(url: str, user: str, password: str | None) -> str:
    parts = urlsplit(url)
    host = parts.netloc.rsplit("@", 1)[-1]
    cred = quote(user, safe="") + ("" if password is None else ":" + quote(password, safe=""))
    return urlunsplit((parts.scheme, f"{cred}@{host}", parts.path, parts.query, parts.fragment))


def schema_version(conn: psycopg.Connection[Any]) -> int:
    exists = conn.execute("SELECT 1 FROM pg_tables WHERE schemaname = 'public' AND tablename = 'meta'").fetchone()
    if exists is None:
        return 0
    row = conn.execute("SELECT value FROM meta WHERE key = 'pg_schema_version'").fetchone()
    return 0 if row is None else int(row[0])


def migrate(owner_url: str) -> Migrated:
    conn = connect(owner_url, "the PostgreSQL server")
    try:
        return _migrate(conn, owner_url)
    except psycopg.errors.InsufficientPrivilege as exc:
        raise UnsupportedURL(f"migrate failed on {redact(owner_url)}: {str(exc).strip().splitlines()[0]}; run "
                             "migrate with the URL of a role that may create roles and tables in this database "
                             "(its owner with CREATEROLE, or a superuser), never the application URL") from None
    except psycopg.Error as exc:
        raise UnsupportedURL(f"migrate failed on {redact(owner_url)}: {str(exc).strip().splitlines()[0]}") from None
    finally:
        conn.close()


def _migrate(conn: psycopg.Connection[Any], owner_url: str) -> Migrated:
    conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATE_LOCK,))
    dbname = str(conn.execute("SELECT current_database()").fetchone()[0])  # type: ignore[index]
    before = schema_version(conn)
    if before > SCHEMA_VERSION:
        raise UnsupportedURL(f"{redact(owner_url)} has schema version {before}, newer than this memwarden's "
                             f"({SCHEMA_VERSION}): upgrade memwarden, never migrate a database down")
    app, operator = role_names(dbname)
    if before:
        stored = dict(conn.execute("SELECT key, value FROM meta WHERE key IN ('pg_app_role', 'pg_operator_role')"
                                   ).fetchall())
        app, operator = stored.get("pg_app_role", app), stored.get("pg_operator_role", operator)
    applied: list[int] = []
    created: list[str] = []
    passwords: dict[str, str] = {}
    with conn.transaction():
        for version, statements in MIGRATIONS:
            if version <= before:
                continue
            for stmt in statements:
                conn.execute(stmt)  # type: ignore[arg-type]
            applied.append(version)
        comment = role_comment(dbname)
        for role in (app, operator):
            ident = sql.Identifier(role)
            row = conn.execute("SELECT rolsuper OR rolbypassrls OR rolcreaterole OR rolcreatedb OR rolinherit,"
                               " shobj_description(oid, 'pg_authid') FROM pg_roles WHERE rolname = %s",
                               (role,)).fetchone()
            if row is None:
                password = secrets.token_urlsafe(24)
                conn.execute(sql.SQL("CREATE ROLE {} LOGIN NOINHERIT PASSWORD {}").format(ident,
                                                                                         sql.Literal(password)))
                conn.execute(sql.SQL("COMMENT ON ROLE {} IS {}").format(ident, sql.Literal(comment)))
                passwords[role] = password
                created.append(role)
            else:
                said = row[1] or ""
                if said.startswith("memwarden roles of database ") and said != comment:
                    raise UnsupportedURL(f"the role {role} already serves another database ({said[28:][:80]}); "
                                         "memwarden will not share roles between databases: rename this database "
                                         "or drop that role")
                if row[0]:  # whatever it was: never a superuser, never bypassing RLS, member of nothing
                    conn.execute(sql.SQL("ALTER ROLE {} NOSUPERUSER NOBYPASSRLS NOCREATEROLE NOCREATEDB NOINHERIT")
                                 .format(ident))
                if not said:
                    conn.execute(sql.SQL("COMMENT ON ROLE {} IS {}").format(ident, sql.Literal(comment)))
            for (granted,) in conn.execute("SELECT g.rolname FROM pg_auth_members m JOIN pg_roles g ON g.oid ="
                                           " m.roleid JOIN pg_roles r ON r.oid = m.member WHERE r.rolname = %s",
                                           (role,)).fetchall():
                conn.execute(sql.SQL("REVOKE {} FROM {}").format(sql.Identifier(granted), ident))
        for stmt in policy_statements(app, operator, lambda n: sql.Identifier(n).as_string(conn)):
            conn.execute(stmt)  # type: ignore[arg-type]
        for key, value in (("pg_schema_version", str(SCHEMA_VERSION)), ("pg_app_role", app),
                           ("pg_operator_role", operator)):
            conn.execute("INSERT INTO meta VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                         (key, value))
    conn.execute("ANALYZE")  # fresh planner statistics (after a bulk import, run migrate again to refresh them)
    conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATE_LOCK,))
    return Migrated(before, SCHEMA_VERSION, applied, app, operator, _with_user(owner_url, app, passwords.get(app)),
                    _with_user(owner_url, operator, passwords.get(operator)), created)
