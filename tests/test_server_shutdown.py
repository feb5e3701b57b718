"""Graceful shutdown and timeouts of a real ``memwarden serve`` (issue 13, "graceful shutdown that finishes in-flight
writes", "timeouts"; I3): SIGINT or SIGTERM while REST and MCP writes are in flight — one of them a request whose
body is still arriving — and a client that never finishes its body: every acknowledged write is in the store,
the request in flight is served, and the process exits 0 within the shutdown bound. A body that does not arrive
in time is a 408; an idle keep-alive connection is closed."""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

import memwarden
from memwarden import audit, auth
from rest_helpers import start_serve

SHUTDOWN_TIMEOUT = 3
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28",
               "Mcp-Method": "tools/call", "Mcp-Name": "memory_save"}
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {}}


def _raw_request(base: str, path: str, token: str, body: bytes) -> socket.socket:
    """Open a connection and send a POST's headers and the first half of its body (the rest: ``_finish``)."""
    host, port = base.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=30)
    head = (f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer {token}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode()
    sock.sendall(head + body[: len(body) // 2])
    return sock


def _finish(sock: socket.socket, body: bytes) -> tuple[int, dict[str, Any]]:
    sock.sendall(body[len(body) // 2:])
    status, payload = _response(sock)
    sock.close()
    return status, json.loads(payload)


def _response(sock: socket.socket) -> tuple[int, bytes]:
    """One HTTP/1.1 response with a Content-Length: its status and body."""
    raw = b""
    while b"\r\n\r\n" not in raw or len(raw.split(b"\r\n\r\n", 1)[1]) < _length(raw):
        chunk = sock.recv(65536)
        if not chunk:
            break
        raw += chunk
    head, _, payload = raw.partition(b"\r\n\r\n")
    return int(head.split()[1]), payload


def _length(raw: bytes) -> int:
    for line in raw.split(b"\r\n\r\n", 1)[0].split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            return int(v)
    return 0


class Writers:
    """REST and MCP clients saving in a loop until the server goes away; what was acknowledged, by id."""

    def __init__(self, base: str, token: str) -> None:
        self.base, self.token = base, token
        self.acked: set[str] = set()
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self._rest, args=(n,), daemon=True) for n in range(3)]
        self.threads.append(threading.Thread(target=self._mcp, daemon=True))

    def start(self) -> None:
        for t in self.threads:
            t.start()

    def _ack(self, memory_id: Any) -> None:
        assert isinstance(memory_id, str) and memory_id
        with self.lock:
            self.acked.add(memory_id)

    def _rest(self, n: int) -> None:
        try:
            with httpx.Client(base_url=self.base, headers={"Authorization": f"Bearer {self.token}"},
                              timeout=30) as c:
                sid = c.post("/v1/sessions").json()["session_id"]
                for k in range(100_000):
                    r = c.post(f"/v1/sessions/{sid}/tools/memory_save",
                               json={"content": f"User's shelf {n} holds box number {k}"})
                    if r.status_code != 200:
                        return  # e.g. the connection was closed mid-shutdown: not acknowledged
                    self._ack(r.json()["result"]["id"])
        except httpx.TransportError:
            return

    def _mcp(self) -> None:
        try:
            with httpx.Client(headers={**MCP_HEADERS, "Authorization": f"Bearer {self.token}"}, timeout=30) as c:
                for k in range(100_000):
                    r = c.post(f"{self.base}/mcp", json={
                        "jsonrpc": "2.0", "id": k, "method": "tools/call",
                        "params": {"name": "memory_save", "arguments": {"content": f"User's crate holds jar {k}"},
                                   "_meta": META}})
                    if r.status_code != 200:
                        return
                    self._ack(r.json()["result"]["structuredContent"]["id"])  # held for review, but stored
        except httpx.TransportError:
            return


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_I3_shutdown_finishes_in_flight_writes_and_exits_within_the_bound(db_path: Path, sig: int) -> None:
    with memwarden.open(db_path) as svc:
        token, _ = auth.create_token(svc, "agent", "acme", user="u-1", agent="bot", host_reports_ingest=True)
    proc, base = start_serve(db_path, os.environ.copy(), args=["--shutdown-timeout", str(SHUTDOWN_TIMEOUT)])
    try:
        sid = httpx.post(f"{base}/v1/sessions", headers={"Authorization": f"Bearer {token}"}).json()["session_id"]
        slow_body = json.dumps({"content": "User prefers window seats on trains"}).encode()
        slow = _raw_request(base, f"/v1/sessions/{sid}/tools/memory_save", token, slow_body)
        stuck = _raw_request(base, f"/v1/sessions/{sid}/tools/memory_save", token, slow_body)  # never finished
        writers = Writers(base, token)
        writers.start()
        deadline = time.monotonic() + 60
        while len(writers.acked) < 30 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(writers.acked) >= 30, "the writers made no progress"
        proc.send_signal(sig)
        stopping = time.monotonic()
        time.sleep(0.5)  # the shutdown has begun; the slow request is still in flight
        status, answer = _finish(slow, slow_body)
        assert status == 200 and answer["result"]["status"] == "accepted", answer
        slow_id = answer["result"]["id"]
        code = proc.wait(timeout=SHUTDOWN_TIMEOUT + 10)
        elapsed = time.monotonic() - stopping
        for t in writers.threads:
            t.join(timeout=30)
        stuck.close()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert code == 0
    assert elapsed < SHUTDOWN_TIMEOUT + 3, f"took {elapsed:.1f} s to stop"  # the stuck client was cut off
    acked = writers.acked | {slow_id}
    with memwarden.open(db_path) as svc:  # every acknowledged write is in the store, and the store is sound
        stored = {c.id for c in svc.beliefs("acme", "u-1")}
        assert acked <= stored, f"{len(acked - stored)} acknowledged writes are missing"
        assert not list(audit.verify(svc.backend, svc.signer))
        ended = svc.backend.query("SELECT ended_at FROM sessions WHERE id = ?", (sid,))
        assert ended and ended[0][0] is not None  # the live session was ended on the way out


def test_i13_slow_body_is_408_and_idle_keep_alive_is_closed(db_path: Path) -> None:
    with memwarden.open(db_path) as svc:
        token, _ = auth.create_token(svc, "agent", "acme", user="u-1", agent="bot", host_reports_ingest=True)
    proc, base = start_serve(db_path, os.environ.copy(), args=["--body-timeout", "1", "--keep-alive-timeout", "1"])
    try:
        sock = _raw_request(base, "/v1/sessions", token, b'{"workspace": []}')
        sock.settimeout(10)
        begun = time.monotonic()
        status, payload = _response(sock)
        assert status == 408 and json.loads(payload)["code"] == "request_timeout", payload[:300]
        assert 0.8 < time.monotonic() - begun < 5
        sock.close()
        host, port = base.removeprefix("http://").split(":")
        idle = socket.create_connection((host, int(port)), timeout=10)
        idle.sendall(f"GET /healthz HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
        assert _response(idle) == (200, b'{"status":"ok"}')
        begun = time.monotonic()
        assert idle.recv(65536) == b""  # the server closes the idle keep-alive connection
        assert time.monotonic() - begun < 5
        idle.close()
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}) as c:
            assert c.post("/v1/sessions").status_code == 201  # a normal request is unaffected
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
