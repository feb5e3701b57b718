"""PostgreSQL for the benchmarks (issue 14): ``--postgres ADMIN_URL`` names a server where the benchmark may create
databases (and the roles ``memwarden migrate`` makes). Each run creates its own databases with unique names —
one migrated for memwarden (served through its application role, as ``memwarden serve`` would), one for
LangGraph's ``PostgresStore`` (owned by the admin role, as its docs set it up) — and drops them and the roles
at the end. The only SQL here is the administration of databases and roles, and reading the server's settings."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import metadata
from urllib.parse import urlsplit, urlunsplit

import psycopg

from memwarden.store.postgres.migrate import migrate

SETTINGS = ("synchronous_commit", "fsync", "wal_sync_method", "full_page_writes", "shared_buffers")


def url_for(url: str, database: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + database, parts.query, ""))


@dataclass(frozen=True)
class PgTarget:
    app_url: str  # memwarden's database, through its application role
    operator_url: str
    lg_url: str  # LangGraph's database, through the admin role
    server: str  # version and durability settings, for the report
    langgraph: str  # "langgraph-checkpoint-postgres X.Y.Z", or why it is missing


def langgraph_postgres() -> str | None:
    """The installed langgraph-checkpoint-postgres version, or None."""
    try:
        import langgraph.store.postgres  # noqa: F401
    except ImportError:
        return None
    return metadata.version("langgraph-checkpoint-postgres")


def analyze(target: PgTarget, admin_url: str) -> None:
    """Planner statistics after a bulk build, as autovacuum would gather them on a running server (only the owner
    may ANALYZE; the benchmark holds the admin URL)."""
    database = urlsplit(target.app_url).path.lstrip("/")
    with psycopg.connect(url_for(admin_url, database), autocommit=True, connect_timeout=10) as conn:
        conn.execute("ANALYZE")


@contextmanager
def databases(admin_url: str, prefix: str) -> Iterator[PgTarget]:
    name = f"{prefix}_{secrets.token_hex(4)}"
    mw_db, lg_db = f"{name}_mw", f"{name}_lg"
    with psycopg.connect(admin_url, autocommit=True, connect_timeout=10) as conn:
        version = str(conn.execute("SHOW server_version").fetchone()[0])  # type: ignore[index]
        settings = ", ".join(f"{s}={conn.execute(f'SHOW {s}').fetchone()[0]}" for s in SETTINGS)  # type: ignore[index]
        for db in (mw_db, lg_db):
            conn.execute(f'CREATE DATABASE "{db}"')
    roles: tuple[str, ...] = ()
    try:
        done = migrate(url_for(admin_url, mw_db))
        roles = (done.app_role, done.operator_role)
        lg = langgraph_postgres()
        yield PgTarget(done.app_url, done.operator_url, url_for(admin_url, lg_db), f"PostgreSQL {version}: {settings}",
                       f"langgraph-checkpoint-postgres {lg}" if lg else "langgraph-checkpoint-postgres not installed")
    finally:
        with psycopg.connect(admin_url, autocommit=True, connect_timeout=10) as conn:
            for db in (mw_db, lg_db):
                conn.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
            for role in roles:
                conn.execute(f'DROP ROLE IF EXISTS "{role}"')
