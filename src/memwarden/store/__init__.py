"""Storage: the contract (``base.py``: what memwarden needs from a database), the record row mapping
(``rows.py``), and one package per engine (``sqlite/``, ``postgres/``). Only the engine packages hold SQL; the
service decides *what* to write, the engine decides *how*. ``open_backend`` picks the engine from the URL:
``postgresql://`` (or ``postgres://``) → PostgreSQL, anything else → a SQLite file."""

from __future__ import annotations

import os
from pathlib import Path

from memwarden.store.base import Engine, Order, Reads, View, Writes
from memwarden.store.sqlite import DATABASE_ERRORS as _SQLITE_ERRORS
from memwarden.store.sqlite import SqliteBackend, resolve_url
from memwarden.store.sqlite import open_backend as _open_sqlite

try:
    from memwarden.store.postgres import DATABASE_ERRORS as _POSTGRES_ERRORS
except ImportError:  # the postgres extra is not installed
    _POSTGRES_ERRORS = ()

# what a failing database raises
DATABASE_ERRORS: tuple[type[BaseException], ...] = (*_SQLITE_ERRORS, *_POSTGRES_ERRORS)


def url_of(url: str | os.PathLike[str] | None) -> str | os.PathLike[str] | None:
    """The explicit URL, else ``$MEMWARDEN_URL`` (None: the SQLite default)."""
    return url if url is not None else (os.environ.get("MEMWARDEN_URL") or None)


def is_postgres(url: str | os.PathLike[str] | None) -> bool:
    u = url_of(url)
    return isinstance(u, str) and u.startswith(("postgres://", "postgresql://"))


def open_backend(url: str | os.PathLike[str] | None, durability: str | None = None) -> Engine:
    if is_postgres(url):
        try:
            from memwarden.store.postgres.backend import open_backend as _open_postgres
        except ImportError:
            from memwarden.errors import UnsupportedURL

            raise UnsupportedURL("PostgreSQL needs the postgres extra: pip install 'memwarden[postgres]'") from None
        return _open_postgres(str(url_of(url)), durability)
    return _open_sqlite(url, durability)


def file_of(url: str | os.PathLike[str] | None) -> Path | None:
    """The SQLite file a URL names (None for a server database)."""
    return None if is_postgres(url) else resolve_url(url)


__all__ = ["DATABASE_ERRORS", "Engine", "Order", "Reads", "SqliteBackend", "View", "Writes", "file_of",
           "is_postgres", "open_backend", "resolve_url"]
