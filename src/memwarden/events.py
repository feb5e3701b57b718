"""In-process event bus (A3): lifecycle events reach programmatic subscribers after they are committed.

A subscriber that raises is logged and skipped; it can never break or roll back a write.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger("memwarden.events")


@dataclass(frozen=True, slots=True)
class Event:
    event: str  # added | updated | merged | removed | expired | evicted | rejected | held | promoted | read ...
    ts: int
    seq: int | None = None  # audit sequence number
    memory_id: str | None = None
    session_id: str | None = None
    tenant: str | None = None
    user: str | None = None
    agent: str | None = None
    actor: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


Subscriber = Callable[[Event], None]


class EventBus:
    def __init__(self) -> None:
        self._subs: list[tuple[Subscriber, frozenset[str] | None]] = []
        self._lock = threading.Lock()

    def subscribe(self, fn: Subscriber, events: Iterable[str] | None = None) -> Callable[[], None]:
        """Call ``fn(event)`` for every event (or only the named ones); returns an unsubscribe function."""
        entry = (fn, frozenset(events) if events is not None else None)
        with self._lock:
            self._subs.append(entry)

        def unsubscribe() -> None:
            with self._lock:
                if entry in self._subs:
                    self._subs.remove(entry)

        return unsubscribe

    def publish(self, events: Iterable[Event]) -> None:
        subs = self._subs
        if not subs:
            return
        for ev in events:
            for fn, wanted in list(subs):
                if wanted is None or ev.event in wanted:
                    try:
                        fn(ev)
                    except Exception:  # a subscriber must never break the write path
                        log.exception("memwarden event subscriber %r failed", fn)
