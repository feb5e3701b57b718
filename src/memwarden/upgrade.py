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
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from memwarden import audit, auth
from memwarden.settings import LEGACY_META, MIGRATED

if TYPE_CHECKING:
    from memwarden.events import Event
    from memwarden.service import MemoryService
    from memwarden.store.base import Writes

log = logging.getLogger("memwarden.upgrade")

DONE = "1"
ACTOR = "system:upgrade"


def run(service: MemoryService) -> dict[str, Any] | None:
    """Upgrade the store if it has not been; returns what was done (the audit event's details), else ``None``."""
    settings = service.settings
    with service.backend.read() as conn:
        if settings.get(conn, MIGRATED) == DONE:
            return None  # the common case: one read, no write transaction

    def work(tx: Writes) -> Event | None:
        if settings.get(tx, MIGRATED) == DONE:
            return None  # another process upgraded it meanwhile
        if tx.audit_config_events("settings_migrated"):
            log.warning("memwarden: the store's upgrade mark was missing or edited although the audit log records "
                        "its upgrade; unsigned rows stay ignored (run `memwarden doctor`)")
            settings.put(tx, MIGRATED, DONE)
            return None
        legacy = tx.meta(LEGACY_META)
        # a database this process created (its first audit row is the anchor's) or one with no history: nothing
        # to report, only the mark to set
        fresh = not legacy and not tx.tokens() and (service.backend.created or tx.audit_head()[0] == 0)
        for name, value in legacy.items():
            settings.put(tx, name, value)
        tx.delete_meta(list(legacy))
        signed = auth.upgrade_rows(tx, service)
        settings.put(tx, MIGRATED, DONE)
        if fresh:
            return None
        return audit.append(tx, service.signer, "settings_migrated", actor=ACTOR,
                            details={"settings": legacy, **signed})

    event = service._transact(work)
    if event is None:
        return None
    service.events.publish([event])
    d = event.details
    log.info("memwarden: signed %d setting(s) and %d token row(s) of a store made by an earlier version; "
             "%d token row(s) failed their old signature and stay refused", len(d["settings"]),
             len(d["tokens_signed"]), len(d["tokens_refused"]))
    return d
