"""The live event stream of ``memwarden serve`` (A3): ``GET /v1/events``, Server-Sent Events for an operator token.

**What it tails: the durable audit log, by sequence number — not the in-process bus.** Every lifecycle event is
an audit row before anyone hears of it (A1), so the stream reads the rows of the token's tenant (and user) after
a cursor, in ``seq`` order, with tenant, user and event in the SQL (S3). Reasons:

- *across processes*: writes from another ``memwarden serve``, the CLI (``review promote``, ``forget``, ``gc``)
  or a library process on the same store never reach this process's :class:`~memwarden.events.EventBus`; they
  are all in the log;
- *resume*: each SSE event's ``id`` is its audit ``seq``, so a client that reconnects with ``Last-Event-ID``
  (browsers do it on their own) gets exactly the events it missed, none twice — the bus keeps no history;
- *what an operator may see*: a row is streamed as ``GET /v1/audit/log`` returns it (the same fields, never more
  memory content than that route), plus ``verified``, whether its own MAC holds (a forged row says so);
- a slow client costs a cursor, not a queue that grows in memory.

The in-process bus is still used, as a *doorbell*: while a stream is open, each event published in this process
wakes the streams at once (instead of at the next poll), so same-process events arrive without the poll delay;
events of other processes arrive within ``stream_poll`` seconds.

Each stream sends a comment heartbeat every ``stream_heartbeat`` seconds (proxies keep it open; a dead client is
noticed), re-checks its token on every poll (a revoked token's stream ends), ends after ``stream_max_seconds``
(the client reconnects with ``Last-Event-ID``), and ends at once when the server shuts down (:meth:`close`,
called from the server's signal handler, so graceful shutdown never waits on an open stream). At most
``max_streams_per_token`` streams per token and ``max_streams`` per process (429 beyond).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from memwarden import audit, auth
from memwarden.auth import OPERATOR, AuthError, Principal
from memwarden.errors import RateLimited
from memwarden.service import MemoryService

MEDIA_TYPE = "text/event-stream"
BATCH = 500  # audit rows per poll; a full batch is followed by the next one at once

# One SSE event as OpenAPI documents it (3.1: the schema of each event; ``data`` is the JSON of one audit row).
ROW_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["seq", "ts", "event", "tenant", "actor", "details", "verified"],
    "properties": {
        "seq": {"type": "integer"}, "ts": {"type": "integer"}, "event": {"type": "string"},
        "tenant": {"type": "string"}, "user": {"type": ["string", "null"]}, "agent": {"type": ["string", "null"]},
        "session_id": {"type": ["string", "null"]}, "memory_id": {"type": ["string", "null"]},
        "actor": {"type": "string"}, "details": {"type": "object"}, "verified": {"type": "boolean"},
    },
}
EVENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["data", "event", "id"],
    "properties": {
        "event": {"type": "string"},
        "id": {"type": "string", "pattern": "^[0-9]+$"},
        "data": {"type": "string", "contentMediaType": "application/json", "contentSchema": ROW_SCHEMA},
        "retry": {"type": "integer", "minimum": 0},
    },
}


@dataclass(frozen=True, slots=True)
class StreamLimits:
    heartbeat: float = 15.0  # seconds between comment heartbeats when nothing else is sent
    poll: float = 1.0  # seconds between reads of the audit log (other processes' events)
    max_seconds: float = 3600.0  # a stream ends after this; the client resumes with Last-Event-ID
    per_token: int = 4
    total: int = 256
    retry_ms: int = 2000  # the reconnection delay the stream asks clients for


class StreamRefused(RateLimited):
    """A stream refused while the server shuts down or past the stream limits (429, ``Retry-After``)."""

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = max(1, retry_after)


class EventStreams:
    """The open event streams of one server process: their count per token, the doorbell, and shutdown."""

    def __init__(self, service: MemoryService, limits: StreamLimits,
                 authenticate: Callable[[str], Principal] | None = None) -> None:
        self.service = service
        self.limits = limits
        # how a token is re-checked on each poll: the server's authenticator (memwarden tokens, issuer JWTs)
        self._authenticate = authenticate or (lambda token: auth.authenticate(service, token))
        self._lock = threading.Lock()
        self._open: dict[str, int] = {}  # token id → open streams
        self._bells: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = set()
        self._unsubscribe: Callable[[], None] | None = None
        self._closing = threading.Event()

    @property
    def closing(self) -> bool:
        return self._closing.is_set()

    def open_count(self, token_id: str | None = None) -> int:
        with self._lock:
            return sum(self._open.values()) if token_id is None else self._open.get(token_id, 0)

    def acquire(self, token_id: str) -> None:
        """Count one more stream of ``token_id``, or refuse it (429) past a limit or during shutdown."""
        with self._lock:
            if self._closing.is_set():
                raise StreamRefused("the server is shutting down; reconnect in a moment", retry_after=5)
            if sum(self._open.values()) >= self.limits.total or self._open.get(token_id, 0) >= self.limits.per_token:
                raise StreamRefused(f"too many open event streams (at most {self.limits.per_token} per token and "
                                    f"{self.limits.total} per server); close one and retry", retry_after=5)
            self._open[token_id] = self._open.get(token_id, 0) + 1
            if self._unsubscribe is None:  # the bus is rung only while someone listens
                self._unsubscribe = self.service.events.subscribe(self._ring)

    def release(self, token_id: str) -> None:
        with self._lock:
            left = self._open.get(token_id, 0) - 1
            if left > 0:
                self._open[token_id] = left
            else:
                self._open.pop(token_id, None)
            if not self._open and self._unsubscribe is not None:
                self._unsubscribe()
                self._unsubscribe = None

    def close(self) -> None:
        """End every open stream now and refuse new ones (server shutdown). Safe from a signal handler."""
        self._closing.set()
        self._ring(None)

    def _ring(self, _event: object) -> None:
        for loop, bell in list(self._bells):
            try:
                loop.call_soon_threadsafe(bell.set)
            except RuntimeError:  # that loop is closed: its stream is gone
                self._bells.discard((loop, bell))

    def response(self, principal: Principal, token: str, after: int, events: Sequence[str]) -> StreamingResponse:
        """The SSE response of one stream from audit row ``after``; counted against the token from now until
        the response ends, however it ends (call after :meth:`acquire`)."""
        return _EventStreamResponse(self._run(principal, token, after, tuple(events)),
                                    release=lambda: self.release(principal.token_id))

    async def _run(self, principal: Principal, token: str, after: int, events: tuple[str, ...]
                   ) -> AsyncIterator[bytes]:
        limits = self.limits
        loop = asyncio.get_running_loop()
        bell = asyncio.Event()
        self._bells.add((loop, bell))
        cursor = after
        started = last_sent = time.monotonic()
        try:
            yield f"retry: {limits.retry_ms}\n: memwarden events of {_comment(principal.scope_text)}\n\n".encode()
            while not self._closing.is_set():
                bell.clear()
                polled = await anyio.to_thread.run_sync(self._poll, principal, token, cursor, events)
                if polled is None:
                    yield b": the token is no longer valid; the stream ends\n\n"
                    return
                rows, cursor = polled
                for row in rows:
                    yield format_event(row)
                now = time.monotonic()
                if rows:
                    last_sent = now
                if len(rows) >= BATCH:
                    continue  # more are waiting: no pause
                if now - started >= limits.max_seconds:
                    yield b": the stream has reached its maximum duration; reconnect with Last-Event-ID\n\n"
                    return
                if now - last_sent >= limits.heartbeat:
                    yield b": heartbeat\n\n"
                    last_sent = now
                wait = min(limits.poll, limits.heartbeat - (now - last_sent), limits.max_seconds - (now - started))
                if not self._closing.is_set():
                    with anyio.move_on_after(max(wait, 0.0)):
                        await bell.wait()
            yield b": the server is shutting down; reconnect with Last-Event-ID\n\n"
        finally:
            self._bells.discard((loop, bell))

    def _poll(self, principal: Principal, token: str, cursor: int, events: tuple[str, ...]
              ) -> tuple[list[dict[str, Any]], int] | None:
        """The next batch of the tenant's events, or None if the token is no longer valid (revoked meanwhile)."""
        try:
            now = self._authenticate(token)
        except AuthError:
            return None
        if now.token_id != principal.token_id or now.role != OPERATOR:
            return None
        return audit.tail(self.service.backend, self.service.signer, cursor, tenant=principal.tenant,
                          user=principal.user, events=events, limit=BATCH)


def format_event(row: dict[str, Any]) -> bytes:
    """One audit row as an SSE event: ``id`` its seq, ``event`` its name, ``data`` its JSON on one line."""
    data = json.dumps(row, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    return f"id: {row['seq']}\nevent: {_field(str(row['event']))}\ndata: {data}\n\n".encode()


def _field(text: str) -> str:
    """An event name is one line (audit event names are identifiers; this only guards the framing)."""
    return "".join(c for c in text if c not in "\r\n") or "message"


def _comment(text: str) -> str:
    return "".join(c for c in text if c not in "\r\n")


class _EventStreamResponse(StreamingResponse):
    """A streamed ``text/event-stream`` response that releases its stream slot when it ends — normally, on a
    client disconnect, or cancelled — even if its body never started."""

    media_type = MEDIA_TYPE

    def __init__(self, content: AsyncIterator[bytes], *, release: Callable[[], None]) -> None:
        super().__init__(content, media_type=MEDIA_TYPE,
                         headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})
        self._release = release

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._release()
            aclose = getattr(self.body_iterator, "aclose", None)
            if aclose is not None:  # a generator left at a yield (the client went away while it was sent)
                with anyio.CancelScope(shield=True):
                    await aclose()
