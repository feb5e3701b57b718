"""Keyed items: a key-value view of a session's memories, for integrations whose stores address items by a
namespace and a key (the LangGraph ``BaseStore``; files of a memory tool).

An item is an ordinary memory written through the one write path (gate → taint → sign → store → audit) with its
namespace and key in its signed metadata (``store.base.ITEM_NS`` / ``ITEM_KEY``). What that adds:

* **exact lookup by key**: the engine indexes the key within the scope, and the key is a parameter of the query,
  like the scope (S3) — ``get`` is one index probe, never a scan of the scope;
* **upsert by key**: ``put`` of a key that exists writes a new version of that record (I2: with the version it
  read; a concurrent writer's newer version is retried once, then reported);
* **keys are identities**: a keyed item is never merged into another record as a near-duplicate (Q3), so two
  keys holding the same value stay two items.

A namespace is a label *inside* the session's scope, never a scope: the tenant, user and agent always come from
the session the application opened (identity from the application, never from the model or the namespace), so
no namespace can reach another user's records. The namespace and key are stored in metadata the agent's own tools
cannot write (they take no metadata).

The value is stored as the memory's text, so the gate judges all of it: a value holding one text field is stored
as that text (it reads well in the prompt block); any other value as canonical JSON. If the gate strips part of
the text (G4), the item reads back as what was stored: the JSON if it still parses, else ``{"content": text}``.
A write the gate rejects raises :class:`ItemRejected`; a write held for review (a tainted session, T2) stores
nothing visible — ``get`` keeps returning what was there before.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memwarden.errors import InvalidInput, VersionConflict
from memwarden.records import Kind
from memwarden.store.base import ITEM_KEY, ITEM_NS

if TYPE_CHECKING:
    from memwarden.records import Record
    from memwarden.service import WriteResult
    from memwarden.session import Session

ITEM_FIELD = "mw_item_field"  # metadata: the one text field a value held (its text is the memory's content)
MAX_LABEL = 200
MAX_KEY = 500
MAX_DEPTH = 16


class ItemRejected(InvalidInput):
    """The write gate refused an item's value; nothing was stored. ``result`` is the write's verdict."""

    def __init__(self, result: WriteResult | str) -> None:
        super().__init__(result if isinstance(result, str) else result.message)
        self.result = None if isinstance(result, str) else result


@dataclass(frozen=True, slots=True)
class Item:
    """One keyed item as stored: its namespace, key, value, times (unix ms) and the memory holding it."""

    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    created_at: int
    updated_at: int
    expires_at: int
    record: Record


def namespace_text(namespace: Sequence[str]) -> str:
    """The stored form of a namespace: its labels as compact JSON without the closing bracket, so that the
    namespaces under a prefix are exactly the texts starting with the prefix's text."""
    return json.dumps(list(namespace), ensure_ascii=False, separators=(",", ":"))[:-1]


def key_text(namespace: Sequence[str], key: str) -> str:
    return json.dumps([list(namespace), key], ensure_ascii=False, separators=(",", ":"))


def parse_namespace(text: str) -> tuple[str, ...]:
    return tuple(json.loads(text + "]"))


def check_namespace(namespace: Any, *, allow_empty: bool = False) -> tuple[str, ...]:
    if not isinstance(namespace, (tuple, list)) or not all(isinstance(x, str) for x in namespace):
        raise InvalidInput("a namespace is a tuple of text labels")
    if not namespace and not allow_empty:
        raise InvalidInput("a namespace needs at least one label")
    if len(namespace) > MAX_DEPTH:
        raise InvalidInput(f"a namespace has at most {MAX_DEPTH} labels")
    for label in namespace:
        if not label or len(label) > MAX_LABEL:
            raise InvalidInput(f"each namespace label is 1 to {MAX_LABEL} characters")
    return tuple(namespace)


def check_key(key: Any) -> str:
    if not isinstance(key, str) or not key or len(key) > MAX_KEY:
        raise InvalidInput(f"an item key is text of 1 to {MAX_KEY} characters")
    return key


