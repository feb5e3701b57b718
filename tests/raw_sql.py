"""Editing a database file around memwarden: a plain sqlite3 connection, as an attacker with access to the file
would (or a test setting up a state the API refuses to create). Shared by the tests that tamper with rows."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

Statement = str | tuple[str, Sequence[object]]


def raw_sql(db: Path, *statements: Statement) -> None:
    """Run ``statements`` (SQL text, or ``(sql, params)``) on ``db`` outside memwarden, committed together."""
    conn = sqlite3.connect(db)
    try:
        for st in statements:
            sql, params = (st, ()) if isinstance(st, str) else st
            conn.execute(sql, params)
        conn.commit()
    finally:
        conn.close()
