"""Shared set-up for the REST tests: an app over a temp store, and tokens for two tenants and users."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import httpx

with warnings.catch_warnings():  # starlette's TestClient warns that it prefers httpx2; httpx is what we pin
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from memwarden import auth
from memwarden.rest import ServerConfig, create_app
from memwarden.service import MemoryService


@dataclass
class Api:
    client: TestClient
    service: MemoryService
    tokens: dict[str, str]  # name → secret

    def h(self, name: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[name]}"}

    def start(self, name: str, **body: Any) -> dict[str, Any]:
        r = self.client.post("/v1/sessions", headers=self.h(name), json=body or None)
        assert r.status_code == 201, r.text
        return r.json()

    def tool(self, name: str, sid: str, tool: str, args: dict[str, Any]) -> Any:
        return self.client.post(f"/v1/sessions/{sid}/tools/{tool}", headers=self.h(name), json=args)


def make_api(service: MemoryService, config: ServerConfig | None = None) -> Api:
    """The app and its tokens. The agent tokens ``agent_a``, ``agent_b`` and ``agent_t2`` have the
    host-reports-ingest profile (their host reports what it ingests, so their sessions start clean);
    ``agent_a_unreported`` (user A's scope too) has not: its sessions are untrusted from their start."""
    tokens: dict[str, str] = {}
    for name, role, tenant, user, agent, reports in (
        ("agent_a", "agent", "acme", "u-a", "bot", True),
        ("agent_b", "agent", "acme", "u-b", "bot", True),
        ("agent_t2", "agent", "globex", "u-a", "bot", True),
        ("agent_a_unreported", "agent", "acme", "u-a", "bot", False),
        ("op", "operator", "acme", None, None, False),
        ("op_a", "operator", "acme", "u-a", None, False),
        ("op_t2", "operator", "globex", None, None, False),
    ):
        tokens[name], _ = auth.create_token(service, role, tenant, user=user, agent=agent, name=name,
                                            host_reports_ingest=reports)
    client = TestClient(create_app(service, config), raise_server_exceptions=False)
    return Api(client, service, tokens)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_serve(db: Path, env: dict[str, str], *, capture: bool = False, args: Sequence[str] = (),
                output: IO[bytes] | None = None) -> tuple[subprocess.Popen[bytes], str]:
    """The real ``memwarden serve`` on ``db`` on a free loopback port, once ``/healthz`` answers (30 s at most):
    the process (its output in ``stdout`` with ``capture``, or written to ``output``, else discarded) and its base
    URL. ``args`` are more ``serve`` options. The caller stops it."""
    port = free_port()
    out: int | IO[bytes] = output if output is not None else subprocess.PIPE if capture else subprocess.DEVNULL
    err: int | IO[bytes] = subprocess.STDOUT if capture or output is not None else subprocess.DEVNULL
    proc = subprocess.Popen([sys.executable, "-m", "memwarden", "serve", "--port", str(port), "--db", str(db),
                             *args], env=env, stdout=out, stderr=err)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                return proc, base
        except httpx.TransportError:
            pass
        if proc.poll() is not None or time.monotonic() >= deadline:
            proc.kill()
            raise AssertionError("server did not start")
        time.sleep(0.1)
