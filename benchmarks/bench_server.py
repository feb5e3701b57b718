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
  - **REST** — ``POST /v1/sessions/{id}/tools/{name}`` over loopback with httpx (asyncio), one agent token, one
    session and one keep-alive connection per client;
  - **MCP stdio** (at the concurrencies of ``--mcp-clients``) — ``memwarden mcp`` with the official MCP client,
    one server process per client (the stdio transport serves one client), identity from ``$MEMWARDEN_TOKEN``.
    Its saves are held for review (nobody reports the host's ingest to it): still the one write path, stored and
    checked, but a different outcome from the other sides' accepted saves.

  The cells of one (operation, concurrency) run back to back, rotating which side goes first.
  Each save client writes to a scope of its own (its token's); search clients share the pre-loaded scopes
  round-robin (tokens of the same scope), so every search reads a scope of ``--records`` records.
* afterwards the server is stopped (SIGINT: graceful) and every acknowledged save — REST and library — is looked
  up in the store: the count per scope and the set of ids must match exactly.

Latency is per call from the caller's side (``perf_counter_ns`` around the call: for REST the whole HTTP round
trip, queueing in the client's event loop included); throughput is completed calls per second of the cell's wall
time. MCP over streamable HTTP is not measured yet: a side is a class with one ``run`` method (see
:class:`Side`), so it can be added next to REST.

    .venv/bin/python benchmarks/bench_server.py [--clients 1,16,64] [--seconds 5] [--records 10000]
                                               [--search-scopes 4] [--mcp-clients 1,16] [--diagnose N]
                                               [--out FILE] [--strict]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
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
from typing import Protocol

try:
    import httpx
except ImportError:  # pragma: no cover - the dev/server extra is missing
    sys.exit("httpx is not installed: .venv/bin/pip install -e '.[dev]'")

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

_NAMES = ("Ana", "Ben", "Chloé", "Dmitri", "Esra", "Farid", "Grace", "Hiro", "Ines", "Jonas", "Kemal", "Lena",
          "Mateo", "Nadia", "Oskar", "Priya", "Rosa", "Sven", "Tamar", "Victor", "Wen", "Yusuf")
_TOPICS = ("flaky integration tests", "a slow dashboard query", "the quarterly roadmap", "the on-call rotation",
           "a failed deploy", "the migration plan", "customer churn numbers", "API rate limits",
           "the staging database", "release notes", "a memory leak in the worker", "the pricing experiment",
           "invoice rounding", "the search ranking", "backup restores", "the mobile login flow")
_PROJECTS = ("billing-api", "search revamp", "mobile onboarding", "data warehouse", "auth service",
             "invoice exporter", "support dashboard", "pricing page", "nightly ETL job", "notification service")
_OUTCOMES = ("it was fixed by pinning the dependency", "the user agreed to revisit it next sprint",
             "we shipped a patch the same day", "the root cause was a missing index",
             "the decision was to keep the current design", "a follow-up ticket was opened",
             "it turned out to be a timezone bug", "we rolled back and retried an hour later")


def episode(rng: random.Random, n: int) -> str:
    return (f"{rng.choice(_NAMES)} and the user discussed {rng.choice(_TOPICS)} on the {rng.choice(_PROJECTS)} "
            f"(note {n}); {rng.choice(_OUTCOMES)}.")


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


class Side(Protocol):
    """One way of reaching memwarden. ``run`` drives ``clients`` concurrent callers of ``op`` (``save`` or
    ``search``) for ``seconds`` and returns the cell; every acknowledged save goes into ``acks``. An MCP side
    (stdio: one ``memwarden mcp`` process per client; streamable HTTP at ``/mcp``) implements the same method."""

    name: str

    def run(self, op: str, clients: int, seconds: float, acks: Acks, seed: int) -> Cell: ...


# --- the library side: threads in this process ---------------------------------------------------------------


class LibrarySide:
    name = "library (in process)"

    def __init__(self, service: MemoryService, search_users: Sequence[str]) -> None:
        self.service, self.search_users = service, search_users

    def run(self, op: str, clients: int, seconds: float, acks: Acks, seed: int) -> Cell:
        cell = Cell(self.name, op, clients)
        lock = threading.Lock()
        ready = threading.Barrier(clients + 1)
        deadline = [0.0]

        def client(i: int) -> None:
            rng = random.Random(seed * 1000 + i)
            user = f"lib-save-{i}" if op == "save" else self.search_users[i % len(self.search_users)]
            mine: list[int] = []
            errors: dict[str, int] = {}
            with self.service.session(Scope(TENANT, user, "agent")) as s:
                ready.wait()
                n = 0
                while time.monotonic() < deadline[0]:
                    t = time.perf_counter_ns()
                    try:
                        if op == "save":
                            res = s.save(episode(rng, n), kind="episode")
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
        ready.wait()
        for t in threads:
            t.join()
        cell.wall_s = time.monotonic() - t0
        cell.load = os.getloadavg()[0]
        return cell


# --- the REST side: the real server in a child process, httpx over loopback ------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RestSide:
    name = "REST (httpx, loopback)"

    def __init__(self, base: str, save_tokens: Sequence[tuple[str, str]], search_tokens: Sequence[tuple[str, str]]
                 ) -> None:
        self.base = base
        self.tokens = {"save": save_tokens, "search": search_tokens}  # (token, user) per client

    def run(self, op: str, clients: int, seconds: float, acks: Acks, seed: int) -> Cell:
        return asyncio.run(self._run(op, clients, seconds, acks, seed))

    async def _run(self, op: str, clients: int, seconds: float, acks: Acks, seed: int) -> Cell:
        cell = Cell(self.name, op, clients)
        tool = "memory_save" if op == "save" else "memory_search"
        conns = [httpx.AsyncClient(base_url=self.base, timeout=60.0,
                                   headers={"Authorization": f"Bearer {tok}"},
                                   limits=httpx.Limits(max_connections=1, max_keepalive_connections=1))
                 for tok, _ in self.tokens[op][:clients]]
        try:
            sids = []
            for c in conns:  # sessions started before the clock, one per client
                r = await c.post("/v1/sessions")
                r.raise_for_status()
                sids.append(r.json()["session_id"])
            deadline = time.monotonic() + seconds

            async def client(i: int) -> None:
                rng = random.Random(seed * 1000 + i)
                c, sid, user = conns[i], sids[i], self.tokens[op][i][1]
                url = f"/v1/sessions/{sid}/tools/{tool}"
                n = 0
                while time.monotonic() < deadline:
                    body = ({"content": episode(rng, n), "kind": "episode"} if op == "save"
                            else {"query": query(rng), "k": 5})
                    t = time.perf_counter_ns()
                    r = await c.post(url, json=body)
                    took = time.perf_counter_ns() - t
                    n += 1
                    if r.status_code != 200:
                        code = f"{r.status_code} {r.json().get('code', '?')}"
                        cell.errors[code] = cell.errors.get(code, 0) + 1
                        continue
                    result = r.json()["result"]
                    if op == "save":
                        if result.get("status") != "accepted":
                            cell.errors[str(result.get("status"))] = cell.errors.get(str(result.get("status")), 0) + 1
                            continue
                        acks.add(user, result["id"])
                    cell.ns.append(took)

            t0 = time.monotonic()
            await asyncio.gather(*(client(i) for i in range(clients)))
            cell.wall_s = time.monotonic() - t0
            cell.load = os.getloadavg()[0]
            for c, sid in zip(conns, sids, strict=True):
                await c.delete(f"/v1/sessions/{sid}")
        finally:
            for c in conns:
                await c.aclose()
        return cell


class McpStdioSide:
    """``memwarden mcp`` over stdio with the official MCP client: one server process (and so one session) per
    client, identity from ``$MEMWARDEN_TOKEN``, started before the clock. Nobody reports the host's ingest to it,
    so every save is held for review (``status: "review"``): acknowledged and stored, never served."""

    name = "MCP stdio (1 process/client)"

    def __init__(self, env: dict[str, str], db: Path, save_tokens: Sequence[tuple[str, str]],
                 search_tokens: Sequence[tuple[str, str]]) -> None:
        self.env, self.db = env, db
        self.tokens = {"save": save_tokens, "search": search_tokens}

    def run(self, op: str, clients: int, seconds: float, acks: Acks, seed: int) -> Cell:
        return asyncio.run(self._run(op, clients, seconds, acks, seed))

    async def _run(self, op: str, clients: int, seconds: float, acks: Acks, seed: int) -> Cell:
        import json

        from mcp import ClientSession
        from mcp.client.stdio import StdioServerParameters, stdio_client

        cell = Cell(self.name, op, clients)
        tool = "memory_save" if op == "save" else "memory_search"
        ready, go, finished = [0], asyncio.Event(), [0.0]
        all_ready = asyncio.Event()
        deadline = [0.0]

        async def client(i: int) -> None:
            tok, user = self.tokens[op][i]
            env = {**self.env, "MEMWARDEN_TOKEN": tok, "MEMWARDEN_URL": str(self.db)}
            params = StdioServerParameters(command=sys.executable, args=["-m", "memwarden", "mcp"], env=env)
            rng = random.Random(seed * 1000 + i)
            with open(os.devnull, "w") as errlog:
                async with (stdio_client(params, errlog=errlog) as (read, write),
                            ClientSession(read, write) as session):
                    await session.initialize()
                    # one untimed call first: a fresh process loads its modules and the scope's search index on
                    # its first call (its time is reported apart, as ``first_ns``)
                    body = ({"content": episode(rng, -1), "kind": "episode"} if op == "save"
                            else {"query": query(rng), "k": 5})
                    t = time.perf_counter_ns()
                    r = await session.call_tool(tool, body)
                    cell.first_ns.append(time.perf_counter_ns() - t)
                    first = json.loads(r.content[0].text) if r.content else {}
                    if op == "save" and not r.is_error and first.get("status") in ("accepted", "review"):
                        acks.add(user, first["id"])
                    ready[0] += 1
                    if ready[0] == clients:
                        all_ready.set()
                    await go.wait()
                    n = 0
                    while time.monotonic() < deadline[0]:
                        body = ({"content": episode(rng, n), "kind": "episode"} if op == "save"
                                else {"query": query(rng), "k": 5})
                        t = time.perf_counter_ns()
                        r = await session.call_tool(tool, body)
                        took = time.perf_counter_ns() - t
                        n += 1
                        out = json.loads(r.content[0].text) if r.content else {}
                        if r.is_error:
                            code = str(out.get("error") or out.get("status") or "error")
                            cell.errors[code] = cell.errors.get(code, 0) + 1
                            continue
                        if op == "save":
                            if out.get("status") not in ("accepted", "review"):
                                code = str(out.get("status"))
                                cell.errors[code] = cell.errors.get(code, 0) + 1
                                continue
                            acks.add(user, out["id"])
                        cell.ns.append(took)
                    finished[0] = max(finished[0], time.monotonic())

        tasks = [asyncio.create_task(client(i)) for i in range(clients)]
        waiter = asyncio.create_task(all_ready.wait())
        await asyncio.wait([waiter, *tasks], return_when=asyncio.FIRST_COMPLETED)
        if not all_ready.is_set():  # a client failed before it was ready
            go.set()
            await asyncio.gather(*tasks)
            raise RuntimeError("an MCP client ended before it was ready")
        deadline[0] = time.monotonic() + seconds
        t0 = time.monotonic()
        go.set()
        await asyncio.gather(*tasks)
        cell.wall_s = finished[0] - t0  # until the last call returned, not until the processes exited
        cell.load = os.getloadavg()[0]
        return cell


@contextlib.contextmanager
def server(db: Path, env: dict[str, str], log: Path) -> Iterator[str]:
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
            yield base
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
                try:
                    proc.wait(timeout=40)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


# --- diagnosis: where the server's time goes (one client, in-process variants) ----------------------------------


def diagnose(service: MemoryService, base: str, token: tuple[str, str], n: int) -> str:
    """One client, ``n`` saves and ``n`` searches of each variant, interleaved call by call: the library call,
    ``auth.authenticate`` alone (what every request does first), ``GET /healthz`` (a route that does nothing: the
    fixed cost of httpx + the HTTP stack + a thread-pool hop) in process and over loopback, the REST app called
    in this process through httpx's ASGI transport (FastAPI, pydantic, auth, the limiter, the session lock, JSON;
    no socket, no uvicorn), and the real server over loopback. For /healthz the "save"/"search" columns are only
    which call it was interleaved with."""
    from memwarden import rest

    app = rest.create_app(service, rest.ServerConfig(write_rate=WRITE_RATE))
    tok, user = token
    variants = ("library", "auth.authenticate", "GET /healthz in process (ASGI)", "GET /healthz over loopback",
                "REST app in process (ASGI)", "REST server (loopback)")
    times: dict[tuple[str, str], list[int]] = {(v, op): [] for v in variants for op in ("save", "search")}

    async def go() -> None:
        rng = random.Random(7)
        hdr = {"Authorization": f"Bearer {tok}"}
        async with (httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://asgi",
                                      headers=hdr) as asgi,
                    httpx.AsyncClient(base_url=base, headers=hdr) as live):
            sids = [(await c.post("/v1/sessions")).json()["session_id"] for c in (asgi, live)]
            with service.session(Scope(TENANT, user, "agent")) as s:
                for i in range(2 * n):
                    op = "save" if i % 2 == 0 else "search"
                    tool = "memory_save" if op == "save" else "memory_search"
                    body = ({"content": episode(rng, 10**6 + i), "kind": "episode"} if op == "save"
                            else {"query": query(rng), "k": 5})
                    t = time.perf_counter_ns()
                    if op == "save":
                        s.save(str(body["content"]), kind="episode")
                    else:
                        s.search(str(body["query"]), k=5)
                    times[("library", op)].append(time.perf_counter_ns() - t)
                    t = time.perf_counter_ns()
                    auth.authenticate(service, tok)
                    times[("auth.authenticate", op)].append(time.perf_counter_ns() - t)
                    for name, c in (("GET /healthz in process (ASGI)", asgi), ("GET /healthz over loopback", live)):
                        t = time.perf_counter_ns()
                        r = await c.get("/healthz")
                        times[(name, op)].append(time.perf_counter_ns() - t)
                        r.raise_for_status()
                    for name, c, sid in (("REST app in process (ASGI)", asgi, sids[0]),
                                         ("REST server (loopback)", live, sids[1])):
                        t = time.perf_counter_ns()
                        r = await c.post(f"/v1/sessions/{sid}/tools/{tool}", json=body)
                        times[(name, op)].append(time.perf_counter_ns() - t)
                        r.raise_for_status()
            for c, sid in zip((asgi, live), sids, strict=True):
                await c.delete(f"/v1/sessions/{sid}")

    asyncio.run(go())
    rows = []
    for v in variants:
        cells = {op: Cell(v, op, 1, ns) for (name, op), ns in times.items() if name == v}
        rows.append([v, *(f"{cells[op].pct(q):.3f}" for op in ("save", "search") for q in (0.5, 0.95))])
    return "\n".join([f"#### Where a REST call spends its time (1 client, {n} saves and {n} searches each, "
                      "interleaved; the saves of this part are not in the check above)", "",
                      table(["variant", "save p50 ms", "save p95 ms", "search p50 ms", "search p95 ms"], rows),
                      ""])


# --- the run -----------------------------------------------------------------------------------------------------


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


def verify(service: MemoryService, acks: Acks) -> tuple[list[list[str]], bool]:
    rows, ok = [], True
    for prefix, label in (("save-", "REST"), ("lib-save-", "library"), ("mcp-save-", "MCP stdio (held)")):
        users = sorted(u for u in acks.by_user if u.startswith(prefix))
        acked = stored = missing = extra = unverified = 0
        for user in users:
            want = set(acks.by_user[user])
            found = service.operator_rows(TENANT, user, ALL_AGENTS, include_held=True, kind="episode")
            have = {c.id for c in found}
            unverified += sum(not c.ok for c in found)
            acked += len(acks.by_user[user])
            stored += len(found)
            missing += len(want - have)
            extra += len(have - want)
        good = missing == 0 and extra == 0 and unverified == 0 and acked == stored
        ok &= good
        if not users:
            continue
        rows.append([label, str(len(users)), f"{acked:,}", f"{stored:,}", str(missing), str(extra), str(unverified),
                     "PASS" if good else "FAIL"])
    return rows, ok


def run(args: argparse.Namespace, tmp: Path) -> tuple[str, bool]:
    clients = sorted({int(c) for c in args.clients.split(",")})
    mcp_clients = sorted({int(c) for c in args.mcp_clients.split(",") if c.strip()} & set(clients))
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
        # REST: an application that reports its sessions' ingest (issue 13: without the profile, saves are held)
        save_tokens = [(auth.create_token(service, "agent", TENANT, user=f"save-{i}", agent="agent",
                                          name=f"save-{i}", host_reports_ingest=True)[0], f"save-{i}")
                       for i in range(top)]
        search_tokens = [(auth.create_token(service, "agent", TENANT, user=search_users[i % len(search_users)],
                                            agent="agent", name=f"search-{i}", host_reports_ingest=True)[0],
                          search_users[i % len(search_users)]) for i in range(top)]
        mcp_save_tokens = [(auth.create_token(service, "agent", TENANT, user=f"mcp-save-{i}", agent="agent",
                                              name=f"mcp-save-{i}")[0], f"mcp-save-{i}")
                           for i in range(max(mcp_clients, default=0))]
        acks = Acks()
        cells: list[Cell] = []
        t_run = time.monotonic()
        with server(db, env, tmp / "server.log") as base:
            library: Side = LibrarySide(service, search_users)
            rest: Side = RestSide(base, save_tokens, search_tokens)
            mcp: Side = McpStdioSide(env, db, mcp_save_tokens, search_tokens)
            for side in (library, rest):  # warm-up, untimed: imports, caches, connections
                side.run("save", 1, 0.5, acks, seed=99)  # its saves are acknowledged: checked too
                side.run("search", args.search_scopes, 0.5, acks, seed=99)  # every scope's index loaded
            k = 0
            for op in ("save", "search"):
                for c in clients:
                    order = [library, rest] if k % 2 == 0 else [rest, library]
                    if c in mcp_clients:
                        order.insert(k % 3 if k % 3 < 2 else 2, mcp)
                    for side in order:
                        cells.append(side.run(op, c, args.seconds, acks, seed=k))
                        print(f"  {op:6} {c:3} clients  {side.name:24} {len(cells[-1].ns):7,} calls  "
                              f"p50 {cells[-1].pct(0.5):6.2f} ms  load {cells[-1].load:.2f}", file=sys.stderr)
                    k += 1
            diag = diagnose(service, base, search_tokens[0], args.diagnose) if args.diagnose else ""
        run_s = time.monotonic() - t_run
        check_rows, stored_ok = verify(service, acks)
    finally:
        service.close()

    def find(side: str, op: str, c: int) -> Cell:
        return next(x for x in cells if x.side == side and x.op == op and x.clients == c)

    lib_name, rest_name = LibrarySide.name, RestSide.name
    out = ["#### Environment", "",
           table(["", ""], [
               ("machine", f"{os.cpu_count()} CPUs ({cpu_model()}), {platform.system()} {platform.release()}"),
               ("python", platform.python_version()),
               ("versions", f"memwarden {memwarden.__version__}, fastapi {metadata.version('fastapi')}, "
                            f"uvicorn {metadata.version('uvicorn')}, httpx {metadata.version('httpx')}"),
               ("store", f"SQLite file in {tmp.parent} (durability=full: WAL, synchronous=FULL), one file for "
                         "both sides; the server is a child process"),
               ("run", f"clients={','.join(map(str, clients))}, {args.seconds:g} s per cell, {args.records:,} "
                       f"records in each of {args.search_scopes} search scopes (preload {preload_s:.1f} s), "
                       f"cells {run_s:.0f} s"),
               ("server", f"`memwarden serve --write-rate {WRITE_RATE}` (limiter on, never reached), uvicorn "
                          "access log to a file"),
               ("load average (1/5/15 min) before", "/".join(f"{x:.2f}" for x in load0)),
               ("load average after", "/".join(f"{x:.2f}" for x in os.getloadavg())),
           ], [False, False]), ""]
    for op, what in (("save", "`memory_save` of a new episode (durable: one fsync'd commit, group commit across "
                              "clients)"),
                     ("search", f"`memory_search`, k=5, scope of {args.records:,} records")):
        rows = []
        for c in clients:
            for side in (lib_name, rest_name, McpStdioSide.name):
                if side == McpStdioSide.name and c not in mcp_clients:
                    continue
                x = find(side, op, c)
                errs = ", ".join(f"{k} ×{v}" for k, v in sorted(x.errors.items())) or "0"
                rows.append([side, str(c), f"{len(x.ns):,}", f"{x.pct(0.5):.2f}", f"{x.pct(0.95):.2f}",
                             f"{x.pct(0.99):.2f}", f"{x.rate:,.0f}", errs, f"{x.load:.2f}"])
        out += [f"#### {op}: {what}", "",
                table(["side", "clients", "calls", "p50 ms", "p95 ms", "p99 ms", "calls/s", "errors", "load 1m"],
                      rows, [False, True, True, True, True, True, True, False, True]), ""]
        firsts = [x for x in cells if x.op == op and x.first_ns]
        if firsts:
            out += ["First call of each fresh MCP process (untimed, before the clock): " + "; ".join(
                f"{x.clients} clients: median {Cell(x.side, op, x.clients, x.first_ns).pct(0.5):,.0f} ms, "
                f"max {max(x.first_ns) / 1e6:,.0f} ms" for x in firsts) + ".", ""]
    if diag:
        out += [diag]
    out += ["#### Every acknowledged save is in the store (after the server stopped)", "",
            table(["side", "scopes", "acknowledged", "stored", "missing", "unacknowledged", "unverified",
                   "result"], check_rows, [False, True, True, True, True, True, True, False]), ""]

    targets: list[list[str]] = []
    ok = stored_ok
    if TARGET_CLIENTS in clients and args.records >= 10_000:
        p95 = find(rest_name, "search", TARGET_CLIENTS).pct(0.95)
        good = p95 <= MAX_SEARCH_P95_MS
        ok &= good
        targets.append([f"REST search p95, {TARGET_CLIENTS} clients, {args.records:,} records per scope",
                        f"≤ {MAX_SEARCH_P95_MS:.0f} ms", f"{p95:.2f} ms", "PASS" if good else "FAIL"])
    else:
        targets.append([f"REST search p95, {TARGET_CLIENTS} clients, 10k records per scope",
                        f"≤ {MAX_SEARCH_P95_MS:.0f} ms", "not measured (needs --clients with 16, --records ≥ 10000)",
                        "—"])
    if 1 in clients:
        extra = find(rest_name, "save", 1).pct(0.5) - find(lib_name, "save", 1).pct(0.5)
        good = extra <= MAX_SAVE_OVERHEAD_MS
        ok &= good
        targets.append(["server's added median on a save (REST − library, 1 client)",
                        f"≤ {MAX_SAVE_OVERHEAD_MS} ms", f"{extra:+.2f} ms", "PASS" if good else "FAIL"])
    targets.append(["every acknowledged save stored (count and ids)", "all", "see above",
                    "PASS" if stored_ok else "FAIL"])
    out += ["#### Targets (issue 13, acceptance 5)", "",
            table(["target", "goal", "measured", "result"], targets, [False, True, True, False])]
    return "\n".join(out), ok


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--clients", default="1,16,64", help="concurrent clients per cell, comma-separated")
    p.add_argument("--seconds", type=float, default=5.0, help="duration of each cell")
    p.add_argument("--mcp-clients", default="1,16",
                   help="the concurrencies (of --clients) also run over MCP stdio, one process per client; '' skips")
    p.add_argument("--records", type=int, default=10_000, help="records pre-loaded in each search scope")
    p.add_argument("--search-scopes", type=int, default=4, help="pre-loaded scopes the search clients share")
    p.add_argument("--seed", type=int, default=13)
    p.add_argument("--diagnose", type=int, default=0, metavar="N",
                   help="afterwards, N saves and N searches (1 client) of the library, auth alone, the app in "
                        "process (ASGI) and the server, interleaved: where a REST call spends its time")
    p.add_argument("--dir", default=None, help="where the temporary store goes (a real disk: fsync is free on tmpfs)")
    p.add_argument("--out", default=None, help="also write the tables to this file")
    p.add_argument("--strict", action="store_true", help="exit 1 when a target fails")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="memwarden-server-", dir=args.dir) as d:
        report, ok = run(args, Path(d))
    print(report)
    if args.out:
        Path(args.out).write_text(report + "\n", encoding="utf-8")
    return 1 if args.strict and not ok else 0


if __name__ == "__main__":
    sys.exit(main())
