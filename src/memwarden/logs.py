"""The log of ``memwarden serve``: one line per request and per lifecycle step, as JSON or as text, on stderr.

What a line may hold is fixed here, and **never memory content**: a request line has the method, the route
*template* (``/v1/sessions/{session_id}/tools/{name}``, not the raw path, whose ids and query say nothing an
operator needs that the audit log does not say better), the status, the duration in milliseconds, the request id
(the caller's ``X-Request-Id`` if it is a short token of safe characters, else one minted here; echoed in the
response), the client address, and the token's id and name — never the token itself, the ``Authorization``
header, a body or a query string. Lifecycle lines (start, stop requested, stopped) carry their settings.

Other records (uvicorn's own lines, memwarden's warnings) are kept as their message. An exception is logged with
its type and the stack's file/line/function, not its message (a message can quote the data that failed); set
``MEMWARDEN_DEBUG=1`` for full tracebacks. uvicorn's access log is off: the request line replaces it.
"""

from __future__ import annotations

import json
import logging
import os
import re
import secrets
import sys
import time
import traceback
from collections.abc import Awaitable, Callable, MutableMapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

FORMATS = ("json", "text")
ACCESS = logging.getLogger("memwarden.access")
LIFECYCLE = logging.getLogger("memwarden.server")
_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")
_STANDARD = frozenset(logging.makeLogRecord({}).__dict__) | {"message", "asctime", "color_message"}
MAX_MESSAGE = 2000


def json_bytes(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


@dataclass
class RequestLog:
    """What the request line will say; the authenticator adds the principal once it knows it."""

    request_id: str
    token_id: str | None = None
    token_name: str | None = None


_current: ContextVar[RequestLog | None] = ContextVar("memwarden_request_log", default=None)


def note_principal(token_id: str, name: str) -> None:
    """Name the caller in the current request's log line (its token id and name, never the secret)."""
    entry = _current.get()
    if entry is not None:
        entry.token_id, entry.token_name = token_id, name


def default_format() -> str:
    """text for a person at a terminal, json for everything else (a service manager, a container, a pipe)."""
    return "text" if sys.stderr.isatty() else "json"


def _stack(exc: BaseException) -> list[str]:
    return [f"{f.filename}:{f.lineno} in {f.name}" for f in traceback.extract_tb(exc.__traceback__)][-20:]


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    return {k: v for k, v in record.__dict__.items() if k not in _STANDARD and not k.startswith("_")}


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ``ts``, ``level``, ``logger``, ``event``, ``msg`` and the record's fields."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(), "logger": record.name, "event": "log"}
        out.update(_fields(record))
        out["msg"] = record.getMessage()[:MAX_MESSAGE]
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            out["exc_type"] = type(exc).__name__
            out["stack"] = _stack(exc)
            if os.environ.get("MEMWARDEN_DEBUG"):
                out["traceback"] = "".join(traceback.format_exception(exc))
        return json.dumps(out, ensure_ascii=False, default=str, separators=(",", ":"))


class TextFormatter(logging.Formatter):
    """``<time> <LEVEL> <logger> <message> key=value …`` with control characters escaped."""

    def format(self, record: logging.LogRecord) -> str:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(record.created))
        extra = " ".join(f"{k}={v}" for k, v in _fields(record).items() if k != "event" and v is not None)
        line = f"{when} {record.levelname:<7} {record.name} {record.getMessage()[:MAX_MESSAGE]}"
        if extra:
            line += f" [{extra}]"
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            line += f" exc={type(exc).__name__} at {' <- '.join(reversed(_stack(exc)[-3:]))}"
            if os.environ.get("MEMWARDEN_DEBUG"):
                line += "\n" + "".join(traceback.format_exception(exc))
                return line
        return line.encode("unicode_escape", "backslashreplace").decode("ascii") if not line.isprintable() else line


def configure(fmt: str | None = None, level: int = logging.INFO) -> str:
    """Send every log record of this process to stderr in ``fmt`` (None: :func:`default_format`); returns it."""
    fmt = fmt or default_format()
    if fmt not in FORMATS:
        raise ValueError(f"log format must be one of {', '.join(FORMATS)}")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    for name in ("uvicorn", "uvicorn.error"):  # uvicorn's own lines go through the same handler
        lg = logging.getLogger(name)
        lg.handlers.clear()
        lg.propagate = True
    access = logging.getLogger("uvicorn.access")  # replaced by memwarden.access
    access.handlers.clear()
    access.propagate = False
    access.disabled = True
    return fmt


def lifecycle(event: str, message: str, **fields: Any) -> None:
    LIFECYCLE.info(message, extra={"event": event, **fields})


# --- the request line ---------------------------------------------------------------------------------------

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[MutableMapping[str, Any], Receive, Send], Awaitable[None]]


def _request_id(scope: MutableMapping[str, Any]) -> str:
    for k, v in scope.get("headers", ()):
        if k == b"x-request-id":
            given = v.decode("latin-1")
            if _REQUEST_ID.fullmatch(given):
                return given
            break
    return secrets.token_hex(8)


class AccessLog:
    """ASGI middleware: one ``memwarden.access`` line per HTTP request, when it ends (see the module docstring)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: MutableMapping[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        entry = RequestLog(_request_id(scope))
        reset = _current.set(entry)
        started = time.perf_counter()
        status = 500  # if the app fails before it answers
        rid_header = (b"x-request-id", entry.request_id.encode("ascii"))

        async def watch(msg: Message) -> None:
            nonlocal status
            if msg["type"] == "http.response.start":
                status = int(msg["status"])
                msg = {**msg, "headers": [*msg.get("headers", []), rid_header]}
            await send(msg)

        try:
            await self.app(scope, receive, watch)
        finally:
            _current.reset(reset)
            if ACCESS.isEnabledFor(logging.INFO):
                route = getattr(scope.get("route"), "path", None)  # the matched route's template, if any
                ms = round((time.perf_counter() - started) * 1000, 2)
                client = scope.get("client")
                ACCESS.info("%s %s %d %.2fms", scope.get("method"), route or "-", status, ms, extra={
                    "event": "request", "method": scope.get("method"), "route": route, "status": status,
                    "duration_ms": ms, "request_id": entry.request_id, "token_id": entry.token_id,
                    "token_name": entry.token_name, "client": client[0] if client else None})
