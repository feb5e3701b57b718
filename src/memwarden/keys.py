"""The signing key (I1): kept outside the database, in ``$MEMWARDEN_KEY`` or a key file with mode 0600.

Resolution order: an explicit ``key=`` passed to :func:`memwarden.open`, then ``$MEMWARDEN_KEY`` (at least 32
characters), then the file named by ``$MEMWARDEN_KEY_FILE``, then ``<user config dir>/memwarden/secret.key``.
A missing default key file is created with 32 random bytes and mode 0600; an existing key file readable by group
or others is refused, because a key anyone can read signs nothing.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
from pathlib import Path

from platformdirs import user_config_dir

from memwarden.errors import KeyError_

MIN_ENV_KEY_CHARS = 32


def default_key_path() -> Path:
    env = os.environ.get("MEMWARDEN_KEY_FILE")
    if env:
        return Path(env).expanduser()
    return Path(user_config_dir("memwarden")) / "secret.key"


def _read_key_file(path: Path) -> bytes:
    try:
        st = path.stat()
    except OSError as exc:
        raise KeyError_(f"cannot read key file {path}: {exc.strerror}") from None
    if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise KeyError_(
            f"key file {path} is readable by others (mode {stat.S_IMODE(st.st_mode):o}); run: chmod 600 {path}"
        )
    data = path.read_bytes().strip()
    if len(data) < 32:
        raise KeyError_(f"key file {path} holds fewer than 32 bytes; it is not a memwarden key")
    return data


def _create_key_file(path: Path) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    key = secrets.token_hex(32).encode()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return _read_key_file(path)  # another process created it first
    with os.fdopen(fd, "wb") as fh:
        fh.write(key + b"\n")
        fh.flush()
        os.fsync(fh.fileno())
    return key


def load_key(explicit: bytes | str | None = None, *, create: bool = True) -> bytes:
    """Return the raw HMAC key (creating the key file on first use; with ``create`` False — the database
    already exists, so it was signed with some key — a missing key file is an error, never a new key)."""
    if explicit is not None:
        raw = explicit.encode() if isinstance(explicit, str) else explicit
        if len(raw) < MIN_ENV_KEY_CHARS:
            raise KeyError_(f"the signing key must be at least {MIN_ENV_KEY_CHARS} bytes")
        return raw
    env = os.environ.get("MEMWARDEN_KEY")
    if env is not None:
        if len(env) < MIN_ENV_KEY_CHARS:
            raise KeyError_(f"$MEMWARDEN_KEY must be at least {MIN_ENV_KEY_CHARS} characters")
        return env.encode()
    path = default_key_path()
    if path.exists():
        return _read_key_file(path)
    if not create:
        raise KeyError_(f"no key file at {path}, but the database already exists and was signed with a key: set "
                        "$MEMWARDEN_KEY_FILE (or $MEMWARDEN_KEY) to the key it was created with")
    return _create_key_file(path)


def fingerprint(key: bytes) -> str:
    """A public fingerprint stored in the database so a wrong key is reported, not silently mis-verified."""
    return hmac.new(key, b"memwarden key fingerprint v1", hashlib.sha256).hexdigest()[:32]
