"""HMAC-SHA256 signatures over a record's content and provenance (I1), and over audit-chain links (A1).

The canonical form is length-prefixed fields, so no field value can shift bytes into its neighbour.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterable

from memwarden.records import Record

_SIG_DOMAIN = b"memwarden.record.v1"
_AUDIT_DOMAIN = b"memwarden.audit.v1"


def _canonical(fields: Iterable[object]) -> bytes:
    parts: list[bytes] = []
    for value in fields:
        if value is None:
            b = b"\x00"
        elif isinstance(value, bytes):
            b = value
        elif isinstance(value, (list, tuple, dict)):
            b = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()
        else:
            b = str(value).encode("utf-8", "surrogatepass")
        parts.append(str(len(b)).encode() + b":" + b)
    return b"|".join(parts)


def record_fields(r: Record) -> tuple[object, ...]:
    p = r.provenance
    return (
        r.id, r.version, r.kind, r.content, r.content_hash, r.metadata, repr(float(r.confidence)), r.sensitivity,
        r.created_at, r.updated_at, r.expires_at, r.due_at, r.status, list(r.derived_from),
        p.tenant, p.user, p.agent, p.session_id, p.source_type, list(p.sources), p.trust, p.approval,
    )


class Signer:
    def __init__(self, key: bytes) -> None:
        self._key = key

    def sign_record(self, r: Record) -> str:
        return hmac.digest(self._key, _SIG_DOMAIN + _canonical(record_fields(r)), "sha256").hex()

    def verify_record(self, r: Record) -> bool:
        return hmac.compare_digest(self.sign_record(r), r.signature or "")

    def audit_link(self, prev_hash: str, fields: Iterable[object]) -> str:
        msg = _AUDIT_DOMAIN + prev_hash.encode() + _canonical(fields)
        return hmac.digest(self._key, msg, "sha256").hex()
