"""Record-level gate rules: size cap, empty content, invalid kind, bad or oversize metadata, control characters.

Rule ids: ``record.not_text``, ``record.empty``, ``record.too_large``, ``record.invalid_kind``,
``record.invalid_confidence``, ``record.metadata_invalid``, ``record.metadata_too_large``,
``record.control_chars``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from memwarden.gate import REJECT, Candidate, RuleHit, Scanner
from memwarden.policy import Policy
from memwarden.records import Kind

_KINDS = frozenset(k.value for k in Kind)
# C0 controls except TAB, LF and CR; DEL; C1 controls. Lone surrogates are caught by the UTF-8 encode check.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def without_controls(text: str) -> str:
    """``text`` with control characters replaced by spaces and unpaired surrogates by U+FFFD (episodes keep what
    was said; the gate's record rules would otherwise refuse the whole turn)."""
    return _SURROGATE.sub("\ufffd", _CONTROL.sub(" ", text))


def check_text(c: Candidate, policy: Policy) -> Iterator[RuleHit]:
    text = c.content
    if not isinstance(text, str):
        yield RuleHit("record.not_text", REJECT, f"content must be text, got {type(text).__name__}")
        return
    if not text.strip():
        yield RuleHit("record.empty", REJECT, "content is empty or only whitespace")
        return
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError as exc:
        yield RuleHit("record.control_chars", REJECT, "content holds an unpaired surrogate code point",
                      (exc.start, exc.end))
        return
    if size > policy.max_record_bytes:
        yield RuleHit("record.too_large", REJECT,
                      f"content is {size} bytes; the limit is {policy.max_record_bytes} bytes per record")
    m = _CONTROL.search(text)
    if m:
        yield RuleHit("record.control_chars", REJECT,
                      f"content holds control character U+{ord(m.group()):04X} at offset {m.start()}",
                      (m.start(), m.end()))


def check_kind(c: Candidate, policy: Policy) -> Iterator[RuleHit]:
    if not isinstance(c.kind, str) or c.kind not in _KINDS:
        shown = c.kind if isinstance(c.kind, str) and len(c.kind) <= 40 else type(c.kind).__name__
        yield RuleHit("record.invalid_kind", REJECT,
                      f"kind {shown!r} is not one of {', '.join(sorted(_KINDS))}")


def check_confidence(c: Candidate, policy: Policy) -> Iterator[RuleHit]:
    v = c.confidence
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not (0 <= v <= 1):  # no float(): 10**400
        yield RuleHit("record.invalid_confidence", REJECT, "confidence must be a number from 0 to 1")


def _metadata_ok(value: Any, depth: int = 0) -> bool:
    if depth > 4:
        return False
    if isinstance(value, str):
        return _encodes(value)
    if value is None or isinstance(value, bool):
        return True
    if isinstance(value, int):
        return -(2**63) <= value < 2**63  # what SQLite's JSON functions and other JSON readers can hold
    if isinstance(value, float):
        return value == value and value not in (float("inf"), float("-inf"))
    if isinstance(value, list):
        return all(_metadata_ok(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _encodes(k) and _metadata_ok(v, depth + 1) for k, v in value.items())
    return False


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate
        return False
    return True


def check_metadata(c: Candidate, policy: Policy) -> Iterator[RuleHit]:
    md = c.metadata
    if md is None:
        return
    if not isinstance(md, dict) or not _metadata_ok(md):
        yield RuleHit("record.metadata_invalid", REJECT,
                      "metadata must be a JSON object of strings, numbers, booleans, lists and objects "
                      "(nested at most 4 deep)")
        return
    size = len(json.dumps(md, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    if size > policy.max_metadata_bytes:
        yield RuleHit("record.metadata_too_large", REJECT,
                      f"metadata is {size} bytes; the limit is {policy.max_metadata_bytes} bytes")


RECORD_SCANNERS: tuple[Scanner, ...] = (check_text, check_kind, check_confidence, check_metadata)


def record_hits(c: Candidate, policy: Policy) -> list[RuleHit]:
    """All record-level hits; the common case (a well-formed record) returns at once without generators."""
    text, kind, conf, md = c.content, c.kind, c.confidence, c.metadata
    if (isinstance(text, str) and text.isascii() and text.strip() and len(text) <= policy.max_record_bytes
            and not _CONTROL.search(text) and isinstance(kind, str) and kind in _KINDS and md is None
            and type(conf) in (int, float) and 0.0 <= conf <= 1.0):
        return []
    return [hit for scan in RECORD_SCANNERS for hit in scan(c, policy)]
