"""I1 key handling: the signing key lives outside the database, in ``$MEMWARDEN_KEY`` or a key file that
only its owner can read; weak or exposed keys are refused with a clear message."""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

import pytest

import memwarden
from memwarden.errors import KeyError_
from memwarden.keys import load_key

SCOPE = memwarden.Scope(tenant="acme", user="u-42", agent="support")


@pytest.fixture
def key_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No $MEMWARDEN_KEY; $MEMWARDEN_KEY_FILE points at a file that does not exist yet."""
    path = tmp_path / "keys" / "secret.key"
    monkeypatch.delenv("MEMWARDEN_KEY", raising=False)
    monkeypatch.setenv("MEMWARDEN_KEY_FILE", str(path))
    return path


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_i1_key_file_is_created_with_mode_0600_when_missing(key_file: Path, db_path: Path) -> None:
    assert not key_file.exists()
    with memwarden.open(db_path) as store, store.session(SCOPE) as s:
        mid = s.save("User prefers Go", kind="preference").id
    assert key_file.is_file() and _mode(key_file) == 0o600
    assert len(key_file.read_bytes().strip()) >= 32
    assert not _mode(key_file.parent) & (stat.S_IWGRP | stat.S_IWOTH)
    with memwarden.open(db_path) as store, store.session(SCOPE) as s:  # same key next time: records verify
        assert mid and s.view(mid).content == "User prefers Go"


def test_i1_key_file_is_created_0600_even_with_a_permissive_umask(key_file: Path, db_path: Path) -> None:
    old = os.umask(0)
    try:
        memwarden.open(db_path).close()
    finally:
        os.umask(old)
    assert _mode(key_file) == 0o600


def test_i1_default_key_file_lives_in_the_user_config_dir(tmp_path: Path, db_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMWARDEN_KEY", raising=False)
    monkeypatch.delenv("MEMWARDEN_KEY_FILE", raising=False)
    memwarden.open(db_path).close()
    path = tmp_path / "xdg-config" / "memwarden" / "secret.key"  # conftest points XDG_CONFIG_HOME here
    assert path.is_file() and _mode(path) == 0o600
    assert not db_path.parent.samefile(path.parent)


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660, 0o666])
def test_i1_key_file_readable_by_others_is_refused(key_file: Path, db_path: Path, mode: int) -> None:
    key_file.parent.mkdir(parents=True)
    key_file.write_text(secrets.token_hex(32))
    key_file.chmod(mode)
    with pytest.raises(KeyError_) as err:
        memwarden.open(db_path)
    msg = str(err.value)
    assert str(key_file) in msg and f"{mode:o}" in msg and "chmod 600" in msg
    assert "\n" not in msg


def test_i1_key_file_symlink_to_an_open_file_is_refused(key_file: Path, tmp_path: Path, db_path: Path
                                                        ) -> None:
    target = tmp_path / "world-readable.key"
    target.write_text(secrets.token_hex(32))
    target.chmod(0o644)
    key_file.parent.mkdir(parents=True)
    key_file.symlink_to(target)
    with pytest.raises(KeyError_, match="chmod 600"):
        memwarden.open(db_path)


def test_i1_key_file_with_too_few_bytes_is_refused(key_file: Path, db_path: Path) -> None:
    key_file.parent.mkdir(parents=True)
    key_file.write_text("short")
    key_file.chmod(0o600)
    with pytest.raises(KeyError_, match="fewer than 32 bytes"):
        memwarden.open(db_path)


@pytest.mark.parametrize("value", ["", "x", "0123456789abcdef0123456789abcde"])
def test_i1_short_env_key_is_refused(monkeypatch: pytest.MonkeyPatch, db_path: Path, value: str) -> None:
    monkeypatch.setenv("MEMWARDEN_KEY", value)
    with pytest.raises(KeyError_, match=r"\$MEMWARDEN_KEY must be at least 32 characters"):
        memwarden.open(db_path)


def test_i1_short_explicit_key_is_refused(db_path: Path) -> None:
    with pytest.raises(KeyError_, match="at least 32"):
        memwarden.open(db_path, key=b"too short")


def test_i1_env_key_wins_over_key_file(key_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env_key = secrets.token_hex(32)
    monkeypatch.setenv("MEMWARDEN_KEY", env_key)
    assert load_key() == env_key.encode()
    assert not key_file.exists()  # no file created when the env var provides the key


def test_i1_key_never_lands_in_the_database(store: memwarden.MemoryService, db_path: Path) -> None:
    key = os.environ["MEMWARDEN_KEY"]
    with store.session(SCOPE) as s:
        s.save("User prefers Go", kind="preference")
        s.save("\x00rejected", kind="fact")
    store.close()
    blob = b"".join(p.read_bytes() for p in db_path.parent.glob(db_path.name + "*"))
    assert key.encode() not in blob and bytes.fromhex(key) not in blob


def test_i1_wrong_key_file_for_an_existing_database_is_refused(key_file: Path, db_path: Path) -> None:
    memwarden.open(db_path).close()
    key_file.write_text(secrets.token_hex(32))
    with pytest.raises(KeyError_, match="different key"):
        memwarden.open(db_path)
