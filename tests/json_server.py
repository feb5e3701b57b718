"""One fake JSON-over-HTTP server for tests: a real server on a free loopback port (so it works whatever HTTP library
the code under test uses), whose every request is answered by a function the test gives."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: Any  # the parsed JSON body (None when there is none)


@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: Any = None  # JSON-able, or bytes sent as they are
    delay: float = 0.0  # seconds to wait before answering


Answer = Callable[[Request], Reply | None]  # None: 404


@contextlib.contextmanager
def json_server(answer: Answer) -> Iterator[str]:
    """Serve ``answer`` on 127.0.0.1; yields the base URL (``http://127.0.0.1:PORT``)."""

    class Handler(BaseHTTPRequestHandler):
        def _handle(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = raw
            reply = answer(Request(self.command, self.path, dict(self.headers.items()), body))
            if reply is None:
                self.send_error(404)
                return
            time.sleep(reply.delay)
            out = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
            self.send_response(reply.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        do_GET = do_POST = _handle

        def log_message(self, *_args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
