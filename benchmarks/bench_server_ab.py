"""A/B of server variants in one run (issue 13, acceptance 5: each lever measured before/after).

A *variant* is a source tree plus uvicorn's HTTP parser, event loop and access log. Each variant gets a store of
its own (pre-loaded with ``--records`` episodes in one scope, by that tree) and its own server process, built as
``memwarden serve`` builds it (``rest.create_app`` under ``uvicorn.run``), so no variant's writes drop another's
SQLite page cache. The library (this tree, in this process, on a store of its own) is the baseline. Calls run in
``--blocks`` rounds of ``--per-block`` calls per variant and client, the variants in a new random order each
round, so a change of the machine's load reaches every variant alike; the first round is a warm-up. Prints, per
variant, the median and p95 of every call and the server process's CPU per call.

REST calls use the benchmark's minimal HTTP/1.1 client (``bench_server.RawHttp``) unless a variant says
``client=httpx``; with ``--mcp`` every call goes to ``/mcp`` with the official MCP client instead.

    git worktree add /tmp/base 3e236ab
    .venv/bin/python benchmarks/bench_server_ab.py --op save \\
        --variant before=/tmp/base/src,http=h11,loop=asyncio,access-log --variant after=src [--clients 1]

A benchmark, not a test: it prints a table and exits 0.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

import bench_server as bs
from _report import table

# Run by each variant's own tree: pre-load its store, make its tokens (printed as JSON).
PRELOAD = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import bench_server as bs, memwarden
svc = memwarden.open(sys.argv[2])
bs.preload(svc, ["search-0"], int(sys.argv[3]), 13)
n = int(sys.argv[4])
print(json.dumps({"save": [bs.agent_token(svc, f"ab-save-{i}", f"ab-save-{i}")[0] for i in range(n)],
                  "search": [bs.agent_token(svc, "search-0", f"ab-search-{i}")[0] for i in range(n)]}))
svc.close()
"""

# Run by each variant's own tree: the server, as `memwarden serve` builds it, with uvicorn's knobs chosen.
SERVE = r"""
import sys
import uvicorn
import memwarden
from memwarden import rest
db, port, http, loop, access_log = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5] == "1"
service = memwarden.open(db)
app = rest.create_app(service, rest.ServerConfig(write_rate=1_000_000_000, host="127.0.0.1", port=port))
uvicorn.run(app, host="127.0.0.1", port=port, http=http, loop=loop, access_log=access_log, log_level="warning",
            timeout_graceful_shutdown=30)
service.close()
"""


def store_env(d: Path) -> dict[str, str]:
    return {"XDG_CONFIG_HOME": str(d / "config"), "XDG_DATA_HOME": str(d / "data"), "XDG_STATE_HOME": str(d / "state"),
            "XDG_CACHE_HOME": str(d / "cache"), "MEMWARDEN_KEY_FILE": str(d / "config" / "memwarden" / "key"),
            "MEMWARDEN_ANCHOR_DIR": str(d / "config" / "memwarden" / "anchors")}


@dataclass
class Variant:
    name: str
    src: Path
    http: str = "auto"
    loop: str = "auto"
    access_log: bool = False
    client: str = "raw"
    ns: list[int] = field(default_factory=list)
    server_cpu_s: float = 0.0
    proc: subprocess.Popen[bytes] | None = None
    port: int = 0
    tokens: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def parse(cls, spec: str) -> Variant:
        """``NAME=SRC[,http=h11|httptools][,loop=asyncio|uvloop][,access-log][,client=raw|httpx]``"""
        name, _, rest = spec.partition("=")
        src, *opts = rest.split(",")
        v = cls(name, Path(src).resolve())
        for o in opts:
            key, _, val = o.partition("=")
            if key == "access-log":
                v.access_log = True
            elif key in ("http", "loop", "client"):
                setattr(v, key, val)
            else:
                raise SystemExit(f"unknown option {o!r} in --variant {spec!r}")
        return v


