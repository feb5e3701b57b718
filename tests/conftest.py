"""Shared fixtures: every test gets its own database file and signing key; nothing touches the real home dir."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

import memwarden
from memwarden.service import MemoryService


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMWARDEN_KEY", secrets.token_hex(32))
    monkeypatch.delenv("MEMWARDEN_KEY_FILE", raising=False)
    monkeypatch.setenv("MEMWARDEN_URL", str(tmp_path / "default.db"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "mem.db"


# --- both engines (issue 14) ---------------------------------------------------------------------------------
# A test module with ``pytestmark = pytest.mark.engines`` runs each of its tests that use the ``store`` or
# ``store_url`` fixture on SQLite and on PostgreSQL (``-k postgres`` / ``-k sqlite`` picks one); a test of such a
# module that reaches around the public API into SQLite is marked ``sqlite_only``.


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "engines: run the module's store tests on SQLite and on PostgreSQL")
    config.addinivalue_line("markers", "sqlite_only: reaches into the SQLite file; not run on PostgreSQL")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "engine" in metafunc.fixturenames and metafunc.definition.get_closest_marker("engines") is not None:
        engines = ["sqlite"] if metafunc.definition.get_closest_marker("sqlite_only") else ["sqlite", "postgres"]
        metafunc.parametrize("engine", engines, indirect=True)


@pytest.fixture
def engine(request: pytest.FixtureRequest) -> str:
    return getattr(request, "param", "sqlite")


@pytest.fixture(scope="session")
def pg_server() -> Iterator[object]:
    import pg_helpers

    server = pg_helpers.start()
    yield server
    pg_helpers.stop(server)


@pytest.fixture
def pg_database(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    """(name, application URL) of a fresh migrated PostgreSQL database."""
    server = request.getfixturevalue("pg_server")
    name, url = server.new_database()
    yield name, url
    server.drop(name)


@pytest.fixture
def store_url(engine: str, db_path: Path, request: pytest.FixtureRequest) -> str:
    """The database the test's store lives in: a SQLite file, or a PostgreSQL application URL."""
    if engine == "postgres":
        return str(request.getfixturevalue("pg_database")[1])
    return str(db_path)


@pytest.fixture
def store(store_url: str) -> Iterator[MemoryService]:
    s = memwarden.open(store_url)
    yield s
    s.close()


@pytest.fixture
def scope() -> memwarden.Scope:
    return memwarden.Scope(tenant="acme", user="u-42", agent="support")


def held_write(store: MemoryService, scope: memwarden.Scope, content: str, **kwargs: object) -> memwarden.WriteResult:
    """Save ``content`` from a session that read a web page first: the write is untrusted and held (T2)."""
    with store.session(scope) as s:
        s.record_tool_call("web_fetch", {"url": "https://attacker.example/page"})
        return s.save(content, **kwargs)  # type: ignore[arg-type]
