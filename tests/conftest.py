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
