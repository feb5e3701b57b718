"""SQL for the ``host_reports`` table (issue 13): what hosts reported their sessions ingested, across processes.
Rows are signed and judged by :mod:`memwarden.host_ingest`; this module only moves them. Every read is of
exactly one scope, through the ``(tenant, user_id, agent, seq)`` index."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from memwarden.store.base import HOST_REPORT_FIELDS, HostReportRow

if TYPE_CHECKING:
    from memwarden.scope import Scope
    from memwarden.store.sqlite.backend import Handle, Tx

_SELECT = f"SELECT {', '.join(HOST_REPORT_FIELDS)}, signature FROM host_reports"
_INSERT = (f"INSERT INTO host_reports ({', '.join(HOST_REPORT_FIELDS)}, signature) "
           f"VALUES ({', '.join('?' * (len(HOST_REPORT_FIELDS) + 1))})")


def last_before(db: Handle, scope: Scope, before_ms: int) -> int:
    """Walks the scope's index backwards, so it reads only the reports made since ``before_ms``."""
    row = db.execute("SELECT seq FROM host_reports WHERE tenant = ? AND user_id = ? AND agent = ?"
                     " AND reported_at < ? ORDER BY seq DESC LIMIT 1",
                     (scope.tenant, scope.user, scope.agent_key, before_ms)).fetchone()
    return 0 if row is None else int(row[0])


def after(db: Handle, scope: Scope, after_seq: int, limit: int) -> list[HostReportRow]:
    """One probe of the scope index when there are none."""
    return [tuple(r) for r in db.execute(
        f"{_SELECT} WHERE tenant = ? AND user_id = ? AND agent = ? AND seq > ? ORDER BY seq LIMIT ?",
        (scope.tenant, scope.user, scope.agent_key, after_seq, limit)).fetchall()]


def next_seq(tx: Tx) -> int:
    """Write transactions are serialised (``BEGIN IMMEDIATE``), so max + 1 is this transaction's to take, and seqs
    become visible in the order they were taken."""
    return int(tx.execute("SELECT coalesce(max(seq), 0) + 1 FROM host_reports").fetchone()[0])


def insert(tx: Tx, fields: Sequence[object], signature: str) -> None:
    tx.execute(_INSERT, (*fields, signature))
