"""Rows this process already decoded and whose signature it verified, keyed by the row's exact values (I1, T6).

A read still gets every row from the store and judges every one of them at read time; what is remembered is only
the outcome of the two checks that depend on nothing but the row itself — that its columns decode
(``store/rows.decode_row_why``) and that the signature it carries is the HMAC of its fields under this service's
key (``Signer.verify_record``). A row whose values are all equal to a remembered one *is* that row: the same
record, the same signature, the same verdict. A row edited in the file has other values, so it misses and is
checked again (and refused); a row deleted is simply not read. Whether the audit history vouches for the row
(``ChainCursor.vouch``: it is the current version, not deleted, no forged or broken evidence) is not remembered:
it is asked on every read.

"Equal" is made exact: Python's ``==`` treats ``1 == 1.0`` and ``0.0 == -0.0`` as equal, where the decoded record
or its canonical signed form would differ. So only rows whose every column has the type memwarden writes (text
``str``, integer ``int``, ``confidence`` ``float``, ``due_at`` ``int`` or ``None``) are looked up or kept, and a
negative zero ``confidence`` is never; a row of any other shape is decoded and verified as before.

Each hit returns a new :class:`Record` with its own ``metadata`` dict (parsed again from the row's text), so a
caller that changes the dict it was given cannot change what a later read returns."""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Sequence

from memwarden.records import Record
from memwarden.store.base import RECORD_COLUMNS

MAX_ROWS = 8_192  # rows kept (about 10 MB); the whole map is dropped when full

_INT = ("version", "size_bytes", "sensitivity", "created_at", "updated_at", "expires_at")
_TYPES = tuple(int if c in _INT or c == "due_at" else float if c == "confidence" else str for c in RECORD_COLUMNS)
_DUE = RECORD_COLUMNS.index("due_at")
_SHAPES = frozenset({_TYPES, (*_TYPES[:_DUE], type(None), *_TYPES[_DUE + 1:])})
_CONFIDENCE = RECORD_COLUMNS.index("confidence")
_METADATA = RECORD_COLUMNS.index("metadata")


def row_key(row: Sequence[object]) -> tuple[object, ...] | None:
    """The row as a key that equals another row's only when every value is identical; ``None``: not cacheable."""
    key = row if type(row) is tuple else tuple(row)
    if tuple(map(type, key)) not in _SHAPES:
        return None
    c = key[_CONFIDENCE]
    if c == 0.0 and math.copysign(1.0, c) < 0:  # type: ignore[arg-type]
        return None
    return key


class VerifiedRows:
    """Row key (:func:`row_key`) → the record it decoded to, for rows whose signature verified."""

    def __init__(self, max_rows: int = MAX_ROWS) -> None:
        self.max_rows = max_rows
        self._rows: dict[tuple[object, ...], Record] = {}
        self._lock = threading.Lock()
        self.hits = 0  # tests read it

    def get(self, key: tuple[object, ...]) -> Record | None:
        rec = self._rows.get(key)
        if rec is None:
            return None
        self.hits += 1
        meta = key[_METADATA]
        return Record(id=rec.id, version=rec.version, kind=rec.kind, content=rec.content,
                      content_hash=rec.content_hash, metadata={} if meta == "{}" else json.loads(str(meta)),
                      confidence=rec.confidence, sensitivity=rec.sensitivity, created_at=rec.created_at,
                      updated_at=rec.updated_at, expires_at=rec.expires_at, due_at=rec.due_at, status=rec.status,
                      derived_from=rec.derived_from, provenance=rec.provenance, signature=rec.signature)

    def put(self, key: tuple[object, ...], rec: Record) -> None:
        """Remember ``rec``, decoded from the row ``key`` and verified. Keeps its own copy of the metadata."""
        meta = key[_METADATA]
        kept = Record(id=rec.id, version=rec.version, kind=rec.kind, content=rec.content,
                      content_hash=rec.content_hash, metadata={} if meta == "{}" else json.loads(str(meta)),
                      confidence=rec.confidence, sensitivity=rec.sensitivity, created_at=rec.created_at,
                      updated_at=rec.updated_at, expires_at=rec.expires_at, due_at=rec.due_at, status=rec.status,
                      derived_from=rec.derived_from, provenance=rec.provenance, signature=rec.signature)
        with self._lock:
            if len(self._rows) >= self.max_rows:
                self._rows.clear()
            self._rows[key] = kept

    def clear(self) -> None:
        with self._lock:
            self._rows.clear()
