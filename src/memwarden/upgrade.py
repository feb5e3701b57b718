"""The one-time upgrade of a store made before signed settings (issue 12): done at open, with the right key
(after the key check), once, in one transaction, and audited.

Before, settings sat unsigned in ``meta`` (``embedder``, ``fts_tokenizer``) and token rows were signed without
``revoked_at``. The upgrade signs the settings it finds into the ``settings`` table and removes them from ``meta``,
re-signs every token row whose old signature verifies over all its fields (a token whose revocation the audit log
records stays revoked, whatever its row says), and leaves rows whose old signature fails refused. It appends one
``settings_migrated`` audit event with what it signed and refused, and marks the store (signed setting
``signed_settings``). A new store is only marked.

Once done, unsigned rows are never signed again: the audit event says it happened, so deleting the mark (to have
a planted ``meta`` row signed at the next open) does not repeat it — the mark is restored and the row ignored.
A setting signed by the upgrade still cannot send data anywhere the process configuration does not name
(:func:`memwarden.retrieval.embedders.from_stored_spec`), so an endpoint planted before the upgrade stays unused.

Issue 13 added two signed fields to token rows (the host-reports-ingest profile and the expiry; the columns are
added to an older store's table by the engine when it opens it: SQLite's
``store/sqlite/schema.add_columns``). Its step re-signs every token row whose issue-12 signature verifies, with
the columns' defaults (no profile, no expiry: an earlier version could not set them), and marks the store ``2``.
A store of issue 12 (mark ``1``) runs only this step; an older store runs both in one transaction, one event.
The audit event says which steps ran (``token_rows``: the row-signature version it left), so deleting the mark
repeats neither: a step the log records as done is not run again.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

from memwarden import audit, auth
from memwarden.settings import LEGACY_META, MIGRATED

if TYPE_CHECKING:
    from memwarden.events import Event
    from memwarden.service import MemoryService
    from memwarden.store.base import Writes

log = logging.getLogger("memwarden.upgrade")

SIGNED_SETTINGS = "1"  # issue 12: settings and token rows signed
DONE = "2"  # issue 13: token rows signed with their profile and expiry
TOKEN_ROWS = 3  # the token-row signature version the upgrade leaves (auth: memwarden.token-row.v3)
ACTOR = "system:upgrade"


def run(service: MemoryService) -> dict[str, Any] | None:
    """Upgrade the store if it has not been; returns what was done (the audit event's details), else ``None``."""
    settings = service.settings
    with service.backend.read() as conn:
        if settings.get(conn, MIGRATED) == DONE:
            return None  # the common case: one read, no write transaction

    def work(tx: Writes) -> Event | None:
        mark = settings.get(tx, MIGRATED)
        if mark == DONE:
            return None  # another process upgraded it meanwhile
        logged = [_details(row) for row in tx.audit_config_events("settings_migrated")]
        settings_done = mark == SIGNED_SETTINGS or bool(logged)
        rows_done = any(d.get("token_rows") == TOKEN_ROWS for d in logged)
        if mark != SIGNED_SETTINGS and logged:
            log.warning("memwarden: the store's upgrade mark was missing or edited although the audit log records "
                        "its upgrade; unsigned rows stay ignored (run `memwarden doctor`)")
        if rows_done:
            settings.put(tx, MIGRATED, DONE)
            return None
        legacy = {} if settings_done else tx.meta(LEGACY_META)
        # a database this process created (its first audit row is the anchor's) or one with no history: nothing
        # to report, only the mark to set
        fresh = not legacy and not tx.tokens() and (service.backend.created or tx.audit_head()[0] == 0)
        for name, value in legacy.items():
            settings.put(tx, name, value)
        tx.delete_meta(list(legacy))
        signed = auth.upgrade_rows(tx, service)
        settings.put(tx, MIGRATED, DONE)
        if fresh or (settings_done and not any(signed.values())):
            return None
        return audit.append(tx, service.signer, "settings_migrated", actor=ACTOR,
                            details={"settings": legacy, **signed, "token_rows": TOKEN_ROWS})

    event = service._transact(work)
    if event is None:
        return None
    service.events.publish([event])
    d = event.details
    log.info("memwarden: signed %d setting(s) and %d token row(s) of a store made by an earlier version; "
             "%d token row(s) failed their old signature and stay refused", len(d["settings"]),
             len(d["tokens_signed"]), len(d["tokens_refused"]))
    return d


def _details(row: tuple[object, ...]) -> dict[str, Any]:
    """The details of a ``settings_migrated`` row (``{}`` if unreadable: the chain check reports such a row)."""
    try:
        found = json.loads(str(row[9]))
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}
