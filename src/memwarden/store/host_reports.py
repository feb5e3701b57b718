"""SQL for the ``host_reports`` table (issue 13): what hosts reported their sessions ingested, across processes.
Rows are signed and judged by :mod:`memwarden.host_ingest`; this module only moves them."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from memwarden.store.sqlite import Tx

Conn = sqlite3.Connection | Tx

# Every field of a row, in the order its signature covers them, then the signature.
FIELDS = ("seq", "tenant", "user_id", "agent", "reported_at", "actor", "host_session", "tool", "reason", "sources")
_SELECT = f"SELECT {', '.join(FIELDS)}, signature FROM host_reports"

Row = tuple[object, ...]


def next_seq(tx: Tx) -> int:
    """The seq the next row gets (write transactions are serialised, so it is this transaction's to take)."""
    return int(tx.execute("SELECT coalesce(max(seq), 0) + 1 FROM host_reports").fetchone()[0])


def insert(tx: Tx, fields: Sequence[object], signature: str) -> None:
    tx.execute(f"INSERT INTO host_reports ({', '.join(FIELDS)}, signature) "
               f"VALUES ({', '.join('?' * (len(FIELDS) + 1))})", (*fields, signature))


def last_before(conn: Conn, tenant: str, user: str, agent: str, before_ms: int) -> int:
    """The seq of the scope's newest report made before ``before_ms`` (0 if none): walks the scope's index
    backwards, so it reads only the reports made since then."""
    row = conn.execute("SELECT seq FROM host_reports WHERE tenant = ? AND user_id = ? AND agent = ?"
                       " AND reported_at < ? ORDER BY seq DESC LIMIT 1", (tenant, user, agent, before_ms)).fetchone()
    return 0 if row is None else int(row[0])


def after(conn: Conn, tenant: str, user: str, agent: str, seq: int, limit: int) -> list[Row]:
    """The scope's reports after ``seq``, oldest first (one probe of the scope index when there are none)."""
    return [tuple(r) for r in conn.execute(
        f"{_SELECT} WHERE tenant = ? AND user_id = ? AND agent = ? AND seq > ? ORDER BY seq LIMIT ?",
        (tenant, user, agent, seq, limit)).fetchall()]
