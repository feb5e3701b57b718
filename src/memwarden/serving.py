"""Running ``memwarden serve``: uvicorn with bounded timeouts, a structured log, and a graceful shutdown.

- **Keep-alive**: an idle keep-alive connection is closed after ``keep_alive_timeout`` seconds (uvicorn's
  ``timeout_keep_alive``).
- **Request bodies**: a request must deliver its whole body within ``body_timeout`` seconds of its headers, else
  it is answered ``408 request_timeout`` (:class:`BodyDeadline`; a slow-drip upload cannot hold a connection and
  a worker). uvicorn has no timeout for reading headers: in front of a network, put a proxy that has one.
- **Handlers** are not cut short: a write runs to its commit and its answer (cancelling it half-way would leave the
  caller unsure whether it was stored).
- **Shutdown**: SIGINT (Ctrl-C) or SIGTERM stops accepting connections at once, lets requests in flight finish for
  up to ``shutdown_timeout`` seconds, then cancels what is left (a cancelled request was never acknowledged),
  ends every live session (its audit row records its taint) and returns, so the caller closes the store and the
  process exits 0. A second Ctrl-C skips the wait.
"""

from __future__ import annotations

import os
import signal
import socket
import time
from collections.abc import Callable, MutableMapping
from types import FrameType
from typing import TYPE_CHECKING, Any

import anyio

from memwarden import logs
from memwarden.errors import InvalidInput
from memwarden.problems import MEDIA_TYPE, problem

if TYPE_CHECKING:
    from fastapi import FastAPI

    from memwarden.rest import ServerConfig

Message = logs.Message


class _BodyTimeout(Exception):
    pass


class BodyDeadline:
    """ASGI middleware: the request body must have arrived ``seconds`` after the app first asks for it; then 408.

    Place it outside the middleware that reads the body (it catches the timeout that middleware's read raises)."""

    def __init__(self, app: logs.ASGIApp, seconds: float) -> None:
        self.app, self.seconds = app, seconds

    async def __call__(self, scope: MutableMapping[str, Any], receive: logs.Receive, send: logs.Send) -> None:
        if scope["type"] != "http" or self.seconds <= 0:
            await self.app(scope, receive, send)
            return
        deadline = time.monotonic() + self.seconds
        done = False
        started = False

        async def timed() -> Message:
            nonlocal done
            if done:  # the body is in: later receives wait for the disconnect, without a deadline
                return await receive()
            with anyio.move_on_after(max(0.0, deadline - time.monotonic())):
                msg = await receive()
                if msg["type"] != "http.request" or not msg.get("more_body", False):
                    done = True
                return msg
            raise _BodyTimeout

        async def watch(msg: Message) -> None:
            nonlocal started
            if msg["type"] == "http.response.start":
                started = True
            await send(msg)

        try:
            await self.app(scope, timed, watch)
        except _BodyTimeout:
            if not started:
                body = problem("request_timeout", f"the request body did not arrive within {self.seconds:g} s")
                raw = logs.json_bytes(body)
                await send({"type": "http.response.start", "status": 408, "headers": [
                    (b"content-type", MEDIA_TYPE.encode()), (b"content-length", str(len(raw)).encode()),
                    (b"connection", b"close")]})
                await send({"type": "http.response.body", "body": raw})


def run(app: FastAPI, config: ServerConfig, *, log_format: str, describe: dict[str, Any] | None = None,
        on_signal: Callable[[], None] | None = None) -> None:
    """Serve ``app`` on ``config.host:config.port`` until SIGINT/SIGTERM, as the module docstring says;
    ``on_signal()`` runs when the first stop signal arrives (e.g. to end long-lived streams at once). The caller
    has configured logging (:func:`memwarden.logs.configure`, whose format is ``log_format``). Exits with
    uvicorn's start-up failure code if the server could not start (e.g. the port is taken)."""
    import uvicorn
    from uvicorn.main import STARTUP_FAILURE

    fmt = log_format

    class _Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            if not self.should_exit:
                logs.lifecycle("shutdown_requested", f"{signal.Signals(sig).name}: finishing requests in flight "
                               f"(at most {config.shutdown_timeout} s)", signal=signal.Signals(sig).name,
                               shutdown_timeout_s=config.shutdown_timeout)
                if on_signal is not None:
                    on_signal()
            super().handle_exit(sig, frame)

    server = _Server(uvicorn.Config(
        app, host=config.host, port=config.port, log_config=None, access_log=False, log_level="info",
        timeout_keep_alive=config.keep_alive_timeout, timeout_graceful_shutdown=config.shutdown_timeout,
        server_header=False))
    logs.lifecycle("server_starting", f"memwarden serve on {config.base_url} (pid {os.getpid()})",
                   host=config.host, port=config.port, pid=os.getpid(), log_format=fmt,
                   keep_alive_timeout_s=config.keep_alive_timeout, body_timeout_s=config.body_timeout,
                   shutdown_timeout_s=config.shutdown_timeout, max_body_bytes=config.max_body_bytes,
                   write_rate=config.write_rate, **(describe or {}))
    # uvicorn re-raises the signal it caught once it has shut down; the default SIGTERM action would then kill
    # the process before the caller closes the store. These handlers take that re-raised signal and do nothing.
    previous = {s: signal.signal(s, _ignore) for s in (signal.SIGINT, signal.SIGTERM)}
    began = time.monotonic()
    try:
        server.run()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    if not server.started:
        raise SystemExit(STARTUP_FAILURE)  # as uvicorn.run: the reason is in the log above
    logs.lifecycle("server_stopped", "memwarden serve stopped", uptime_s=round(time.monotonic() - began, 1))


def _ignore(_sig: int, _frame: FrameType | None) -> None:
    return None


def check_port(host: str, port: int) -> int:
    """The port (the one the OS picked for ``port=0``), or :class:`InvalidInput` (one line) if ``host:port`` cannot
    be listened on — checked before the store is opened, so a busy port is one clear message, not uvicorn's error
    among the log lines. (Another process may still take the port between this check and uvicorn's bind; uvicorn
    then reports it.)"""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: a port in TIME_WAIT is free
        try:
            s.bind((host, port))
        except OSError as exc:
            raise InvalidInput(f"cannot listen on {host}:{port}: {exc.strerror or exc}; is another memwarden serve "
                               "(or make run) using it? Pick another --port") from None
        return int(s.getsockname()[1])
