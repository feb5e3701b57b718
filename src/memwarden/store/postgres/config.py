"""SQL on PostgreSQL for sessions, tokens (T3), signed settings and ``meta`` (I4), and the hosts' ingest reports
(issue 13). Rows are signed and judged by the modules that own them; this module only moves them."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from memwarden.store.base import HOST_REPORT_FIELDS, TOKEN_FIELDS, HostReportRow, TokenRow
from memwarden.store.postgres.schema import CONFIG_EVENTS
from memwarden.store.postgres.views import CHAIN, marks, scope_reach

if TYPE_CHECKING:
    from memwarden.scope import Scope
    from memwarden.store.postgres.backend import Handle, Tx

# --- sessions -------------------------------------------------------------------------------------------------


def session_ended(db: Handle, session_id: str) -> bool | None:
    row = db.execute("SELECT ended_at FROM sessions WHERE id = %s", (session_id,)).fetchone()
    return None if row is None else row[0] is not None


def begin_session(tx: Tx, session_id: str, scope: Scope, started_at: int, clearance: int, workspace: Sequence[str],
                  snapshot_sha256: str) -> None:
    tx.execute("INSERT INTO sessions (id, tenant, user_id, agent, started_at, clearance, workspace, snapshot_sha256)"
               " VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
               (session_id, scope.tenant, scope.user, scope.agent_key, started_at, clearance,
                json.dumps(list(workspace)), snapshot_sha256))


def end_session(tx: Tx, session_id: str, ended_at: int) -> None:
    tx.execute("UPDATE sessions SET ended_at = %s WHERE id = %s", (ended_at, session_id))


# --- tokens ---------------------------------------------------------------------------------------------------

_TOKEN_SELECT = f"SELECT {', '.join(TOKEN_FIELDS)}, signature FROM tokens"


def token_by_hash(db: Handle, token_hash: str) -> TokenRow | None:
    row = db.execute(f"{_TOKEN_SELECT} WHERE token_hash = %s", (token_hash,)).fetchone()
    return None if row is None else tuple(row)


def token_by_id(db: Handle, token_id: str) -> TokenRow | None:
    row = db.execute(f"{_TOKEN_SELECT} WHERE id = %s", (token_id,)).fetchone()
    return None if row is None else tuple(row)


def tokens(db: Handle, tenant: str | None = None) -> list[TokenRow]:
    if tenant is None:
        return [tuple(r) for r in db.execute(f"{_TOKEN_SELECT} ORDER BY created_at, id", ()).fetchall()]
    return [tuple(r) for r in db.execute(f"{_TOKEN_SELECT} WHERE tenant = %s ORDER BY created_at, id",
                                         (tenant,)).fetchall()]


def live_token_named(db: Handle, name: str, tenant: str) -> bool:
    return db.execute("SELECT 1 FROM tokens WHERE name = %s AND tenant = %s AND revoked_at IS NULL",
                      (name, tenant)).fetchone() is not None


def insert_token(tx: Tx, fields: Sequence[object], signature: str) -> None:
    tx.execute(f"INSERT INTO tokens ({', '.join(TOKEN_FIELDS)}, signature) VALUES ({marks(len(TOKEN_FIELDS) + 1)})",
               (*fields, signature))


def sign_token(tx: Tx, token_id: str, revoked_at: object, signature: str) -> None:
    tx.execute("UPDATE tokens SET revoked_at = %s, signature = %s WHERE id = %s", (revoked_at, signature, token_id))


def token_revocations(db: Handle, token_id: str | None = None) -> dict[str, tuple[int, int]]:
    db.use(CHAIN)
    sql = (f"SELECT t, min(seq), min(ts) FROM (SELECT memwarden_json_get(details, 'token_id') AS t, seq, ts"
           f" FROM audit WHERE {CONFIG_EVENTS} AND event = 'token_revoked') r WHERE t IS NOT NULL")
    params: tuple[object, ...] = ()
    if token_id is not None:
        sql += " AND t = %s"
        params = (token_id,)
    out: dict[str, tuple[int, int]] = {}
    for t, _s, _ts in db.execute(sql + " GROUP BY t", params).fetchall():
        out[str(t)] = (0, 0)
    if out:  # the (seq, ts) of each one's first revocation row
        for t, s, ts in db.execute(
                f"SELECT DISTINCT ON (memwarden_json_get(details, 'token_id')) memwarden_json_get(details,"
                f" 'token_id'), seq, ts FROM audit WHERE {CONFIG_EVENTS} AND event = 'token_revoked'"
                " AND memwarden_json_get(details, 'token_id') = ANY (%s)"
                " ORDER BY memwarden_json_get(details, 'token_id'), seq", (list(out),)).fetchall():
            out[str(t)] = (int(s), int(ts))
    return out


# --- settings and meta ----------------------------------------------------------------------------------------


def setting(db: Handle, name: str) -> tuple[str, str] | None:
    row = db.execute("SELECT value, signature FROM settings WHERE name = %s", (name,)).fetchone()
    return None if row is None else (str(row[0]), str(row[1]))


def settings(db: Handle) -> list[tuple[str, str, str]]:
    return [(str(n), str(v), str(s)) for n, v, s in
            db.execute("SELECT name, value, signature FROM settings ORDER BY name", ()).fetchall()]


def put_setting(tx: Tx, name: str, value: str, signature: str) -> None:
    tx.execute("INSERT INTO settings (name, value, signature) VALUES (%s, %s, %s) ON CONFLICT (name)"
               " DO UPDATE SET value = EXCLUDED.value, signature = EXCLUDED.signature", (name, value, signature))


def meta(db: Handle, keys: Sequence[str]) -> dict[str, str]:
    if not keys:
        return {}
    rows = db.execute("SELECT key, value FROM meta WHERE key = ANY (%s)", (list(keys),)).fetchall()
    return {str(k): str(v) for k, v in rows}


def put_meta(tx: Tx, key: str, value: str) -> None:
    tx.execute("INSERT INTO meta VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
               (key, value))


def delete_meta(tx: Tx, keys: Sequence[str]) -> None:
    tx.execute("DELETE FROM meta WHERE key = ANY (%s)", (list(keys),))


# --- host ingest reports --------------------------------------------------------------------------------------

_REPORT_SELECT = f"SELECT {', '.join(HOST_REPORT_FIELDS)}, signature FROM host_reports"


def host_report_before(db: Handle, scope: Scope, before_ms: int) -> int:
    db.use(scope_reach(scope.tenant, scope.user, (scope.agent_key,)))
    row = db.execute("SELECT seq FROM host_reports WHERE tenant = %s AND user_id = %s AND agent = %s"
                     " AND reported_at < %s ORDER BY seq DESC LIMIT 1",
                     (scope.tenant, scope.user, scope.agent_key, before_ms)).fetchone()
    return 0 if row is None else int(row[0])


def host_reports(db: Handle, scope: Scope, after_seq: int, limit: int) -> list[HostReportRow]:
    db.use(scope_reach(scope.tenant, scope.user, (scope.agent_key,)))
    return [tuple(r) for r in db.execute(
        f"{_REPORT_SELECT} WHERE tenant = %s AND user_id = %s AND agent = %s AND seq > %s ORDER BY seq LIMIT %s",
        (scope.tenant, scope.user, scope.agent_key, after_seq, limit)).fetchall()]


def next_host_report_seq(tx: Tx) -> int:
    """A sequence (the table's rows of other scopes are not visible to the policies); writers are serialised
    by the write lock, so seqs become visible in the order they were taken."""
    return int(tx.execute("SELECT nextval('host_reports_seq')", ()).fetchone()[0])


def insert_host_report(tx: Tx, fields: Sequence[object], signature: str) -> None:
    tx.use(scope_reach(str(fields[1]), str(fields[2]), (str(fields[3]),)))
    tx.execute(f"INSERT INTO host_reports ({', '.join(HOST_REPORT_FIELDS)}, signature)"
               f" VALUES ({marks(len(HOST_REPORT_FIELDS) + 1)})", (*fields, signature))
