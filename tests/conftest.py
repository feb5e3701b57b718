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


@pytest.fixture
def store(db_path: Path) -> Iterator[MemoryService]:
    s = memwarden.open(db_path)
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
