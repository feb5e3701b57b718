"""Server benchmark (issue 13, acceptance 5): memwarden over the wire vs the in-process library, side by side.

One run, one temporary store (its own key file, anchor and XDG directories), bounded in time:

* the store is pre-loaded in this process with ``--records`` episodes in each of ``--search-scopes`` scopes,
  through ``MemoryService.write_many`` (the write path's gate → sign → store → audit per record, committed in
  groups of 2,000) — the preload is not timed;
* the real ``memwarden serve`` is started as a child process on a free loopback port over that store, with
  ``--write-rate 1000000000`` (the per-token write limiter still runs on every save; its budget is far above
  what the benchmark writes, so no save is answered 429);
* every cell is one operation (``memory_save`` of a fresh episode, ``memory_search`` of two or three words,
  k=5) at one concurrency (``--clients``) on one *side*, for ``--seconds``:

  - **library** — ``session.save`` / ``session.search`` in this process, one thread and one session per client
    (the baseline: the same write path and the same search without HTTP);
  - **REST (raw HTTP/1.1)** — ``POST /v1/sessions/{id}/tools/{name}`` over loopback with a minimal HTTP/1.1
    client on asyncio streams (:class:`RawHttp`: the request's bytes, the status line, ``Content-Length``; what
    a load generator does), one agent token, one session and one keep-alive connection per client: what the
    *server* adds, with as little client CPU in the figure as possible;
  - **REST (httpx)** — the same calls with httpx's ``AsyncClient`` (a typical Python client; its own CPU per
    request is in the figure, and on 2 cores it competes with the server for them);
  - **MCP HTTP** — ``/mcp`` of the same server with the official MCP client (``streamable_http_client`` over
    httpx2, ``ClientSession``; protocol 2026-07-28, ``discover`` then ``call_tool``), one client and one agent
    token per caller — the server keeps one memwarden session per token;
  - **MCP stdio** (at the concurrencies of ``--mcp-clients``) — ``memwarden mcp`` with the official MCP client,
    one server process per client (the stdio transport serves one client), identity from ``$MEMWARDEN_TOKEN``.

  Both MCP transports hold their saves for review (nobody reports the host's ingest to them): still the one
  write path, stored and checked, but a different outcome from the other sides' accepted saves. Each MCP client
  makes one untimed first call before the clock (it starts the token's session; over stdio it also loads the
  process), reported apart.

  The cells of one (operation, concurrency) run side by side in ``--slices`` slices: the sides take turns slice
  by slice, rotating who goes first, so a change of the machine's load during a cell reaches every side alike
  (MCP stdio runs its cell in one piece: its processes start once per cell).
  Each save client writes to a scope of its own (its token's); search clients share the pre-loaded scopes
  round-robin (tokens of the same scope), so every search reads a scope of ``--records`` records.
* afterwards the server is stopped (SIGINT: graceful) and every acknowledged save — of every side — is looked
  up in the store: the count per scope and the set of ids must match exactly.

Latency is per call from the caller's side (``perf_counter_ns`` around the call: for REST and MCP the whole
round trip, queueing in the client's event loop included); throughput is completed calls per second of the
cell's wall time. Every cell has a deadline (``--seconds`` + ``--grace``): a side that does not finish by then
stops the run (the server is stopped, the script exits 1), so the script always ends by itself.

    .venv/bin/python benchmarks/bench_server.py [--clients 1,16,64] [--seconds 5] [--slices 5] [--records 10000]
                                               [--search-scopes 4] [--sides library,rest,httpx,mcp-http,mcp-stdio]
                                               [--mcp-clients 1,16] [--diagnose N] [--grace 120]
                                               [--out FILE] [--strict]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import itertools
import json
import os
import platform
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Protocol

try:
    import httpx
except ImportError:  # pragma: no cover - the dev/server extra is missing
    sys.exit("httpx is not installed: .venv/bin/pip install -e '.[dev]'")

import _words
import memwarden
from _report import cpu_model, table
from memwarden import auth
from memwarden.records import SourceType
from memwarden.scope import Scope
from memwarden.service import ALL_AGENTS, Context, MemoryService

# --- targets (issue 13, acceptance 5) -----------------------------------------------------------------------
MAX_SEARCH_P95_MS = 10.0  # REST search p95 at 16 clients, 10k records per scope
MAX_SAVE_OVERHEAD_MS = 1.5  # REST save median minus library save median (1 client)
TARGET_CLIENTS = 16

TENANT = "bench"
WRITE_RATE = 1_000_000_000  # per token per minute: the limiter runs, never refuses
BATCH = 2_000

_NAMES, _TOPICS, _PROJECTS, _OUTCOMES = _words.NAMES, _words.TOPICS, _words.PROJECTS, _words.OUTCOMES


def episode(rng: random.Random, n: int) -> str:
    return (f"{rng.choice(_NAMES)} and the user discussed {rng.choice(_TOPICS)} on the {rng.choice(_PROJECTS)} "
            f"(note {n}); {rng.choice(_OUTCOMES)}.")


def note(seed: int, n: int) -> int:
    """The note number of a save client's ``n``-th episode in the run ``seed`` (each side's run has a seed of its
    own): unique per scope, so no save is a near-duplicate of an earlier one (which the write path would merge,
    acknowledging the kept record's id again)."""
    return seed * 1_000_000 + n


def query(rng: random.Random) -> str:
    topic = rng.choice(_TOPICS).split()
    return " ".join([*rng.sample(topic, min(2, len(topic))), rng.choice(_PROJECTS).split()[0]])


# --- measurements -------------------------------------------------------------------------------------------


@dataclass
class Cell:
    side: str
    op: str
    clients: int
    ns: list[int] = field(default_factory=list)
    wall_s: float = 0.0
    errors: dict[str, int] = field(default_factory=dict)
    load: float = 0.0
    first_ns: list[int] = field(default_factory=list)  # untimed first call per client, where a side has one
    client_cpu_s: float = float("nan")  # CPU of this process (the callers; the library's work) while timed
    server_cpu_s: float = float("nan")  # CPU of the `memwarden serve` process while timed (REST, MCP HTTP)

    def cpu_ms(self, which: str) -> str:
        """CPU per completed call, in ms ("—" where not measured)."""
        v = self.client_cpu_s if which == "client" else self.server_cpu_s
        return "—" if v != v or not self.ns else f"{v / len(self.ns) * 1e3:.2f}"  # v != v: NaN

    def pct(self, q: float) -> float:
        """Nearest-rank percentile, in ms."""
        if not self.ns:
            return float("nan")
        s = sorted(self.ns)
        return s[min(len(s) - 1, max(0, int(q * len(s) + 0.5) - 1))] / 1e6

    @property
    def rate(self) -> float:
        return len(self.ns) / self.wall_s if self.wall_s else 0.0


@dataclass
class Acks:
    """Ids of acknowledged saves, per (user) scope."""

    by_user: dict[str, list[str]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, user: str, memory_id: str) -> None:
        with self.lock:
            self.by_user.setdefault(user, []).append(memory_id)


def merge(parts: Sequence[Cell]) -> Cell:
    """One cell from the slices of a side's cell: every call, the summed wall and CPU time, the mean load; the
    first calls of the first slice (a later slice's clients reuse the token's server-side session)."""
    first = parts[0]
    out = Cell(first.side, first.op, first.clients, first_ns=list(first.first_ns))
    for x in parts:
        out.ns += x.ns
        out.wall_s += x.wall_s
        out.client_cpu_s = (0.0 if out.client_cpu_s != out.client_cpu_s else out.client_cpu_s) + x.client_cpu_s
        out.server_cpu_s = (0.0 if out.server_cpu_s != out.server_cpu_s else out.server_cpu_s) + x.server_cpu_s
        for k, v in x.errors.items():
            out.errors[k] = out.errors.get(k, 0) + v
    out.load = sum(x.load for x in parts) / len(parts)
    return out


def process_cpu(pid: int | None) -> float:
    """CPU seconds (user + system) of process ``pid`` so far (Linux ``/proc``); NaN without one."""
    if pid is None:
        return float("nan")
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class CpuClock:
    """CPU of this process and of the server over the timed part of a cell."""

    def __init__(self, server_pid: int | None) -> None:
        self.pid = server_pid
        self._at = (time.process_time(), process_cpu(server_pid))

    def stop(self, cell: Cell) -> None:
        cell.client_cpu_s = time.process_time() - self._at[0]
        cell.server_cpu_s = process_cpu(self.pid) - self._at[1]


class Side(Protocol):
    """One way of reaching memwarden. ``run`` drives ``clients`` concurrent callers of ``op`` (``save`` or
    ``search``) for ``seconds`` and returns the cell; every acknowledged save goes into ``acks``. ``prefix``
    starts the user id of each save client's scope (the check afterwards groups scopes by it)."""

    name: str
    prefix: str

    def run(self, op: str, clients: int, seconds: float, acks: Acks, seed: int) -> Cell: ...


# --- the library side: threads in this process ---------------------------------------------------------------


class LibrarySide:
    name = "library (in process)"
    prefix = "lib-save-"

    def __init__(self, service: MemoryService, search_users: Sequence[str]) -> None:
        self.service, self.search_users = service, search_users

    def run(self, op: str, clients: int, seconds: float, acks: Acks, seed: int) -> Cell:
        cell = Cell(self.name, op, clients)
        lock = threading.Lock()
        ready = threading.Barrier(clients + 1)
        deadline = [0.0]

        def client(i: int) -> None:
            rng = random.Random(seed * 1000 + i)
            user = f"{self.prefix}{i}" if op == "save" else self.search_users[i % len(self.search_users)]
            mine: list[int] = []
            errors: dict[str, int] = {}
            with self.service.session(Scope(TENANT, user, "agent")) as s:
                ready.wait()
                n = 0
                while time.monotonic() < deadline[0]:
                    t = time.perf_counter_ns()
                    try:
                        if op == "save":
                            res = s.save(episode(rng, note(seed, n)), kind="episode")
                            ok = res.status == "accepted"
                            if ok:
                                acks.add(user, res.id)
                        else:
                            s.search(query(rng), k=5)
                            ok = True
                    except memwarden.MemwardenError as exc:
                        ok, code = False, type(exc).__name__
                        errors[code] = errors.get(code, 0) + 1
                    took = time.perf_counter_ns() - t
                    if ok:
                        mine.append(took)
                    n += 1
            with lock:
                cell.ns += mine
                for k, v in errors.items():
                    cell.errors[k] = cell.errors.get(k, 0) + v

        threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
        for t in threads:
            t.start()
        deadline[0] = time.monotonic() + seconds  # set before the barrier releases the clients
        t0 = time.monotonic()
        clock = CpuClock(None)
        ready.wait()
        for t in threads:
            t.join()
        cell.wall_s = time.monotonic() - t0
        clock.stop(cell)
        cell.load = os.getloadavg()[0]
        return cell


# --- HTTP clients: the REST side's, and the deadline every cell of a client in this loop has ------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RawHttp:
    """A minimal HTTP/1.1 keep-alive client on asyncio streams, one request at a time: the request's bytes out,
    the status line and ``Content-Length`` (or chunked) body back — about the least CPU a client can spend per
    request, so that a REST figure is mostly the server's. JSON bodies only; fixed headers per connection."""

    def __init__(self, host: str, port: int, headers: dict[str, str]) -> None:
        self.host, self.port = host, port
        self._fixed = "".join(f"{k}: {v}\r\n" for k, v in {"Host": f"{host}:{port}", **headers}.items())
        self._r: asyncio.StreamReader | None = None
        self._w: asyncio.StreamWriter | None = None

    async def open(self) -> RawHttp:
        self._r, self._w = await asyncio.open_connection(self.host, self.port)
        return self

    async def request(self, method: str, path: str, body: object = None) -> tuple[int, dict[str, Any]]:
        assert self._r is not None and self._w is not None, "open() first"
        if body is None:
            self._w.write(f"{method} {path} HTTP/1.1\r\n{self._fixed}Content-Length: 0\r\n\r\n".encode())
        else:
            raw = json.dumps(body).encode("utf-8")
            self._w.write(f"{method} {path} HTTP/1.1\r\n{self._fixed}Content-Type: application/json\r\n"
                          f"Content-Length: {len(raw)}\r\n\r\n".encode() + raw)
        head = await self._r.readuntil(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        status = int(lines[0].split(b" ", 2)[1])
        length, chunked = 0, False
        for line in lines[1:]:
            k, _, v = line.partition(b":")
            k = k.strip().lower()
            if k == b"content-length":
                length = int(v)
            elif k == b"transfer-encoding" and b"chunked" in v.lower():
                chunked = True
        if chunked:
            data = bytearray()
            while size := int((await self._r.readuntil(b"\r\n")).split(b";")[0], 16):
                data += await self._r.readexactly(size + 2)
                del data[-2:]
            await self._r.readuntil(b"\r\n")  # the empty trailer
        else:
            data = bytearray(await self._r.readexactly(length)) if length else bytearray()
        return status, (json.loads(data) if data else {})

    async def aclose(self) -> None:
        if self._w is not None:
            self._w.close()
            with contextlib.suppress(OSError):
                await self._w.wait_closed()


async def within(seconds: float, what: str, *aws: Any) -> list[Any]:
    """``gather(*aws)``, or RuntimeError once ``seconds`` have passed (the run stops; the script never hangs)."""
    try:
        return await asyncio.wait_for(asyncio.gather(*aws), timeout=seconds)
    except TimeoutError:
        raise RuntimeError(f"{what} did not finish within {seconds:.0f} s (raise --grace?)") from None


def _note(cell: Cell, code: str) -> None:
    cell.errors[code] = cell.errors.get(code, 0) + 1


# --- the REST side: the real server in a child process, over loopback -----------------------------------------


class RestSide:
    """``memwarden serve``'s REST routes, one agent token, one session (started before the clock) and one
    keep-alive connection per client, with ``client`` ``"raw"`` (:class:`RawHttp`) or ``"httpx"``. A save counts
    when its status is in ``accept`` — ``accepted`` today (these tokens' sessions are trusted); if REST saves of
    a session whose host does not report ingest become held for review, create the tokens with that profile
    (:func:`agent_token`) or accept ``review`` here."""

    def __init__(self, served: Served, save_tokens: Sequence[tuple[str, str]],
                 search_tokens: Sequence[tuple[str, str]], *, client: str = "raw",
                 accept: tuple[str, ...] = ("accepted",), grace: float = 120.0) -> None:
        self.base, self.server_pid = served.base, served.pid
        self.client, self.accept, self.grace = client, accept, grace
        self.name = "REST (raw HTTP/1.1)" if client == "raw" else "REST (httpx)"
        self.prefix = "save-" if client == "raw" else "hx-save-"
        self.tokens = {"save": save_tokens, "search": search_tokens}  # (token, user) per client

    def run(self, op: str, clients: int, seconds: float, acks: Acks, seed: int) -> Cell:
        return asyncio.run(self._run(op, clients, seconds, acks, seed))

    async def _connect(self, token: str) -> Any:
        if self.client == "raw":
            port = int(self.base.rsplit(":", 1)[1])
            return await RawHttp("127.0.0.1", port, {"Authorization": f"Bearer {token}"}).open()
        return httpx.AsyncClient(base_url=self.base, timeout=60.0, headers={"Authorization": f"Bearer {token}"},
                                 limits=httpx.Limits(max_connections=1, max_keepalive_connections=1))

    async def _call(self, conn: Any, method: str, path: str, body: object = None) -> tuple[int, dict[str, Any]]:
        if self.client == "raw":
            return await conn.request(method, path, body)  # type: ignore[no-any-return]
        r = await conn.request(method, path, json=body)
        return r.status_code, (r.json() if r.content else {})

    async def _run(self, op: str, clients: int, seconds: float, acks: Acks, seed: int) -> Cell:
        cell = Cell(self.name, op, clients)
        tool = "memory_save" if op == "save" else "memory_search"
        conns = [await self._connect(tok) for tok, _ in self.tokens[op][:clients]]
        try:
            sids = []
            for c in conns:  # sessions started before the clock, one per client
                status, out = await self._call(c, "POST", "/v1/sessions")
                if status != 201:
                    raise RuntimeError(f"POST /v1/sessions answered {status}: {out}")
                sids.append(out["session_id"])
            deadline = time.monotonic() + seconds

            async def client(i: int) -> None:
                rng = random.Random(seed * 1000 + i)
                c, sid, user = conns[i], sids[i], self.tokens[op][i][1]
                url = f"/v1/sessions/{sid}/tools/{tool}"
                n = 0
                while time.monotonic() < deadline:
                    body = ({"content": episode(rng, note(seed, n)), "kind": "episode"} if op == "save"
                            else {"query": query(rng), "k": 5})
                    t = time.perf_counter_ns()
                    status, out = await self._call(c, "POST", url, body)
                    took = time.perf_counter_ns() - t
                    n += 1
                    if status != 200:
                        _note(cell, f"{status} {out.get('code', '?')}")
                        continue
                    result = out["result"]
                    if op == "save":
                        if result.get("status") not in self.accept:
                            _note(cell, str(result.get("status")))
                            continue
                        acks.add(user, result["id"])
                    cell.ns.append(took)

            t0 = time.monotonic()
            clock = CpuClock(self.server_pid)
            await within(seconds + self.grace, f"{self.name} {op} at {clients} clients",
                         *(client(i) for i in range(clients)))
            cell.wall_s = time.monotonic() - t0
            clock.stop(cell)
            cell.load = os.getloadavg()[0]
            for c, sid in zip(conns, sids, strict=True):
                await self._call(c, "DELETE", f"/v1/sessions/{sid}")
        finally:
            for c in conns:
                await c.aclose()
        return cell


# --- the MCP sides: the official client over streamable HTTP (/mcp) and over stdio ------------------------------


class _McpSide:
    """What both MCP sides share: per client, open a ``ClientSession`` (``_session``), make one untimed first call
    (reported apart as ``first_ns``), wait until every client is ready, then call for ``seconds``. Saves are held
    for review (``status: "review"``): acknowledged and stored, never served."""

    name = ""
    prefix = ""
    grace = 120.0
    server_pid: int | None = None  # the process serving every client (MCP HTTP), if one

    def __init__(self, save_tokens: Sequence[tuple[str, str]], search_tokens: Sequence[tuple[str, str]]) -> None:
        self.tokens = {"save": save_tokens, "search": search_tokens}

    def _session(self, token: str) -> contextlib.AbstractAsyncContextManager[Any]:
        raise NotImplementedError

    def run(self, op: str, clients: int, seconds: float, acks: Acks, seed: int) -> Cell:
        return asyncio.run(self._run(op, clients, seconds, acks, seed))

    async def _run(self, op: str, clients: int, seconds: float, acks: Acks, seed: int) -> Cell:
        cell = Cell(self.name, op, clients)
        tool = "memory_save" if op == "save" else "memory_search"
        ready, go, finished = [0], asyncio.Event(), [0.0]
        all_ready = asyncio.Event()
        deadline = [0.0]

        async def call(session: Any, body: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
            r = await session.call_tool(tool, body)
            out = json.loads(r.content[0].text) if r.content else {}
            return bool(r.is_error), out

        async def client(i: int) -> None:
            tok, user = self.tokens[op][i]
            rng = random.Random(seed * 1000 + i)
            async with self._session(tok) as session:
                # one untimed call first: the server starts the token's session (over stdio, a fresh process
                # also loads its modules and the scope's search index)
                body = ({"content": episode(rng, note(seed, 999_999)), "kind": "episode"} if op == "save"
                        else {"query": query(rng), "k": 5})
                t = time.perf_counter_ns()
                failed, first = await call(session, body)
                cell.first_ns.append(time.perf_counter_ns() - t)
                if op == "save" and not failed and first.get("status") in ("accepted", "review"):
                    acks.add(user, first["id"])
                ready[0] += 1
                if ready[0] == clients:
                    all_ready.set()
                await go.wait()
                n = 0
                while time.monotonic() < deadline[0]:
                    body = ({"content": episode(rng, note(seed, n)), "kind": "episode"} if op == "save"
                            else {"query": query(rng), "k": 5})
                    t = time.perf_counter_ns()
                    failed, out = await call(session, body)
                    took = time.perf_counter_ns() - t
                    n += 1
                    if failed:
                        _note(cell, str(out.get("error") or out.get("status") or "error"))
                        continue
                    if op == "save":
                        if out.get("status") not in ("accepted", "review"):
                            _note(cell, str(out.get("status")))
                            continue
                        acks.add(user, out["id"])
                    cell.ns.append(took)
                finished[0] = max(finished[0], time.monotonic())

        tasks = [asyncio.create_task(client(i)) for i in range(clients)]
        try:
            waiter = asyncio.create_task(all_ready.wait())
            await asyncio.wait([waiter, *tasks], timeout=self.grace, return_when=asyncio.FIRST_COMPLETED)
            if not all_ready.is_set():  # a client failed, or not all were ready in time
                waiter.cancel()
                failed = [t for t in tasks if t.done() and t.exception() is not None]
                raise RuntimeError(f"{self.name}: {ready[0]} of {clients} clients ready within {self.grace:.0f} s"
                                   + (f"; first failure: {failed[0].exception()!r}" if failed else ""))
            deadline[0] = time.monotonic() + seconds
            t0 = time.monotonic()
            clock = CpuClock(self.server_pid)
            go.set()
            await within(seconds + self.grace, f"{self.name} {op} at {clients} clients", *tasks)
            clock.stop(cell)  # the sessions' closing (after their last call) is not in it
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        cell.wall_s = finished[0] - t0  # until the last call returned, not until the sessions closed
        cell.load = os.getloadavg()[0]
        return cell


class McpHttpSide(_McpSide):
    """``/mcp`` of ``memwarden serve`` with the official MCP client: ``streamable_http_client`` over an httpx2
    client carrying the agent token, ``ClientSession.discover`` (protocol 2026-07-28: stateless, no initialize
    handshake), then ``call_tool``; one client and one token per caller, so one server-side session each."""

    name = "MCP HTTP (official client)"
    prefix = "mcph-save-"

    def __init__(self, served: Served, save_tokens: Sequence[tuple[str, str]],
                 search_tokens: Sequence[tuple[str, str]], grace: float = 120.0) -> None:
        super().__init__(save_tokens, search_tokens)
        self.url, self.server_pid, self.grace = f"{served.base}/mcp", served.pid, grace

    @contextlib.asynccontextmanager
    async def _session(self, token: str) -> Any:
        import httpx2
        from mcp import ClientSession
        from mcp.client.streamable_http import streamable_http_client

        async with (httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http,
                    streamable_http_client(self.url, http_client=http) as (read, write),
                    ClientSession(read, write) as session):
            await session.discover()
            yield session


class McpStdioSide(_McpSide):
    """``memwarden mcp`` over stdio with the official MCP client: one server process (and so one session) per
    client, identity from ``$MEMWARDEN_TOKEN``, started and initialized before the clock."""

    name = "MCP stdio (1 process/client)"
    prefix = "mcp-save-"

    def __init__(self, env: dict[str, str], db: Path, save_tokens: Sequence[tuple[str, str]],
                 search_tokens: Sequence[tuple[str, str]], grace: float = 120.0) -> None:
        super().__init__(save_tokens, search_tokens)
        self.env, self.db, self.grace = env, db, grace

    @contextlib.asynccontextmanager
    async def _session(self, token: str) -> Any:
        from mcp import ClientSession
        from mcp.client.stdio import StdioServerParameters, stdio_client

        env = {**self.env, "MEMWARDEN_TOKEN": token, "MEMWARDEN_URL": str(self.db)}
        params = StdioServerParameters(command=sys.executable, args=["-m", "memwarden", "mcp"], env=env)
        with open(os.devnull, "w") as errlog:
            async with (stdio_client(params, errlog=errlog) as (read, write),
                        ClientSession(read, write) as session):
                await session.initialize()
                yield session


@dataclass(frozen=True)
class Served:
    base: str  # http://127.0.0.1:<port>
    pid: int


@contextlib.contextmanager
def server(db: Path, env: dict[str, str], log: Path) -> Iterator[Served]:
    """The real ``memwarden serve`` on a free loopback port; stopped with SIGINT (graceful), killed if stuck."""
    port = free_port()
    exe = Path(sys.executable).with_name("memwarden")
    cmd = [str(exe) if exe.exists() else sys.executable, *([] if exe.exists() else ["-m", "memwarden"]),
           "serve", "--db", str(db), "--host", "127.0.0.1", "--port", str(port), "--write-rate", str(WRITE_RATE)]
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT)
        base = f"http://127.0.0.1:{port}"
        try:
            until = time.monotonic() + 60
            while True:
                if proc.poll() is not None:
                    raise RuntimeError(f"memwarden serve exited with {proc.returncode}: {log.read_text()[-2000:]}")
                try:
                    if httpx.get(f"{base}/healthz", timeout=1.0).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.monotonic() > until:
                    raise RuntimeError("memwarden serve did not answer /healthz within 60 s")
                time.sleep(0.1)
            yield Served(base, proc.pid)
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
                try:
                    proc.wait(timeout=40)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


def agent_token(service: MemoryService, user: str, name: str, *, reports: bool = True) -> tuple[str, str]:
    """``(secret, user)`` of a new agent token bound to ``(TENANT, user, "agent")`` — the one place the benchmark
    makes tokens (``memwarden token create`` calls the same function). ``reports``: the host-reports-ingest
    profile (REST: an application that reports its ingest, so its saves are accepted); the MCP sides' save tokens
    have none, as an MCP host reports nothing, so their saves are held for review."""
    return auth.create_token(service, "agent", TENANT, user=user, agent="agent", name=name,
                             host_reports_ingest=reports)[0], user


# --- diagnosis: where the server's time goes (one client, in-process variants) ----------------------------------


def diagnose(service: MemoryService, base: str, save_token: tuple[str, str], search_token: tuple[str, str],
             n: int) -> str:
    """One client, ``n`` saves and ``n`` searches of each variant, interleaved call by call: the library call,
    ``auth.authenticate`` alone (what every request does first), ``GET /healthz`` (a route that does nothing: the
    fixed cost of a client + the HTTP stack) in process and over loopback with either client, the REST app called
    in this process through httpx's ASGI transport (FastAPI, pydantic, auth, the limiter, the session lock, JSON;
    no socket, no uvicorn), the real server over loopback with either client, and MCP HTTP with the official
    client. For /healthz the "save"/"search" columns are only which call it was interleaved with."""
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    from memwarden import rest

    app = rest.create_app(service, rest.ServerConfig(write_rate=WRITE_RATE))
    port = int(base.rsplit(":", 1)[1])
    variants = ("library", "auth.authenticate", "GET /healthz, in process (ASGI)",
                "GET /healthz, loopback (raw HTTP/1.1)", "GET /healthz, loopback (httpx)",
                "REST app in process (ASGI)", "REST server, loopback (raw HTTP/1.1)", "REST server, loopback (httpx)",
                "MCP HTTP server (official client)")
    times: dict[tuple[str, str], list[int]] = {(v, op): [] for v in variants for op in ("save", "search")}
    held: set[str] = set()

    async def go() -> None:
        rng = random.Random(7)
        hdr = {op: {"Authorization": f"Bearer {tok}"} for op, (tok, _u) in (("save", save_token),
                                                                              ("search", search_token))}
        async with contextlib.AsyncExitStack() as stack:
            clients: dict[tuple[str, str], Any] = {}
            for op in ("save", "search"):
                asgi = await stack.enter_async_context(httpx.AsyncClient(
                    transport=httpx.ASGITransport(app=app), base_url="http://asgi", headers=hdr[op]))
                live = await stack.enter_async_context(httpx.AsyncClient(base_url=base, headers=hdr[op]))
                raw = await RawHttp("127.0.0.1", port, hdr[op]).open()
                stack.push_async_callback(raw.aclose)
                http = await stack.enter_async_context(httpx2.AsyncClient(headers=hdr[op], timeout=60))
                read, write = await stack.enter_async_context(streamable_http_client(f"{base}/mcp", http_client=http))
                mcp = await stack.enter_async_context(ClientSession(read, write))
                await mcp.discover()
                sids = [(await c.post("/v1/sessions")).json()["session_id"] for c in (asgi, live)]
                sids.append((await raw.request("POST", "/v1/sessions"))[1]["session_id"])
                clients.update({(op, "asgi"): (asgi, sids[0]), (op, "httpx"): (live, sids[1]),
                                (op, "raw"): (raw, sids[2]), (op, "mcp"): (mcp, "")})
            lib = {op: stack.enter_context(service.session(Scope(TENANT, who[1], "agent")))
                   for op, who in (("save", save_token), ("search", search_token))}
            for i in range(2 * n + 20):  # the first 10 of each: untimed (the MCP session starts, caches warm)
                op = "save" if i % 2 == 0 else "search"
                keep = i >= 20
                tool = "memory_save" if op == "save" else "memory_search"
                body = ({"content": episode(rng, 10**6 + i), "kind": "episode"} if op == "save"
                        else {"query": query(rng), "k": 5})

                def took(name: str, t: int, op: str = op, keep: bool = keep) -> None:
                    if keep:
                        times[(name, op)].append(time.perf_counter_ns() - t)

                t = time.perf_counter_ns()
                if op == "save":
                    lib[op].save(str(body["content"]), kind="episode")
                else:
                    lib[op].search(str(body["query"]), k=5)
                took("library", t)
                t = time.perf_counter_ns()
                auth.authenticate(service, (save_token if op == "save" else search_token)[0])
                took("auth.authenticate", t)
                for name, key in (("GET /healthz, in process (ASGI)", "asgi"), ("GET /healthz, loopback (httpx)",
                                                                                  "httpx")):
                    c = clients[(op, key)][0]
                    t = time.perf_counter_ns()
                    r = await c.get("/healthz")
                    took(name, t)
                    r.raise_for_status()
                raw = clients[(op, "raw")][0]
                t = time.perf_counter_ns()
                status, _ = await raw.request("GET", "/healthz")
                took("GET /healthz, loopback (raw HTTP/1.1)", t)
                assert status == 200, status
                for name, key in (("REST app in process (ASGI)", "asgi"), ("REST server, loopback (httpx)", "httpx")):
                    c, sid = clients[(op, key)]
                    t = time.perf_counter_ns()
                    r = await c.post(f"/v1/sessions/{sid}/tools/{tool}", json=body)
                    took(name, t)
                    r.raise_for_status()
                raw, sid = clients[(op, "raw")]
                t = time.perf_counter_ns()
                status, out = await raw.request("POST", f"/v1/sessions/{sid}/tools/{tool}", body)
                took("REST server, loopback (raw HTTP/1.1)", t)
                assert status == 200, (status, out)
                mcp = clients[(op, "mcp")][0]
                t = time.perf_counter_ns()
                res = await mcp.call_tool(tool, body)
                took("MCP HTTP server (official client)", t)
                assert not res.is_error, res
                if op == "save":
                    held.add(json.loads(res.content[0].text)["status"])

    asyncio.run(within(600, "--diagnose", go()))
    rows = []
    for v in variants:
        cells = {op: Cell(v, op, 1, ns) for (name, op), ns in times.items() if name == v}
        rows.append([v, *(f"{cells[op].pct(q):.3f}" for op in ("save", "search") for q in (0.5, 0.95))])
    return "\n".join([f"#### Where a call spends its time (1 client, {n} saves and {n} searches of each variant, "
                      "interleaved call by call; the saves of this part are not in the check above)", "",
                      table(["variant", "save p50 ms", "save p95 ms", "search p50 ms", "search p95 ms"], rows),
                      "", f"(MCP HTTP saves here: status {', '.join(sorted(held))}.)", ""])


# --- the run -----------------------------------------------------------------------------------------------------

SIDES = ("library", "rest", "httpx", "mcp-http", "mcp-stdio")


def preload(service: MemoryService, users: Sequence[str], records: int, seed: int) -> float:
    """``records`` episodes in each scope through ``write_many`` (gate → sign → store → audit per record)."""
    t0 = time.monotonic()
    rng = random.Random(seed)
    for user in users:
        ctx = Context(Scope(TENANT, user, "agent"), session_id=f"preload{user.replace('-', '')}",
                      source_type=SourceType.OPERATOR, actor="operator:bench")
        for start in range(0, records, BATCH):
            items = [{"content": episode(rng, n), "kind": "episode"} for n in range(start, min(records, start + BATCH))]
            bad = [r for r in service.write_many(ctx, items) if not hasattr(r, "status") or r.status != "accepted"]
            if bad:
                raise RuntimeError(f"preload: {len(bad)} writes not accepted, first: {bad[0]!r}")
    return time.monotonic() - t0


def verify(service: MemoryService, acks: Acks, sides: Sequence[Side]) -> tuple[list[list[str]], bool]:
    rows, ok = [], True
    for side in sides:
        users = sorted(u for u in acks.by_user if u.startswith(side.prefix))
        acked = stored = missing = extra = unverified = repeated = 0
        for user in users:
            want = set(acks.by_user[user])
            found = service.operator_rows(TENANT, user, ALL_AGENTS, include_held=True, kind="episode")
            have = {c.id for c in found}
            unverified += sum(not c.ok for c in found)
            acked += len(want)
            repeated += len(acks.by_user[user]) - len(want)  # an id acknowledged twice (a merged near-duplicate)
            stored += len(found)
            missing += len(want - have)
            extra += len(have - want)
        good = missing == 0 and extra == 0 and unverified == 0 and acked == stored
        ok &= good
        if not users:
            continue
        label = side.name + (" (held)" if isinstance(side, _McpSide) else "")
        rows.append([label, str(len(users)), f"{acked:,}", str(repeated), f"{stored:,}", str(missing), str(extra),
                     str(unverified), "PASS" if good else "FAIL"])
    return rows, ok


def run(args: argparse.Namespace, tmp: Path) -> tuple[str, bool]:
    clients = sorted({int(c) for c in args.clients.split(",")})
    wanted = [x.strip() for x in args.sides.split(",") if x.strip()]
    if unknown := set(wanted) - set(SIDES):
        raise SystemExit(f"unknown --sides {', '.join(sorted(unknown))}: choose from {', '.join(SIDES)}")
    mcp_clients = (sorted({int(c) for c in args.mcp_clients.split(",") if c.strip()} & set(clients))
                   if "mcp-stdio" in wanted else [])
    top = max(clients)
    env = dict(os.environ)
    env.update({"XDG_CONFIG_HOME": str(tmp / "config"), "XDG_DATA_HOME": str(tmp / "data"),
                "XDG_STATE_HOME": str(tmp / "state"), "XDG_CACHE_HOME": str(tmp / "cache"),
                "MEMWARDEN_KEY_FILE": str(tmp / "config" / "memwarden" / "key"),
                "MEMWARDEN_ANCHOR_DIR": str(tmp / "config" / "memwarden" / "anchors")})
    env.pop("MEMWARDEN_KEY", None)
    env.pop("MEMWARDEN_URL", None)
    env.pop("MEMWARDEN_TOKEN", None)
    os.environ.clear()
    os.environ.update(env)  # the library side and the server read the same key, anchor and store
    db = tmp / "bench.db"
    load0 = os.getloadavg()
    search_users = [f"search-{i}" for i in range(args.search_scopes)]
    service = memwarden.open(db)
    try:
        preload_s = preload(service, search_users, args.records, args.seed)
        search_tokens = [agent_token(service, search_users[i % len(search_users)], f"search-{i}")
                         for i in range(top)]

        def save_tokens(prefix: str, n: int = top, *, reports: bool = True) -> list[tuple[str, str]]:
            return [agent_token(service, f"{prefix}{i}", f"{prefix}{i}", reports=reports) for i in range(n)]

        acks = Acks()
        cells: list[Cell] = []
        t_run = time.monotonic()
        with server(db, env, tmp / "server.log") as served:
            library = LibrarySide(service, search_users)
            made: dict[str, Side] = {"library": library}
            if "rest" in wanted:
                made["rest"] = RestSide(served, save_tokens("save-"), search_tokens, grace=args.grace)
            if "httpx" in wanted:
                made["httpx"] = RestSide(served, save_tokens("hx-save-"), search_tokens, client="httpx",
                                         grace=args.grace)
            if "mcp-http" in wanted:
                made["mcp-http"] = McpHttpSide(served, save_tokens("mcph-save-", reports=False), search_tokens,
                                               grace=args.grace)
            if mcp_clients:
                made["mcp-stdio"] = McpStdioSide(env, db, save_tokens("mcp-save-", max(mcp_clients), reports=False),
                                                 search_tokens,
                                                 grace=args.grace)
            sides = [made[k] for k in SIDES if k in made and (k in wanted or k == "library")]
            seeds = itertools.count(1)  # every side.run has a seed of its own (texts, queries, note numbers)
            for side in sides:  # warm-up, untimed: imports, caches, connections (MCP stdio warms per cell)
                if isinstance(side, McpStdioSide):
                    continue
                side.run("save", 1, 0.5, acks, seed=next(seeds))  # its saves are acknowledged: checked too
                side.run("search", args.search_scopes, 0.5, acks, seed=next(seeds))  # every scope's index loaded
            k = 0
            for op in ("save", "search"):
                for c in clients:
                    here = [x for x in sides if not isinstance(x, McpStdioSide) or c in mcp_clients]
                    parts: dict[str, list[Cell]] = {x.name: [] for x in here}
                    # Each side's cell is --slices slices, and the sides take turns slice by slice (rotating who
                    # goes first): a change of the machine's load during the cell reaches every side alike. MCP
                    # stdio runs its cell in one piece (its processes start once per cell).
                    for j in range(args.slices):
                        turn = k + j
                        for side in here[turn % len(here):] + here[:turn % len(here)]:
                            whole = isinstance(side, McpStdioSide)
                            if whole and j:
                                continue
                            parts[side.name].append(side.run(op, c, args.seconds / (1 if whole else args.slices),
                                                             acks, seed=next(seeds)))
                    for side in here:
                        cells.append(merge(parts[side.name]))
                        print(f"  {op:6} {c:3} clients  {side.name:28} {len(cells[-1].ns):7,} calls  "
                              f"p50 {cells[-1].pct(0.5):7.2f} ms  load {cells[-1].load:.2f}", file=sys.stderr)
                    k += 1
            diag = ""
            if args.diagnose:
                diag = diagnose(service, served.base, agent_token(service, "diag-save", "diag-save"),
                                search_tokens[0], args.diagnose)
        run_s = time.monotonic() - t_run
        check_rows, stored_ok = verify(service, acks, sides)
    finally:
        service.close()

    def find(side: str, op: str, c: int) -> Cell | None:
        return next((x for x in cells if x.side == side and x.op == op and x.clients == c), None)

    lib_name = LibrarySide.name
    out = ["#### Environment", "",
           table(["", ""], [
               ("machine", f"{os.cpu_count()} CPUs ({cpu_model()}), {platform.system()} {platform.release()}"),
               ("python", platform.python_version()),
               ("versions", f"memwarden {memwarden.__version__}, fastapi {metadata.version('fastapi')}, "
                            f"uvicorn {metadata.version('uvicorn')} ({_uvicorn_impl()}), mcp "
                            f"{metadata.version('mcp')}, httpx {metadata.version('httpx')}"),
               ("store", f"SQLite file in {tmp.parent} (durability=full: WAL, synchronous=FULL), one file for "
                         "every side; the server is a child process"),
               ("run", f"clients={','.join(map(str, clients))}, {args.seconds:g} s per cell in {args.slices} "
                       f"slices (sides take turns slice by slice), {args.records:,} "
                       f"records in each of {args.search_scopes} search scopes (preload {preload_s:.1f} s), "
                       f"cells {run_s:.0f} s"),
               ("server", f"`memwarden serve --write-rate {WRITE_RATE}` (limiter on, never reached; one JSON "
                          "request log line per call to a file, the default)"),
               ("load average (1/5/15 min) before", "/".join(f"{x:.2f}" for x in load0)),
               ("load average after", "/".join(f"{x:.2f}" for x in os.getloadavg())),
           ], [False, False]), ""]
    for op, what in (("save", "`memory_save` of a new episode (durable: one fsync'd commit, group commit across "
                              "clients)"),
                     ("search", f"`memory_search`, k=5, scope of {args.records:,} records")):
        rows = []
        for c in clients:
            for side in sides:
                x = find(side.name, op, c)
                if x is None:
                    continue
                errs = ", ".join(f"{k} ×{v}" for k, v in sorted(x.errors.items())) or "0"
                rows.append([side.name, str(c), f"{len(x.ns):,}", f"{x.pct(0.5):.2f}", f"{x.pct(0.95):.2f}",
                             f"{x.pct(0.99):.2f}", f"{x.rate:,.0f}", x.cpu_ms("client"), x.cpu_ms("server"), errs,
                             f"{x.load:.2f}"])
        out += [f"#### {op}: {what}", "",
                table(["side", "clients", "calls", "p50 ms", "p95 ms", "p99 ms", "calls/s", "caller CPU ms/call",
                       "server CPU ms/call", "errors", "load 1m"],
                      rows, [False, True, True, True, True, True, True, True, True, False, True]), ""]
        for side in sides:
            firsts = [x for x in cells if x.op == op and x.side == side.name and x.first_ns]
            if firsts:
                out += [f"First call of each {side.name} client (untimed, before the clock): " + "; ".join(
                    f"{x.clients} clients: median {Cell(x.side, op, x.clients, x.first_ns).pct(0.5):,.1f} ms, "
                    f"max {max(x.first_ns) / 1e6:,.1f} ms" for x in firsts) + ".", ""]
    if diag:
        out += [diag]
    out += ["#### Every acknowledged save is in the store (after the server stopped)", "",
            table(["side", "scopes", "acknowledged ids", "acknowledged again", "stored", "missing", "unacknowledged",
                   "unverified", "result"], check_rows, [False, True, True, True, True, True, True, True, False]), ""]

    targets: list[list[str]] = []
    ok = stored_ok
    rest_name = made["rest"].name if "rest" in made else None
    search16 = find(rest_name, "search", TARGET_CLIENTS) if rest_name else None
    if search16 is not None and args.records >= 10_000:
        p95 = search16.pct(0.95)
        good = p95 <= MAX_SEARCH_P95_MS
        ok &= good
        targets.append([f"REST search p95, {TARGET_CLIENTS} clients, {args.records:,} records per scope",
                        f"≤ {MAX_SEARCH_P95_MS:.0f} ms", f"{p95:.2f} ms", "PASS" if good else "FAIL"])
    else:
        targets.append([f"REST search p95, {TARGET_CLIENTS} clients, 10k records per scope",
                        f"≤ {MAX_SEARCH_P95_MS:.0f} ms",
                        "not measured (needs --sides with rest, --clients with 16, --records ≥ 10000)", "—"])
    lib1 = find(lib_name, "save", 1)
    rest1 = find(rest_name, "save", 1) if rest_name else None
    if lib1 is not None and rest1 is not None:
        extra = rest1.pct(0.5) - lib1.pct(0.5)
        good = extra <= MAX_SAVE_OVERHEAD_MS
        ok &= good
        targets.append(["server's added median on a save (REST − library, 1 client)",
                        f"≤ {MAX_SAVE_OVERHEAD_MS} ms", f"{extra:+.2f} ms", "PASS" if good else "FAIL"])
    targets.append(["every acknowledged save stored (count and ids)", "all", "see above",
                    "PASS" if stored_ok else "FAIL"])
    out += ["#### Targets (issue 13, acceptance 5; REST = the raw HTTP/1.1 client)", "",
            table(["target", "goal", "measured", "result"], targets, [False, True, True, False])]
    for side in sides:  # the same two figures for the other sides, for reading (not targets)
        if side.name in (lib_name, rest_name):
            continue
        x16, x1 = find(side.name, "search", TARGET_CLIENTS), find(side.name, "save", 1)
        bits = []
        if x16 is not None:
            bits.append(f"search p95 at {TARGET_CLIENTS} clients {x16.pct(0.95):.2f} ms")
        if x1 is not None and lib1 is not None:
            bits.append(f"save median at 1 client {x1.pct(0.5) - lib1.pct(0.5):+.2f} ms over the library")
        if bits:
            out += ["", f"{side.name}: " + "; ".join(bits) + "."]
    return "\n".join(out), ok


def _uvicorn_impl() -> str:
    """The HTTP parser and event loop uvicorn's "auto" picks here (what ``memwarden serve`` runs with)."""
    have = {m: importlib.util.find_spec(m) is not None for m in ("httptools", "uvloop")}
    return f"{'httptools' if have['httptools'] else 'h11'} + {'uvloop' if have['uvloop'] else 'asyncio'}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--clients", default="1,16,64", help="concurrent clients per cell, comma-separated")
    p.add_argument("--seconds", type=float, default=5.0, help="duration of each cell")
    p.add_argument("--slices", type=int, default=5,
                   help="each cell runs as this many slices, the sides taking turns slice by slice")
    p.add_argument("--sides", default=",".join(SIDES),
                   help=f"sides to run besides the library, comma-separated, of: {', '.join(SIDES)}")
    p.add_argument("--mcp-clients", default="1,16",
                   help="the concurrencies (of --clients) also run over MCP stdio, one process per client; '' skips")
    p.add_argument("--records", type=int, default=10_000, help="records pre-loaded in each search scope")
    p.add_argument("--search-scopes", type=int, default=4, help="pre-loaded scopes the search clients share")
    p.add_argument("--seed", type=int, default=13)
    p.add_argument("--diagnose", type=int, default=0, metavar="N",
                   help="afterwards, N saves and N searches (1 client) of the library, auth alone, /healthz and "
                        "the app in process (ASGI) and over loopback (raw HTTP/1.1 and httpx), and MCP HTTP, "
                        "interleaved: where a call spends its time")
    p.add_argument("--grace", type=float, default=120.0,
                   help="seconds a cell may run past --seconds (and MCP clients may take to start) before the run "
                        "stops with an error")
    p.add_argument("--dir", default=None, help="where the temporary store goes (a real disk: fsync is free on tmpfs)")
    p.add_argument("--out", default=None, help="also write the tables to this file")
    p.add_argument("--strict", action="store_true", help="exit 1 when a target fails")
    args = p.parse_args(argv)
    try:
        with tempfile.TemporaryDirectory(prefix="memwarden-server-", dir=args.dir) as d:
            report, ok = run(args, Path(d))
    except RuntimeError as exc:
        print(f"bench_server: {exc}", file=sys.stderr)
        return 1
    print(report)
    if args.out:
        Path(args.out).write_text(report + "\n", encoding="utf-8")
    return 1 if args.strict and not ok else 0


if __name__ == "__main__":
    sys.exit(main())
