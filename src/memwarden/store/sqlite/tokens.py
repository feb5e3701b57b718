"""SQL for the ``tokens`` table (T3). Rows are signed by :mod:`memwarden.auth`; this module only moves them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from memwarden.store.base import TOKEN_FIELDS
from memwarden.store.sqlite.schema import CONFIG_EVENTS

if TYPE_CHECKING:
    from memwarden.store.sqlite.backend import Handle as Conn
    from memwarden.store.sqlite.backend import Tx

# Every field of a row, in the order its signature covers them (auth._row_mac), then the signature.
FIELDS = TOKEN_FIELDS
_SELECT = f"SELECT {', '.join(FIELDS)}, signature FROM tokens"

Row = tuple[object, ...]  # FIELDS values, then the signature


def by_hash(conn: Conn, token_hash: str) -> Row | None:
    row = conn.execute(f"{_SELECT} WHERE token_hash = ?", (token_hash,)).fetchone()
    return None if row is None else tuple(row)


def by_id(conn: Conn, token_id: str) -> Row | None:
    row = conn.execute(f"{_SELECT} WHERE id = ?", (token_id,)).fetchone()
    return None if row is None else tuple(row)


def all_rows(conn: Conn, tenant: str | None = None) -> list[Row]:
    if tenant is None:
        return [tuple(r) for r in conn.execute(f"{_SELECT} ORDER BY created_at, id").fetchall()]
    return [tuple(r) for r in conn.execute(f"{_SELECT} WHERE tenant = ? ORDER BY created_at, id",
                                           (tenant,)).fetchall()]


def live_name_exists(conn: Conn, name: str, tenant: str) -> bool:
    return conn.execute("SELECT 1 FROM tokens WHERE name = ? AND tenant = ? AND revoked_at IS NULL",
                      (name, tenant)).fetchone() is not None


def insert(tx: Tx, fields: Sequence[object], signature: str) -> None:
    tx.execute(f"INSERT INTO tokens ({', '.join(FIELDS)}, signature) VALUES ({', '.join('?' * (len(FIELDS) + 1))})",
               (*fields, signature))


def set_signature(tx: Tx, token_id: str, revoked_at: object, signature: str) -> None:
    """Set a row's revocation and its new signature (a revocation; the store's upgrade re-signing a row, with the
    revocation the audit log records). The other fields are never rewritten."""
    tx.execute("UPDATE tokens SET revoked_at = ?, signature = ? WHERE id = ?", (revoked_at, signature, token_id))


def revocations(conn: Conn, token_id: str | None = None) -> dict[str, tuple[int, int]]:
    """Token id -> ``(seq, ts)`` of its first ``token_revoked`` audit event (through the events' partial index).
    The audit log is append-only and chained: a revocation recorded there stays visible even if the token's row
    is put back as it was before it (T3)."""
    sql = (f"SELECT json_extract(details, '$.token_id'), min(seq), ts FROM audit WHERE {CONFIG_EVENTS}"
           " AND event = 'token_revoked' AND json_valid(details)")
    params: tuple[object, ...] = ()
    if token_id is not None:
        sql += " AND json_extract(details, '$.token_id') = ?"
        params = (token_id,)
    rows = conn.execute(sql + " GROUP BY 1", params).fetchall()
    return {str(t): (int(s), int(ts)) for t, s, ts in rows if t is not None}