def start(v: Variant, d: Path, args: argparse.Namespace, bench_dir: Path) -> None:
    d.mkdir()
    env = {**os.environ, **store_env(d), "PYTHONPATH": str(v.src)}
    env.pop("MEMWARDEN_KEY", None)
    out = subprocess.run([sys.executable, "-c", PRELOAD, str(bench_dir), str(d / "bench.db"), str(args.records),
                          str(args.clients)], env=env, capture_output=True, text=True, check=True)
    v.tokens = json.loads(out.stdout.strip().splitlines()[-1])
    v.port = bs.free_port()
    v.proc = subprocess.Popen([sys.executable, "-c", SERVE, str(d / "bench.db"), str(v.port), v.http, v.loop,
                               "1" if v.access_log else "0"], env=env, stdout=subprocess.DEVNULL,
                              stderr=open(d / "server.log", "wb"))  # noqa: SIM115 - closed with the process
    until = time.monotonic() + 60
    while True:
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"http://127.0.0.1:{v.port}/healthz", timeout=1).status_code == 200:
                return
        if v.proc.poll() is not None or time.monotonic() > until:
            raise RuntimeError(f"variant {v.name}: the server did not start ({d / 'server.log'})")
        time.sleep(0.1)


def body(op: str, rng: random.Random, n: int) -> dict[str, Any]:
    return {"content": bs.episode(rng, n), "kind": "episode"} if op == "save" else {"query": bs.query(rng), "k": 5}


async def rest_block(v: Variant, op: str, per: int, rng: random.Random, keep: bool) -> None:
    """``per`` calls per client on fresh connections (uvicorn closes idle keep-alive connections after 5 s)."""
    toks = v.tokens["search" if op == "search" else "save"]
    conns: list[tuple[Any, str]] = []
    for tok in toks:
        hdr = {"Authorization": f"Bearer {tok}"}
        if v.client == "httpx":
            c: Any = httpx.AsyncClient(base_url=f"http://127.0.0.1:{v.port}", headers=hdr)
            sid = "" if op == "healthz" else (await c.post("/v1/sessions")).json()["session_id"]
        else:
            c = await bs.RawHttp("127.0.0.1", v.port, hdr).open()
            sid = "" if op == "healthz" else (await c.request("POST", "/v1/sessions"))[1]["session_id"]
        conns.append((c, sid))

    async def one(c: Any, sid: str) -> None:
        for _ in range(per):
            path = "/healthz" if op == "healthz" else f"/v1/sessions/{sid}/tools/memory_{op}"
            payload = None if op == "healthz" else body(op, rng, rng.randrange(1 << 30))
            t = time.perf_counter_ns()
            if v.client == "httpx":
                r = await (c.get(path) if payload is None else c.post(path, json=payload))
                status = r.status_code
            else:
                status, _out = await c.request("GET" if payload is None else "POST", path, payload)
            took = time.perf_counter_ns() - t
            if status != 200:
                raise RuntimeError(f"variant {v.name}: {path} answered {status}")
            if keep:
                v.ns.append(took)

    cpu0 = bs.process_cpu(v.proc.pid if v.proc else None)
    await asyncio.gather(*(one(c, sid) for c, sid in conns))
    if keep:
        v.server_cpu_s += bs.process_cpu(v.proc.pid if v.proc else None) - cpu0
    for c, sid in conns:
        if sid:
            await (c.delete(f"/v1/sessions/{sid}") if v.client == "httpx" else c.request("DELETE",
                                                                                          f"/v1/sessions/{sid}"))
        await c.aclose()


async def mcp_block(v: Variant, op: str, per: int, rng: random.Random, keep: bool,
                    sessions: dict[str, list[Any]]) -> None:
    async def one(s: Any) -> None:
        for _ in range(per):
            t = time.perf_counter_ns()
            r = await s.call_tool(f"memory_{op}", body(op, rng, rng.randrange(1 << 30)))
            took = time.perf_counter_ns() - t
            if r.is_error:
                raise RuntimeError(f"variant {v.name}: {r.content}")
            if keep:
                v.ns.append(took)

    cpu0 = bs.process_cpu(v.proc.pid if v.proc else None)
    await asyncio.gather(*(one(s) for s in sessions[v.name]))
    if keep:
        v.server_cpu_s += bs.process_cpu(v.proc.pid if v.proc else None) - cpu0


