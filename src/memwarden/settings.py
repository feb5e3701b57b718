"""Signed settings (I4): nothing that changes behaviour comes from a row someone could write without the key.

A setting is a row of the ``settings`` table, ``(name, value, signature)`` with
``signature = HMAC(key, "memwarden.setting.v1" ‖ [name, value])``. :meth:`Settings.get` returns a value only if its
signature verifies; a row that fails (edited, forged, or copied from another store) is ignored — the setting falls
back to its safe default — logged, and kept in :attr:`Settings.refused` for ``doctor``. Absence always means the
default, and every default is safe: no embedder (nothing leaves the process), and an FTS index rebuilt from the
signed records.

The settings:

* ``embedder`` — the spec ``memwarden reindex --embedder`` chose. One that sends data to an endpoint is used only
  when the process configuration names the same endpoint (:func:`memwarden.retrieval.embedders.from_stored_spec`).
* ``fts_tokenizer`` — the tokenizer version the FTS terms were built with (an older or missing one: rebuilt on open).
* ``signed_settings`` — set once the store's unsigned rows of earlier versions were signed (:mod:`memwarden.upgrade`).

What stays in ``meta`` is trusted by nobody: ``schema_version`` (informational, never read), ``key_fingerprint``
(itself an HMAC of the key: editing it only makes the store refuse to open) and ``audit_head`` (its own keyed MAC).
"""

from __future__ import annotations

import hmac
import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memwarden.signing import Signer
    from memwarden.store.base import Reads, Writes

log = logging.getLogger("memwarden.settings")

EMBEDDER = "embedder"  # retrieval/__init__.py names these two too (it cannot import this module)
TOKENIZER = "fts_tokenizer"
MIGRATED = "signed_settings"
KNOWN = (EMBEDDER, TOKENIZER, MIGRATED)
LEGACY_META = (EMBEDDER, TOKENIZER)  # meta keys that held these settings, unsigned, before issue 12
_DOMAIN = b"memwarden.setting.v1"

# What an operator does about a setting that failed verification (doctor prints it).
FIX = {
    EMBEDDER: "it is ignored (no vectors); set it again with `memwarden reindex --embedder …`",
    TOKENIZER: "it is ignored; the search index is rebuilt from the signed records on open",
    MIGRATED: "it is ignored; nothing unsigned is trusted either way",
}


class Settings:
    """Reads and writes signed settings inside the caller's transaction or read snapshot."""

    def __init__(self, signer: Signer) -> None:
        self._signer = signer
        self.refused: dict[str, str] = {}  # name -> why, for every row refused since the store was opened

    def _mac(self, name: str, value: str) -> str:
        return self._signer.mac_fields(_DOMAIN, (name, value))

    def get(self, conn: Reads, name: str) -> str | None:
        """The verified value of ``name``, or ``None`` (absent, or refused: see :attr:`refused`)."""
        row = conn.setting(name)
        if row is None:
            return None
        value, sig = row
        if not hmac.compare_digest(sig, self._mac(name, value)):
            why = self.problem(name, value)
            if name not in self.refused:
                log.warning("memwarden: %s", why)
            self.refused[name] = why
            return None
        return value

    @staticmethod
    def problem(name: str, value: str) -> str:
        return (f"setting {name!r} = {value[:80]!r} fails verification (written outside memwarden); "
                f"{FIX.get(name, 'it is ignored')}")

    def put(self, tx: Writes, name: str, value: str) -> None:
        tx.put_setting(name, value, self._mac(name, value))  # what was refused before stays in ``refused``

    def check(self, conn: Reads) -> list[tuple[str, str]]:
        """``(setting, problem)`` for every row that would be refused now, or was refused since open, and every
        unsigned setting left in ``meta`` after the store's upgrade (``doctor``)."""
        out: dict[str, str] = dict(self.refused)
        for name, value, sig in conn.settings():
            if name not in KNOWN:
                out[name] = f"unknown setting {name!r} (written outside memwarden); nothing reads it"
            elif not hmac.compare_digest(sig, self._mac(name, value)):
                out[name] = self.problem(name, value)
        if self.get(conn, MIGRATED) is not None:
            for key, value in conn.meta(LEGACY_META).items():
                out[f"meta.{key}"] = (f"unsigned row meta.{key} = {value[:80]!r} was written outside memwarden; "
                                      "it is ignored (settings are signed): check who can write the database file")
        return sorted(out.items())

