"""Record rows ↔ :class:`~memwarden.records.Record`: the row shape every engine returns (``base.RECORD_COLUMNS``)
and the decoder that refuses a row edited around the API instead of failing on it (I1, T6). No SQL here."""

from __future__ import annotations

import json
from collections.abc import Sequence

from memwarden.records import Provenance, Record
from memwarden.store.base import RECORD_COLUMNS
from memwarden.timevalues import in_range

COLUMNS = RECORD_COLUMNS
UPDATED_AT = COLUMNS.index("updated_at")
_TIME_FIELDS = ("created_at", "updated_at", "expires_at", "due_at")


def decode_row(row: Sequence[object]) -> Record | None:
    """``row_to_record`` for rows that may have been edited around the API: malformed → ``None`` (refused)."""
    return decode_row_why(row)[0]


def decode_row_why(row: Sequence[object]) -> tuple[Record | None, str]:
    """``decode_row`` and, for a malformed row, what is wrong with it (``""`` when it decoded). A time outside
    the range memwarden writes (``timevalues.MIN_MS`` .. ``MAX_MS``) makes the row malformed: it is refused and
    reported, so one bad value never breaks a session, a listing or an export."""
    try:
        rec = row_to_record(row)
    except (ValueError, TypeError, AttributeError, OverflowError) as exc:  # JSONDecodeError is a ValueError
        return None, f"a column does not decode ({type(exc).__name__})"
    if not (isinstance(rec.metadata, dict) and all(isinstance(x, str) for x in rec.derived_from)
            and all(isinstance(x, str) for x in rec.provenance.sources) and 0 <= rec.sensitivity <= 3):
        return None, "metadata, derived_from, sources or sensitivity has the wrong shape"
    for name in _TIME_FIELDS:
        value = getattr(rec, name)
        if not (value is None and name == "due_at") and not in_range(value):
            return None, f"{name} {str(value)[:40]} is outside 1970-01-01 .. 9999-12-30"
    return rec, ""


def row_to_record(row: Sequence[object]) -> Record:
    (id_, version, tenant, user, agent, kind, content, chash, _size, metadata, confidence, sensitivity, created,
     updated, expires, due, status, derived, session_id, source_type, sources, trust, approval, sig) = row
    return Record(
        id=str(id_), version=int(version), kind=str(kind), content=str(content), content_hash=str(chash),
        metadata=json.loads(str(metadata)), confidence=float(confidence), sensitivity=int(sensitivity),
        created_at=int(created), updated_at=int(updated), expires_at=int(expires),
        due_at=None if due is None else int(due), status=str(status),
        derived_from=tuple(json.loads(str(derived))),
        provenance=Provenance(
            tenant=str(tenant), user=str(user), agent=str(agent), session_id=str(session_id),
            source_type=str(source_type), sources=tuple(json.loads(str(sources))), trust=str(trust),
            approval=str(approval),
        ),
        signature=str(sig),
    )


def _json(value: object) -> str:
    if not value:  # the common case: no metadata, no sources, nothing derived
        return "{}" if isinstance(value, dict) else "[]"
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def record_to_row(r: Record) -> tuple[object, ...]:
    p = r.provenance
    return (
        r.id, r.version, p.tenant, p.user, p.agent, r.kind, r.content, r.content_hash, r.size_bytes,
        _json(r.metadata), r.confidence, r.sensitivity, r.created_at, r.updated_at, r.expires_at, r.due_at,
        r.status, _json(list(r.derived_from)), p.session_id, p.source_type, _json(list(p.sources)), p.trust,
        p.approval, r.signature,
    )
