"""SQL for the ``settings`` table (signed rows, I4), the unsigned ``meta`` rows earlier versions kept settings in,
and the audit events a store looks up by name. It reads and writes rows; signing and deciding what to trust is
:mod:`memwarden.settings`'s job."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from memwarden.store.sqlite.backend import Tx
from memwarden.store.sqlite.schema import CONFIG_EVENTS

Conn = sqlite3.Connection | Tx


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


def delete_meta(tx: Tx, keys: Sequence[str]) -> None:
    tx.executemany("DELETE FROM meta WHERE key = ?", [(k,) for k in keys])


def audit_is_empty(conn: Conn) -> bool:
    return conn.execute("SELECT 1 FROM audit LIMIT 1").fetchone() is None


def config_events(conn: Conn, event: str) -> list[tuple[object, ...]]:
    """Audit rows of one of ``CONFIG_EVENTS`` (through their partial index), oldest first, as the chain stores
    them: ``(seq, ts, event, tenant, user_id, agent, session_id, memory_id, actor, details, prev_hash, hash)``."""
    return conn.execute(
        "SELECT seq, ts, event, tenant, user_id, agent, session_id, memory_id, actor, details, prev_hash, hash"
        f" FROM audit WHERE {CONFIG_EVENTS} AND event = ? ORDER BY seq", (event,)).fetchall()
