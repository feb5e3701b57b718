"""SQL of the audit log on PostgreSQL (A1, A2): append, the chain walk, lifecycle lookups, listings and the
blast-radius read. The chain is read store-wide (the policies' ``chain`` reach: every process verifies every
row, I5); listings of a tenant or user run with the policies given that tenant or user. Rows are never updated
or deleted: no policy or grant allows it, and a trigger refuses it."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

from memwarden.store.base import AUDIT_COLUMNS, AuditHead, AuditRow
from memwarden.store.postgres.schema import CONFIG_EVENTS
from memwarden.store.postgres.views import CHAIN, marks

if TYPE_CHECKING:
    from memwarden.store.postgres.backend import Handle, Tx

GENESIS = "0" * 64
ROW_COLS = ", ".join(AUDIT_COLUMNS)
_INSERT = f"INSERT INTO audit ({ROW_COLS}) VALUES ({marks(len(AUDIT_COLUMNS))})"
_EVENT_NAME = re.compile(r"[a-z_]{1,64}")


@lru_cache(maxsize=64)
def _literals(events: tuple[str, ...]) -> str:
    if not all(_EVENT_NAME.fullmatch(e) for e in events):
        raise ValueError(f"not an event name: {events!r}")
    return ", ".join(f"'{e}'" for e in events)


def _narrow(db: Handle, tenant: str | None, user: str | None) -> None:
    if tenant is None:
        db.use(CHAIN)
    elif user is None:
        db.use(("tenant", tenant, "", ()))
    else:
        db.use(("user", tenant, user, ()))


def audit_head(db: Handle) -> AuditHead:
    db.use(CHAIN)
    row = db.execute("SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1", ()).fetchone()
    return (int(row[0]), str(row[1])) if row else (0, GENESIS)


def audit_hash(db: Handle, seq: int) -> str | None:
    db.use(CHAIN)
    row = db.execute("SELECT hash FROM audit WHERE seq = %s", (seq,)).fetchone()
    return None if row is None else str(row[0])


def audit_rows(db: Handle, after: int = 0, upto: int | None = None) -> Iterable[AuditRow]:
    db.use(CHAIN)
    if upto is None:
        return db.execute(f"SELECT {ROW_COLS} FROM audit WHERE seq > %s ORDER BY seq", (after,)).fetchall()
    return db.execute(f"SELECT {ROW_COLS} FROM audit WHERE seq > %s AND seq <= %s ORDER BY seq",
                      (after, upto)).fetchall()


def audit_latest(db: Handle, ids: Sequence[str], events: Sequence[str]) -> dict[str, AuditRow]:
    if not ids:
        return {}
    db.use(CHAIN)
    rows = db.execute(
        f"SELECT DISTINCT ON (memory_id) {ROW_COLS} FROM audit WHERE memory_id = ANY (%s)"
        f" AND event IN ({_literals(tuple(events))}) ORDER BY memory_id, seq DESC", (list(ids),)).fetchall()
    return {str(row[7]): tuple(row) for row in rows}


def audit_log(db: Handle, *, events: Sequence[str] | None = None, memory_id: str | None = None,
              tenant: str | None = None, user: str | None = None, after: int | None = None, upto: int | None = None,
              limit: int = 50, newest_first: bool = True) -> list[AuditRow]:
    _narrow(db, tenant, user if tenant is not None else None)
    where: list[str] = []
    params: list[object] = []
    if events:
        where.append("event = ANY (%s)")
        params.append(list(events))
    for col, val in (("memory_id", memory_id), ("tenant", tenant), ("user_id", user)):
        if val is not None:
            where.append(f"{col} = %s")
            params.append(val)
    for cond, val in (("seq > %s", after), ("seq <= %s", upto)):
        if val is not None:
            where.append(cond)
            params.append(val)
    sql = (f"SELECT {ROW_COLS} FROM audit" + (" WHERE " + " AND ".join(where) if where else "")
           + f" ORDER BY seq{' DESC' if newest_first else ''} LIMIT %s")
    return [tuple(r) for r in db.execute(sql, (*params, limit)).fetchall()]


def audit_reads(db: Handle, events: Sequence[str], *, memory_id: str | None = None, tenant: str | None = None,
                user: str | None = None, after: int = 0, limit: int | None = None) -> list[AuditRow]:
    _narrow(db, tenant, user if tenant is not None else None)
    where, params = [f"a.event IN ({_literals(tuple(events))})", "a.seq > %s"], [after]
    for col, val in (("a.tenant", tenant), ("a.user_id", user)):
        if val is not None:
            where.append(f"{col} = %s")
            params.append(val)
    if memory_id is not None:
        where.append("%s IN (SELECT memwarden_json_list(a.details, 'ids'))")
        params.append(memory_id)
    sql = (f"SELECT {', '.join('a.' + c for c in AUDIT_COLUMNS)} FROM audit a WHERE {' AND '.join(where)}"
           " ORDER BY a.seq")
    if limit is not None:
        sql += " LIMIT %s"
        params.append(limit)
    return [tuple(r) for r in db.execute(sql, params).fetchall()]


def audit_event_names(db: Handle) -> set[str]:
    db.use(CHAIN)
    return {str(r[0]) for r in db.execute("SELECT DISTINCT event FROM audit", ()).fetchall()}


def audit_count(db: Handle) -> int:
    db.use(CHAIN)
    return int(db.execute("SELECT count(*) FROM audit", ()).fetchone()[0])


def audit_config_events(db: Handle, event: str) -> list[AuditRow]:
    db.use(CHAIN)
    return [tuple(r) for r in db.execute(f"SELECT {ROW_COLS} FROM audit WHERE {CONFIG_EVENTS} AND event = %s"
                                         " ORDER BY seq", (event,)).fetchall()]


def append_audit(tx: Tx, row: AuditRow, head: str) -> None:
    """Appends are serialised by the write transaction's advisory lock (backend.py): the row's seq and
    prev_hash, read from the head just before, are this transaction's alone until it commits."""
    tenant, user, agent = row[3], row[4], row[5]
    if tenant is None:
        tx.use(CHAIN)
    elif user is None:
        tx.use(("tenant", str(tenant), "", ()))
    elif agent is None:
        tx.use(("user", str(tenant), str(user), ()))
    else:
        tx.use(("agents", str(tenant), str(user), (str(agent),)))
    tx.execute(_INSERT, row)
    tx.execute("INSERT INTO meta VALUES ('audit_head', %s) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
               (head,))
    seq, prev, h = int(row[0]), str(row[10]), str(row[11])
    tx.note_audit((seq - 1, prev), (seq, h))
