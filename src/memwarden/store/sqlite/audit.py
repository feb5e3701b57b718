"""SQL of the audit log (A1, A2): append (with the chain's keyed head anchor in ``meta``), the chain walk, the
newest lifecycle row of records, listings and the blast-radius read. Rows are never updated or deleted (the
schema's triggers refuse both); what a row means and whether it verifies is :mod:`memwarden.audit`'s job."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

from memwarden.store.base import AUDIT_COLUMNS, AuditHead, AuditRow
from memwarden.store.sqlite.schema import CONFIG_EVENTS
from memwarden.store.sqlite.views import marks

if TYPE_CHECKING:
    from memwarden.store.sqlite.backend import Handle, Tx

GENESIS = "0" * 64
ROW_COLS = ", ".join(AUDIT_COLUMNS)
_INSERT = f"INSERT INTO audit ({ROW_COLS}) VALUES ({marks(len(AUDIT_COLUMNS))})"
_EVENT_NAME = re.compile(r"[a-z_]{1,64}")


def _literals(events: Sequence[str]) -> str:
    """Event names inlined as literals (so a partial index on them applies); names are checked first."""
    return _inlined(tuple(events))


@lru_cache(maxsize=64)
def _inlined(events: tuple[str, ...]) -> str:
    if not all(_EVENT_NAME.fullmatch(e) for e in events):
        raise ValueError(f"not an event name: {events!r}")
    return ", ".join(f"'{e}'" for e in events)


def audit_head(db: Handle) -> AuditHead:
    row = db.execute("SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1").fetchone()
    return (int(row[0]), str(row[1])) if row else (0, GENESIS)


def audit_hash(db: Handle, seq: int) -> str | None:
    row = db.execute("SELECT hash FROM audit WHERE seq = ?", (seq,)).fetchone()
    return None if row is None else str(row[0])


def audit_rows(db: Handle, after: int = 0, upto: int | None = None) -> Iterable[AuditRow]:
    if upto is None:
        return db.execute(f"SELECT {ROW_COLS} FROM audit WHERE seq > ? ORDER BY seq", (after,))
    return db.execute(f"SELECT {ROW_COLS} FROM audit WHERE seq > ? AND seq <= ? ORDER BY seq", (after, upto))


def audit_latest(db: Handle, ids: Sequence[str], events: Sequence[str]) -> dict[str, AuditRow]:
    out: dict[str, AuditRow] = {}
    names = _literals(events)
    for i in range(0, len(ids), 500):
        chunk = list(ids[i:i + 500])
        rows = db.execute(
            f"SELECT {ROW_COLS} FROM audit WHERE seq IN (SELECT max(seq) FROM audit"
            f" WHERE memory_id IN ({marks(len(chunk))}) AND event IN ({names}) GROUP BY memory_id)", chunk).fetchall()
        for row in rows:
            out[str(row[7])] = tuple(row)
    return out


def audit_log(db: Handle, *, events: Sequence[str] | None = None, memory_id: str | None = None,
              tenant: str | None = None, user: str | None = None, after: int | None = None, upto: int | None = None,
              limit: int = 50, newest_first: bool = True) -> list[AuditRow]:
    where: list[str] = []
    params: list[object] = []
    if events:
        where.append("event = ?" if len(events) == 1 else f"event IN ({marks(len(events))})")
        params += events
    for col, val in (("memory_id", memory_id), ("tenant", tenant), ("user_id", user)):
        if val is not None:
            where.append(f"{col} = ?")
            params.append(val)
    for cond, val in (("seq > ?", after), ("seq <= ?", upto)):
        if val is not None:
            where.append(cond)
            params.append(val)
    sql = (f"SELECT {ROW_COLS} FROM audit" + (" WHERE " + " AND ".join(where) if where else "")
           + f" ORDER BY seq{' DESC' if newest_first else ''} LIMIT ?")
    return db.execute(sql, (*params, limit)).fetchall()


def audit_reads(db: Handle, events: Sequence[str], *, memory_id: str | None = None, tenant: str | None = None,
                user: str | None = None, after: int = 0, limit: int | None = None) -> list[AuditRow]:
    """The events are inlined as the partial index's exact term; the ids served are read from the chained row's
    own details."""
    where, params = [f"a.event IN ({_literals(events)})", "a.seq > ?"], [after]
    for col, val in (("a.tenant", tenant), ("a.user_id", user)):
        if val is not None:
            where.append(f"{col} = ?")
            params.append(val)
    if memory_id is not None:
        where.append("EXISTS (SELECT 1 FROM json_each(CASE WHEN json_valid(a.details) THEN a.details ELSE '{}'"
                     " END, '$.ids') j WHERE j.value = ?)")
        params.append(memory_id)
    sql = (f"SELECT {', '.join('a.' + c for c in AUDIT_COLUMNS)} FROM audit a WHERE {' AND '.join(where)}"
           " ORDER BY a.seq")
    if limit is not None:
        sql += " LIMIT ?"
        params.append(limit)
    return db.execute(sql, params).fetchall()


def audit_event_names(db: Handle) -> set[str]:
    return {str(r[0]) for r in db.execute("SELECT DISTINCT event FROM audit").fetchall()}


def audit_count(db: Handle) -> int:
    return int(db.execute("SELECT count(*) FROM audit").fetchone()[0])


def audit_config_events(db: Handle, event: str) -> list[AuditRow]:
    """Through the events' partial index, oldest first."""
    return db.execute(f"SELECT {ROW_COLS} FROM audit WHERE {CONFIG_EVENTS} AND event = ? ORDER BY seq",
                      (event,)).fetchall()


def append_audit(tx: Tx, row: AuditRow, head: str) -> None:
    tx.execute(_INSERT, row)
    tx.execute("INSERT OR REPLACE INTO meta VALUES ('audit_head', ?)", (head,))
    seq, prev, h = int(row[0]), str(row[10]), str(row[11])
    tx.note_audit((seq - 1, prev), (seq, h))  # the anchor check after the commit needs no query (anchor.py)
