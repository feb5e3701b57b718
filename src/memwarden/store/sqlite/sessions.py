"""SQL for the ``sessions`` table: one row per session (scope, clearance, workspace, the frozen block's sha256,
when it ended). The service refuses reads and writes of a session this table does not know or says ended (T6)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memwarden.scope import Scope
    from memwarden.store.sqlite.backend import Handle, Tx


def session_ended(db: Handle, session_id: str) -> bool | None:
    row = db.execute("SELECT ended_at FROM sessions WHERE id = ?", (session_id,)).fetchone()
    return None if row is None else row[0] is not None


def begin_session(tx: Tx, session_id: str, scope: Scope, started_at: int, clearance: int, workspace: Sequence[str],
                  snapshot_sha256: str) -> None:
    tx.execute("INSERT INTO sessions (id, tenant, user_id, agent, started_at, clearance, workspace, snapshot_sha256)"
               " VALUES (?,?,?,?,?,?,?,?)", (session_id, scope.tenant, scope.user, scope.agent_key, started_at,
                                             clearance, json.dumps(list(workspace)), snapshot_sha256))


def end_session(tx: Tx, session_id: str, ended_at: int) -> None:
    tx.execute("UPDATE sessions SET ended_at = ? WHERE id = ?", (ended_at, session_id))
