"""SQL for the ``settings`` table (signed rows, I4) and the unsigned ``meta`` rows (the key fingerprint, and the
settings earlier versions kept there). It reads and writes rows; signing and deciding what to trust is
:mod:`memwarden.settings`'s job."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memwarden.store.sqlite.backend import Handle as Conn
    from memwarden.store.sqlite.backend import Tx


def read(conn: Conn, name: str) -> tuple[str, str] | None:
    """``(value, signature)`` of one setting, or ``None``."""
    row = conn.execute("SELECT value, signature FROM settings WHERE name = ?", (name,)).fetchone()
    return None if row is None else (str(row[0]), str(row[1]))


def read_all(conn: Conn) -> list[tuple[str, str, str]]:
    """Every setting row: ``(name, value, signature)``."""
    return [(str(n), str(v), str(s)) for n, v, s in
            conn.execute("SELECT name, value, signature FROM settings ORDER BY name").fetchall()]


def write(tx: Tx, name: str, value: str, signature: str) -> None:
    tx.execute("INSERT OR REPLACE INTO settings (name, value, signature) VALUES (?, ?, ?)", (name, value, signature))


def meta_rows(conn: Conn, keys: Sequence[str]) -> dict[str, str]:
    """The ``meta`` rows named ``keys`` that exist (settings as versions before signed settings kept them)."""
    if not keys:
        return {}
    rows = conn.execute(f"SELECT key, value FROM meta WHERE key IN ({', '.join('?' * len(keys))})",
                        tuple(keys)).fetchall()
    return {str(k): str(v) for k, v in rows}


def put_meta(tx: Tx, key: str, value: str) -> None:
    tx.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))


def delete_meta(tx: Tx, keys: Sequence[str]) -> None:
    tx.executemany("DELETE FROM meta WHERE key = ?", [(k,) for k in keys])