class Items:
    """The keyed items of one session (see the module docstring). ``kind``: the kind items are stored as (the
    gate's tier, G8). Thread-safe: writes of one ``Items`` are serialised so that two puts of a new key from
    two threads make one item."""

    def __init__(self, session: Session, *, kind: str = Kind.FACT) -> None:
        if kind not in Kind.__members__.values() or kind == Kind.REMINDER:
            raise InvalidInput(f"items are stored as a fact, preference, procedure, episode or task_state; "
                               f"not {str(kind)[:40]!r}")
        self.session = session
        self.kind = kind
        self._lock = threading.Lock()

    # --- reads -----------------------------------------------------------------------------------------------

    def get(self, namespace: Sequence[str], key: str) -> Item | None:
        """The item, or ``None`` (never stored, deleted, expired, held for review, or above the clearance)."""
        ns, key = check_namespace(namespace), check_key(key)
        found = self.session.view(kind=self.kind, limit=1, item_key=key_text(ns, key))
        return _item(found[0]) if found else None

    def list(self, prefix: Sequence[str] = (), limit: int = 100) -> list[Item]:
        """The newest items whose namespace starts with ``prefix`` (the namespace in the SQL)."""
        ns = check_namespace(prefix, allow_empty=True)
        text = namespace_text(ns) if ns else None
        return [i for r in self.session.view(kind=self.kind, limit=limit, item_prefix=text)
                if (i := _item(r)) is not None]

    def search(self, prefix: Sequence[str], query: str, limit: int = 10) -> list[tuple[Item, float]]:
        """Items under ``prefix`` ranked by the session's search (the scope in the SQL). The search ranks the
        scope's memories; the namespace is then narrowed here, so up to four times ``limit`` (at most 100)
        candidates are asked for."""
        ns = check_namespace(prefix, allow_empty=True)
        text = namespace_text(ns) if ns else ""
        found = self.session.search(query, k=min(100, max(1, limit) * 4), kind=self.kind)
        out: list[tuple[Item, float]] = []
        for rank, r in enumerate(found):
            item = _item(r)
            if item is not None and r.metadata.get(ITEM_NS, "").startswith(text):
                out.append((item, 1.0 / (1 + rank)))
        return out[:limit]

    def namespaces(self, prefix: Sequence[str] = (), limit: int = 1000) -> list[tuple[str, ...]]:
        ns = check_namespace(prefix, allow_empty=True)
        return [parse_namespace(t) for t in self.session.item_namespaces(namespace_text(ns) if ns else None,
                                                                        limit)]

    # --- writes ----------------------------------------------------------------------------------------------

    def put(self, namespace: Sequence[str], key: str, value: Mapping[str, Any],
            ttl_minutes: int | None = None) -> WriteResult:
        """Store ``value`` under the key (a new version if it exists). Raises :class:`ItemRejected` if the gate
        refuses it; a result with status ``review`` is held and not visible (T2)."""
        ns, key = check_namespace(namespace), check_key(key)
        if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
            raise InvalidInput("an item's value is a mapping with text keys")
        content, fld = _render(value)
        metadata: dict[str, Any] = {ITEM_NS: namespace_text(ns), ITEM_KEY: key_text(ns, key)}
        if fld is not None:
            metadata[ITEM_FIELD] = fld
        with self._lock:
            for attempt in (1, 2):
                found = self.session.view(kind=self.kind, limit=1, item_key=metadata[ITEM_KEY])
                try:
                    if found:
                        res = self.session.update(found[0].id, content, expected_version=found[0].version,
                                                  metadata=metadata, ttl_minutes=ttl_minutes)
                    else:
                        res = self.session.save(content, self.kind, metadata=metadata, ttl_minutes=ttl_minutes)
                    break
                except VersionConflict:
                    if attempt == 2:
                        raise
        if res.status == "rejected":
            raise ItemRejected(res)
        return res

    def delete(self, namespace: Sequence[str], key: str) -> int:
        """Delete every record holding the key that this session may see; returns how many memories went (with
        what was derived from them, D3)."""
        ns, key = check_namespace(namespace), check_key(key)
        gone = 0
        with self._lock:
            for r in self.session.view(kind=self.kind, limit=100, item_key=key_text(ns, key)):
                gone += len(self.session.remove(r.id))
        return gone


def _render(value: Mapping[str, Any]) -> tuple[str, str | None]:
    if len(value) == 1:
        (fld, text), = value.items()
        if isinstance(text, str) and text.strip():
            return text, fld
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":")), None
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"an item's value must be JSON: {str(exc)[:200]}") from None


def _item(r: Record) -> Item | None:
    md = r.metadata
    ns_text, key = md.get(ITEM_NS), md.get(ITEM_KEY)
    if not isinstance(ns_text, str) or not isinstance(key, str):
        return None
    try:
        ns_list, item_key = json.loads(key)
        namespace = tuple(ns_list)
    except (ValueError, TypeError):
        return None
    fld = md.get(ITEM_FIELD)
    value: dict[str, Any]
    if isinstance(fld, str):
        value = {fld: r.content}
    else:
        try:
            parsed = json.loads(r.content)
        except ValueError:
            parsed = None
        value = parsed if isinstance(parsed, dict) else {"content": r.content}
    return Item(namespace, str(item_key), value, r.created_at, r.updated_at, r.expires_at, r)