def library_block(lib: Any, op: str, clients: int, per: int, keep: bool, out: list[int], seed: int) -> None:
    from memwarden.scope import Scope

    def one(i: int) -> None:
        rng = random.Random(seed * 1000 + i)
        user = f"lib-{i}" if op == "save" else "search-0"
        with lib.session(Scope(bs.TENANT, user, "agent")) as s:
            for _ in range(per):
                b = body(op, rng, rng.randrange(1 << 30))
                t = time.perf_counter_ns()
                if op == "save":
                    s.save(b["content"], kind="episode")
                else:
                    s.search(b["query"], k=5)
                if keep:
                    out.append(time.perf_counter_ns() - t)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def pct(ns: list[int], q: float) -> float:
    s = sorted(ns)
    return s[min(len(s) - 1, max(0, int(q * len(s) + 0.5) - 1))] / 1e6 if s else float("nan")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--variant", action="append", required=True, type=Variant.parse,
                   help="NAME=SRC[,http=h11|httptools][,loop=asyncio|uvloop][,access-log][,client=raw|httpx]")
    p.add_argument("--op", choices=("healthz", "save", "search"), default="save")
    p.add_argument("--mcp", action="store_true", help="call /mcp with the official MCP client (save, search)")
    p.add_argument("--clients", type=int, default=1)
    p.add_argument("--blocks", type=int, default=10)
    p.add_argument("--per-block", type=int, default=60, help="calls per variant, client and block")
    p.add_argument("--records", type=int, default=10_000, help="episodes pre-loaded in the searched scope")
    p.add_argument("--no-library", action="store_true", help="leave the in-process baseline out")
    p.add_argument("--dir", default=None, help="where the temporary stores go")
    args = p.parse_args()
    if args.mcp and args.op == "healthz":
        raise SystemExit("--mcp calls tools: --op save or search")
    variants: list[Variant] = args.variant
    bench_dir = Path(__file__).resolve().parent
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="memwarden-ab-", dir=args.dir) as tmp:
        lib_ns: list[int] = []
        lib = None
        try:
            for i, v in enumerate(variants):
                start(v, Path(tmp) / f"v{i}", args, bench_dir)
            if not args.no_library and args.op != "healthz":
                d = Path(tmp) / "library"
                d.mkdir()
                os.environ.update(store_env(d))
                os.environ.pop("MEMWARDEN_KEY", None)
                import memwarden

                lib = memwarden.open(d / "bench.db")
                bs.preload(lib, ["search-0"], args.records, 13)

            async def go() -> None:
                rng = random.Random(1)
                async with contextlib.AsyncExitStack() as stack:
                    sessions: dict[str, list[Any]] = {}
                    if args.mcp:
                        for v in variants:
                            side = bs.McpHttpSide(bs.Served(f"http://127.0.0.1:{v.port}", 0), [], [])
                            sessions[v.name] = [await stack.enter_async_context(side._session(tok))
                                                for tok in v.tokens["search" if args.op == "search" else "save"]]
                    for blk in range(args.blocks + 1):
                        order: list[Variant | None] = [*variants, *([None] if lib is not None else [])]
                        random.shuffle(order)
                        for v in order:
                            if v is None:
                                await asyncio.to_thread(library_block, lib, args.op, args.clients, args.per_block,
                                                        blk > 0, lib_ns, blk)
                            elif args.mcp:
                                await mcp_block(v, args.op, args.per_block, rng, blk > 0, sessions)
                            else:
                                await rest_block(v, args.op, args.per_block, rng, blk > 0)

            asyncio.run(go())
        finally:
            for v in variants:
                if v.proc is not None and v.proc.poll() is None:
                    v.proc.terminate()
                    v.proc.wait(30)
            if lib is not None:
                lib.close()
    what = f"{'MCP HTTP ' if args.mcp else ''}{args.op}"
    rows = [[v.name, f"{v.src}", v.http, v.loop, "on" if v.access_log else "off",
             "official MCP" if args.mcp else v.client, f"{len(v.ns):,}",
             f"{pct(v.ns, 0.5):.3f}", f"{pct(v.ns, 0.95):.3f}", f"{v.server_cpu_s / max(1, len(v.ns)) * 1e3:.3f}"]
            for v in variants]
    if lib_ns:
        rows.append(["library (in process)", "this tree", "—", "—", "—", "—", f"{len(lib_ns):,}",
                     f"{pct(lib_ns, 0.5):.3f}", f"{pct(lib_ns, 0.95):.3f}", "—"])
    print(f"{what}, {args.clients} client(s), {args.blocks} rounds × {args.per_block} calls, load average "
          f"{load0:.2f} → {os.getloadavg()[0]:.2f}\n")
    print(table(["variant", "src", "http", "loop", "access log", "client", "calls", "p50 ms", "p95 ms",
                 "server CPU ms/call"], rows, [False, False, False, False, False, False, True, True, True, True]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
