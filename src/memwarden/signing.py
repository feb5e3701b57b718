"""HMAC-SHA256 signatures over a record's content and provenance (I1), and over audit-chain links (A1).

The canonical form is a JSON array of the fields, so no field value can shift bytes into its neighbour.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Sequence

from memwarden.records import Record

_SIG_DOMAIN = b"memwarden.record.v1"
_AUDIT_DOMAIN = b"memwarden.audit.v1"


_encode = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False).encode


def _canonical(fields: Sequence[object]) -> bytes:
    """A JSON array of the fields: unambiguous (every string is quoted and escaped) and one C-level call."""
    return _encode(list(fields)).encode("utf-8", "surrogatepass")


def record_fields(r: Record) -> tuple[object, ...]:
    p = r.provenance
    return (
        r.id, r.version, r.kind, r.content, r.content_hash, r.metadata, float(r.confidence), r.sensitivity,
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

    def mac(self, data: bytes) -> str:
        return hmac.digest(self._key, data, "sha256").hex()

    def mac_fields(self, domain: bytes, fields: Sequence[object]) -> str:
        """HMAC over the canonical form of ``fields``, separated from other uses by ``domain``."""
        return hmac.digest(self._key, domain + _canonical(fields), "sha256").hex()

    def audit_link(self, prev_hash: str, fields: Sequence[object]) -> str:
        msg = _AUDIT_DOMAIN + prev_hash.encode() + _canonical(fields)
        return hmac.digest(self._key, msg, "sha256").hex()
