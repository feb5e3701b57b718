"""Store benchmark (issue 2, acceptance item 4): memwarden vs LangGraph's ``SqliteStore``, side by side.

One process, one run, the same records on both sides:

* **writes** — memwarden ``session.save`` (gate + sign + store + FTS + audit, one durable transaction: WAL,
  ``synchronous=FULL`` as the store sets it) vs LangGraph ``SqliteStore.put`` (no gate, no signature, no
  audit) in two configurations: (a) the default of ``SqliteStore.from_conn_string`` (rollback journal,
  ``synchronous`` left at SQLite's default FULL) and (b) tuned to memwarden's durability
  (``journal_mode=WAL``, ``synchronous=FULL``), which is the apples-to-apples baseline for the 1.5x target;
* **reads** of one scope — memwarden ``session.view()`` (list, with the A2 read audit), ``service.list_records``,
  ``service.get`` and ``session.view(id)`` vs LangGraph ``search(namespace, limit=100)`` and ``get``;
* **concurrent writers** — ``--threads`` threads (default 8) per store, each in a scope / namespace of its own,
  writing at once: memwarden's group commit (queued writers share one durable commit) vs LangGraph's store,
  which serialises its puts behind a lock, one commit each;
* **snapshot build** — memwarden session start (frozen prompt block, P1) for a scope of ``--snapshot-scope``
  records vs a naive block built from LangGraph ``search(limit=10)``, and a stress variant of the same scope
  with every reminder due.

Measurements alternate between the systems (writes in chunks whose order rotates, reads and snapshots per
repetition) so machine noise hits every side; every figure is a median (plus p95/p99) of ``perf_counter_ns``.

    .venv/bin/python benchmarks/bench_store.py [--n 10000] [--snapshot-scope 1000] [--repeat 200]
                                              [--out /tmp/store.md] [--profile 3000] [--strict]

``--profile N`` adds a diagnosis of the write path (SQL time per statement, WAL frames per commit by B-tree,
cProfile, and interleaved variants that price FTS, audit and the sync level). Results: docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import gc
import hashlib
import io
import math
import os
import platform
import pstats
import random
import secrets
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from importlib import metadata
from pathlib import Path
from typing import Any

import _postgres
import memwarden
from _report import cpu_model, table, us
from memwarden.policy import DEFAULT_LIMITS, KindLimits

try:
    from langgraph.store.base import BaseStore
    from langgraph.store.sqlite import SqliteStore
except ImportError:  # pragma: no cover - the bench extra is missing
    sys.exit("langgraph-checkpoint-sqlite is not installed: .venv/bin/pip install -e '.[dev,bench]'")

# --- targets (issue 2, acceptance 4) ------------------------------------------------------------------------
MAX_RATIO = 1.5  # memwarden median per write / unsecured store median
MIN_WRITES_PER_S = 2_000  # durable writes per second
MAX_SNAPSHOT_MS = 5.0  # session start (frozen block) for a scope of 1,000 records

MW, MW_NORMAL, LG_DEFAULT, LG_WAL = "memwarden", "memwarden-normal", "langgraph-default", "langgraph-wal"
MW_PG, LG_PG = "memwarden-pg", "langgraph-pg"  # --postgres: the same operations on a PostgreSQL server
SIDE_LABEL = {
    MW: "memwarden `session.save` (gate+sign+store+FTS+audit), durability=full (default)",
    MW_NORMAL: "memwarden `session.save`, durability=normal (survives kill -9, not power loss)",
    LG_DEFAULT: "LangGraph `SqliteStore.put` (default)",
    LG_WAL: "LangGraph `SqliteStore.put` (WAL, sync FULL)",
    MW_PG: "memwarden on PostgreSQL `session.save` (same write path, RLS, synchronous_commit=on)",
    LG_PG: "LangGraph `PostgresStore.put` (as shipped, one connection)",
}
SIDES = (MW, MW_NORMAL, LG_DEFAULT, LG_WAL, MW_PG, LG_PG)
TENANT = "bench"
AGENT = "agent-1"

# --- deterministic, memory-shaped records -------------------------------------------------------------------

_NAMES = ("Ana", "Ben", "Chloé", "Dmitri", "Esra", "Farid", "Grace", "Hiro", "Ines", "Jonas", "Kemal", "Lena",
          "Mateo", "Nadia", "Oskar", "Priya", "Quentin", "Rosa", "Sven", "Tamar", "Uma", "Victor", "Wen",
          "Yusuf")
_LANGS = ("Go", "Rust", "Python", "TypeScript", "Kotlin", "Elixir", "Java", "C#", "Zig", "Swift")
_TOOLS = ("Postgres", "SQLite", "Redis", "Kafka", "Terraform", "Kubernetes", "Grafana", "Sentry", "Airflow",
          "dbt", "Vite", "pytest", "GitHub Actions", "Nomad", "ClickHouse")
_PROJECTS = ("billing-api", "search revamp", "mobile onboarding", "data warehouse", "auth service",
             "invoice exporter", "support dashboard", "pricing page", "ETL nightly job",
             "notification service")
_CITIES = ("Lisbon", "Berlin", "Nairobi", "Osaka", "Montréal", "Austin", "Kraków", "Bogotá", "Pune", "Oslo")
_ROLES = ("staff engineer", "product manager", "designer", "data analyst", "SRE", "support lead", "CTO",
          "QA engineer", "tech writer", "account manager")
_TOPICS = ("flaky integration tests", "a slow dashboard query", "the Q3 roadmap", "on-call rotation",
           "a failed deploy", "the migration plan", "customer churn numbers", "API rate limits",
           "the staging database", "release notes", "a memory leak in the worker", "the pricing experiment")
_OUTCOMES = ("it was fixed by pinning the dependency", "the user agreed to revisit it next sprint",
             "we shipped a patch the same day", "the root cause was a missing index",
             "the decision was to keep the current design", "a follow-up ticket was opened",
             "the user was happy with the result", "it turned out to be a timezone bug",
             "the fix is waiting for review", "we rolled back and retried an hour later")
_TAILS = ("because the team already knows it well", "as mentioned during the weekly sync",
          "which matters for the upcoming audit", "according to the notes from the kickoff meeting",
          "and this came up again in the retrospective", "since the last incident in production",
          "for anything customer facing", "when working on the {project}", "after the move to {city}",
          "together with {name} from the platform team", "which {name} confirmed by email",
          "and the budget for it was approved last quarter", "with a preference for small pull requests")


@dataclass(frozen=True, slots=True)
class Item:
    key: str  # LangGraph key (memwarden assigns its own ULID)
    kind: str
    content: str
    due: datetime | None = None


def _sentence(rng: random.Random, kind: str, day: datetime) -> str:
    name, other = rng.sample(_NAMES, 2)
    a, b = rng.sample(_LANGS, 2)
    tool, tool2 = rng.sample(_TOOLS, 2)
    project, city = rng.choice(_PROJECTS), rng.choice(_CITIES)
    date = (day - timedelta(days=rng.randint(0, 400))).strftime("%Y-%m-%d")
    base = {
        "preference": rng.choice((
            f"The user prefers {a} over {b} for new services",
            f"{name} likes short answers with code samples in {a}",
            f"The user wants {tool} dashboards in dark mode",
            f"{name} prefers to be contacted on weekday mornings about the {project}",
        )),
        "fact": rng.choice((
            f"{name} works as a {rng.choice(_ROLES)} at the {city} office",
            f"The {project} runs on {tool} and is written in {a}",
            f"{name}'s team owns the {project} and reports to {other}",
            f"The user's laptop is set up with {tool2} and {a} tooling",
        )),
        "episode": rng.choice((
            f"On {date} we debugged {rng.choice(_TOPICS)} with {name}; {rng.choice(_OUTCOMES)}",
            f"On {date} {name} asked about {rng.choice(_TOPICS)} in the {project}; {rng.choice(_OUTCOMES)}",
            f"On {date} the user and {other} reviewed the {tool} setup; {rng.choice(_OUTCOMES)}",
        )),
        "task_state": rng.choice((
            f"Task {project}: the {tool} migration is done, next step is updating the {tool2} config",
            f"Task {project}: waiting for {name} to review the schema change before the rollout",
        )),
        "reminder": f"Follow up with {name} about {rng.choice(_TOPICS)} for the {project}",
    }[kind]
    target = rng.randint(60, 200)
    text = base
    while len(text) < target:
        tail = rng.choice(_TAILS).format(project=rng.choice(_PROJECTS), city=rng.choice(_CITIES),
                                         name=rng.choice(_NAMES))
        text += ", " + tail
    if len(text) > 199:
        text = text[:199].rsplit(" ", 1)[0].rstrip(",;")
    return text + "."


def make_items(n: int, seed: int, kinds: Sequence[tuple[str, float]], now: datetime,
               due_hours: tuple[int, int] = (-30, 90 * 24)) -> list[Item]:
    """``n`` records; reminders fall due ``due_hours`` around ``now`` (by default from 30 hours ago — a save
    refuses a due more than 36 h past (P3) — to three months ahead, so a few land in P4's -1.5/+3 day window)."""
    rng = random.Random(seed)
    names = [k for k, _ in kinds]
    weights = [w for _, w in kinds]
    out = []
    for _ in range(n):
        kind = rng.choices(names, weights)[0]
        due = now + timedelta(hours=rng.randint(*due_hours)) if kind == "reminder" else None
        key = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        out.append(Item(key, kind, _sentence(rng, kind, now), due))
    return out


# --- statistics and tables ----------------------------------------------------------------------------------


@dataclass
class Series:
    ns: list[int] = field(default_factory=list)
    wall_ns: int = 0  # wall clock of the timed loops (for total throughput)

    def pct(self, p: float) -> float:
        s = sorted(self.ns)
        return float(s[max(0, math.ceil(p / 100 * len(s)) - 1)])

    @property
    def median(self) -> float:
        return float(statistics.median(self.ns))

    @property
    def mean(self) -> float:
        return statistics.fmean(self.ns)




def ms(ns: float) -> str:
    return f"{ns / 1e6:,.2f}"




# --- environment --------------------------------------------------------------------------------------------


def fs_type(path: Path) -> str:
    """Best effort: the filesystem type holding ``path`` (fsync is free on tmpfs, which would flatter us)."""
    best, kind = "", "unknown"
    try:
        with open("/proc/mounts", encoding="utf-8") as fh:
            for line in fh:
                parts = line.split()
                if len(parts) >= 3 and str(path).startswith(parts[1]) and len(parts[1]) > len(best):
                    best, kind = parts[1], parts[2]
    except OSError:
        pass
    return kind


def fsync_probe(directory: Path, n: int = 300) -> Series:
    """Cost of overwriting 4 KiB in place and ``fdatasync``-ing it on the benchmark's disk: what a WAL commit
    of one page pays at least (SQLite reuses its WAL file and syncs it with fdatasync on Linux)."""
    path = directory / "fsync.probe"
    out = Series()
    block, slots = b"x" * 4096, 256
    sync = getattr(os, "fdatasync", os.fsync)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, b"\0" * 4096 * slots)
        os.fsync(fd)
        for i in range(n):
            os.pwrite(fd, block, (i % slots) * 4096)
            t = time.perf_counter_ns()
            sync(fd)
            out.ns.append(time.perf_counter_ns() - t)
    finally:
        os.close(fd)
        path.unlink()
    return out




def source_version() -> str:
    """The commit measured, and whether ``src/`` had uncommitted changes (read-only git calls)."""
    here = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=here, capture_output=True,
                              text=True, check=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "src"], cwd=here, capture_output=True,
                               text=True, check=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown (not a git checkout)"
    return f"{head}" + (" + uncommitted changes in src/" if dirty else "")


def pragmas(conn: sqlite3.Connection) -> str:
    mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
    sync = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}[conn.execute("PRAGMA synchronous").fetchone()[0]]
    return f"journal_mode={mode}, synchronous={sync}"


# --- the systems under test ---------------------------------------------------------------------------------


def bench_policy(n: int, snapshot: int) -> memwarden.Policy:
    """Default policy with caps raised just enough for one scope to hold the benchmark's records."""
    limits = dict(DEFAULT_LIMITS)
    for kind, lim in DEFAULT_LIMITS.items():
        need = n + snapshot + 1_000
        limits[kind] = KindLimits(max(lim.max_entries, need), max(lim.max_bytes, need * 256),
                                  lim.retention_days)
    return memwarden.Policy(limits=limits)


@contextmanager
def open_langgraph(path: Path, *, wal: bool) -> Iterator[SqliteStore]:
    with SqliteStore.from_conn_string(str(path)) as store:
        if wal:
            store.conn.execute("PRAGMA journal_mode=WAL")
            store.conn.execute("PRAGMA synchronous=FULL")
        store.setup()
        yield store


@contextmanager
def open_langgraph_pg(url: str, *, pool: int = 0) -> Iterator[BaseStore]:
    """LangGraph's ``PostgresStore``: as shipped by ``from_conn_string`` (one connection), or with a pool."""
    from langgraph.store.postgres import PostgresStore

    with PostgresStore.from_conn_string(url, pool_config={"max_size": pool} if pool else None) as store:
        store.setup()
        yield store


def saver(session: memwarden.Session) -> Callable[[Item], None]:
    def save(item: Item) -> None:
        session.save(item.content, kind=item.kind, due=item.due)
    return save


def putter(store: BaseStore, ns: tuple[str, ...]) -> Callable[[Item], None]:
    def put(item: Item) -> None:
        store.put(ns, item.key, {"kind": item.kind, "content": item.content})
    return put


def timed_chunks(sides: dict[str, Callable[[Item], None]], items: Sequence[Item], chunk: int,
                 progress: str) -> dict[str, Series]:
    """Every side writes the same items; chunk by chunk, the order of the sides rotates."""
    names = list(sides)
    out = {name: Series() for name in names}
    clock = time.perf_counter_ns
    gc.collect()
    nchunks = math.ceil(len(items) / chunk)
    for c in range(nchunks):
        part = items[c * chunk:(c + 1) * chunk]
        order = names[c % len(names):] + names[:c % len(names)]
        for name in order:
            op, series = sides[name], out[name]
            lat = series.ns
            start = clock()
            for item in part:
                t = clock()
                op(item)
                lat.append(clock() - t)
            series.wall_ns += clock() - start
        if progress and (c + 1) % max(1, nchunks // 10) == 0:
            print(f"  {progress}: {min(len(items), (c + 1) * chunk):,}/{len(items):,}", file=sys.stderr)
    return out


def alternate(ops: dict[str, Callable[[int], object]], repeat: int) -> dict[str, Series]:
    """Run every op once per repetition, rotating the order each time."""
    names = list(ops)
    out = {name: Series() for name in names}
    clock = time.perf_counter_ns
    gc.collect()
    for i in range(repeat):
        for name in names[i % len(names):] + names[:i % len(names)]:
            t = clock()
            ops[name](i)
            out[name].ns.append(clock() - t)
    return out


# --- the benchmark ------------------------------------------------------------------------------------------


@dataclass
class Results:
    env: list[tuple[str, str]]
    writes: dict[str, Series]
    reads: dict[str, Series]
    snapshot: dict[str, Series]
    read_labels: dict[str, str]
    snapshot_labels: dict[str, str]
    n: int
    snapshot_scope: int
    repeat: int
    block_entries: dict[str, int]
    concurrent: list[Concurrent] = field(default_factory=list)


@dataclass
class Concurrent:
    """One store written by ``threads`` threads at once, each in a scope/namespace of its own."""

    label: str
    threads: int
    writes: int
    wall_ns: int
    latency: Series
    commits: int | None  # memwarden: transactions committed (fewer than writes = group commit)

    @property
    def per_s(self) -> float:
        return self.writes * 1e9 / self.wall_ns


def run(args: argparse.Namespace, tmp: Path) -> Results:
    now = datetime.now(UTC)
    items = make_items(args.n, args.seed, [("episode", 1.0)], now)
    mix = [("preference", 0.15), ("fact", 0.45), ("task_state", 0.10), ("episode", 0.25), ("reminder", 0.05)]
    snap_items = make_items(args.snapshot_scope, args.seed + 1, mix, now)
    # stress case: the same mix, but every reminder is due inside P4's window (-36 h .. +72 h)
    due_items = make_items(args.snapshot_scope, args.seed + 1, mix, now, due_hours=(-30, 70))
    warm = make_items(args.warmup, args.seed + 2, [("episode", 1.0)], now)

    load_before = os.getloadavg()
    probe = fsync_probe(tmp)
    key = secrets.token_hex(32)  # a fresh signing key for this run, never written to disk
    policy = bench_policy(args.n, args.snapshot_scope)
    main_scope = memwarden.Scope(TENANT, "u-main", AGENT)
    main_ns = (TENANT, "u-main", "memories")

    with ExitStack() as stack:
        svc = stack.enter_context(memwarden.open(tmp / "memwarden.db", key=key, policy=policy))
        svc_n = stack.enter_context(memwarden.open(tmp / "memwarden-normal.db", key=key, policy=policy,
                                                   durability="normal"))
        session_n = stack.enter_context(svc_n.session(main_scope))
        lgd = stack.enter_context(open_langgraph(tmp / "langgraph-default.db", wal=False))
        lgw = stack.enter_context(open_langgraph(tmp / "langgraph-wal.db", wal=True))
        session = stack.enter_context(svc.session(main_scope))
        config = {MW: pragmas(svc.backend.conn), MW_NORMAL: pragmas(svc_n.backend.conn),
                  LG_DEFAULT: pragmas(lgd.conn), LG_WAL: pragmas(lgw.conn)}
        pg: _postgres.PgTarget | None = args.pg
        # --postgres: memwarden through the application role of a migrated database, LangGraph's PostgresStore
        # as shipped (from_conn_string: one connection) in a database of its own, on the same server
        svc_pg = session_pg = lgp = None
        if pg is not None:
            svc_pg = stack.enter_context(memwarden.open(pg.app_url, key=key, policy=policy))
            session_pg = stack.enter_context(svc_pg.session(main_scope))
            lgp = stack.enter_context(open_langgraph_pg(pg.lg_url))
            config[MW_PG] = config[LG_PG] = pg.server

        saved_ids: list[str] = []
        saved_pg_ids: list[str] = []

        def mw_save(item: Item) -> None:
            r = session.save(item.content, kind=item.kind, due=item.due)
            if r.status != "accepted":
                raise SystemExit(f"benchmark invalid: memwarden did not accept a record ({r.message})")
            saved_ids.append(r.id or "")

        def mw_normal_save(item: Item) -> None:
            r = session_n.save(item.content, kind=item.kind, due=item.due)
            if r.status != "accepted":
                raise SystemExit(f"benchmark invalid: memwarden did not accept a record ({r.message})")

        def mw_pg_save(item: Item) -> None:
            assert session_pg is not None
            r = session_pg.save(item.content, kind=item.kind, due=item.due)
            if r.status != "accepted":
                raise SystemExit(f"benchmark invalid: memwarden (PostgreSQL) did not accept a record ({r.message})")
            saved_pg_ids.append(r.id or "")

        # warm-up in a scope/namespace of its own (statement caches, page cache, first-use costs)
        for mw_store in (svc, svc_n, *([svc_pg] if svc_pg is not None else [])):
            with mw_store.session(memwarden.Scope(TENANT, "u-warmup", AGENT)) as warm_session:
                for it in warm:
                    warm_session.save(it.content, kind=it.kind)
        for store in (lgd, lgw, *([lgp] if lgp is not None else [])):
            for it in warm:
                store.put((TENANT, "u-warmup", "memories"), it.key, {"kind": it.kind, "content": it.content})

        # 1. writes: the same n records into one scope / namespace on every side
        write_sides = {MW: mw_save, MW_NORMAL: mw_normal_save, LG_DEFAULT: putter(lgd, main_ns),
                       LG_WAL: putter(lgw, main_ns)}
        if lgp is not None:
            write_sides.update({MW_PG: mw_pg_save, LG_PG: putter(lgp, main_ns)})
        print(f"writes: {args.n:,} records x {len(write_sides)} stores, chunks of {args.chunk} in rotating order",
              file=sys.stderr)
        writes = timed_chunks(write_sides, items, args.chunk, "writes")
        ids, pg_ids = list(saved_ids), list(saved_pg_ids)
        held = len(svc.list_records(session.context, kind="episode", limit=args.n + 10))
        lg_held = len(lgw.search(main_ns, limit=args.n + 10))
        if held != args.n or lg_held != args.n:
            raise SystemExit(f"benchmark invalid: stored {held} (memwarden) / {lg_held} (LangGraph) "
                             f"of {args.n}")
        if svc_pg is not None and session_pg is not None and lgp is not None:
            held = len(svc_pg.list_records(session_pg.context, kind="episode", limit=args.n + 10))
            lg_held = len(lgp.search(main_ns, limit=args.n + 10))
            if held != args.n or lg_held != args.n:
                raise SystemExit(f"benchmark invalid: stored {held} (memwarden, PostgreSQL) / {lg_held} "
                                 f"(LangGraph PostgresStore) of {args.n}")

        # 2. reads of that scope
        print(f"reads: {args.repeat} repetitions", file=sys.stderr)
        rng = random.Random(args.seed + 3)
        picks = [rng.randrange(args.n) for _ in range(args.repeat)]
        ctx = session.context

        def check(n: int) -> Callable[[Sequence[object]], None]:
            def f(found: Sequence[object]) -> None:
                if len(found) != n:
                    raise SystemExit(f"benchmark invalid: a read returned {len(found)} rows, expected {n}")
            return f

        has100 = check(min(100, args.n))

        def found(item: object) -> None:
            if item is None:
                raise SystemExit("benchmark invalid: LangGraph get found nothing")
        read_ops: dict[str, Callable[[int], object]] = {
            "mw_view": lambda i: has100(session.view(limit=100)),
            "mw_list": lambda i: has100(svc.list_records(ctx, limit=100)),
            "lgw_search": lambda i: has100(lgw.search(main_ns, limit=100)),
            "lgd_search": lambda i: has100(lgd.search(main_ns, limit=100)),
            "mw_get": lambda i: svc.get(ctx, ids[picks[i]]),
            "mw_view_id": lambda i: session.view(ids[picks[i]]),
            "lgw_get": lambda i: found(lgw.get(main_ns, items[picks[i]].key)),
            "lgd_get": lambda i: found(lgd.get(main_ns, items[picks[i]].key)),
        }
        if svc_pg is not None and session_pg is not None and lgp is not None:
            pctx, sp, pstore, lp = session_pg.context, session_pg, svc_pg, lgp
            pg_ops: dict[str, Callable[[int], object]] = {
                "mw_pg_view": lambda i: has100(sp.view(limit=100)),
                "mw_pg_list": lambda i: has100(pstore.list_records(pctx, limit=100)),
                "lgp_search": lambda i: has100(lp.search(main_ns, limit=100)),
                "mw_pg_get": lambda i: pstore.get(pctx, pg_ids[picks[i]]),
                "mw_pg_view_id": lambda i: sp.view(pg_ids[picks[i]]),
                "lgp_get": lambda i: found(lp.get(main_ns, items[picks[i]].key)),
            }
            # each PostgreSQL operation next to its SQLite counterparts, in the tables and in the rotation
            after = {"mw_pg_view": "mw_view", "mw_pg_list": "mw_list", "lgp_search": "lgd_search",
                     "mw_pg_get": "mw_get", "mw_pg_view_id": "mw_view_id", "lgp_get": "lgd_get"}
            merged: dict[str, Callable[[int], object]] = {}
            for k, op in read_ops.items():
                merged[k] = op
                merged.update({pk: pg_ops[pk] for pk, base in after.items() if base == k})
            read_ops = merged
        reads = alternate(read_ops, args.repeat)
        read_labels = {
            "mw_view": "memwarden `session.view(limit=100)` (verify + read audit, durable)",
            "mw_list": "memwarden `service.list_records(limit=100)` (verify, no read audit)",
            "lgw_search": "LangGraph `search(ns, limit=100)` (WAL)",
            "lgd_search": "LangGraph `search(ns, limit=100)` (default)",
            "mw_get": "memwarden `service.get(id)` (verify, no read audit)",
            "mw_view_id": "memwarden `session.view(id)` (verify + read audit, durable)",
            "lgw_get": "LangGraph `get(ns, key)` (WAL)",
            "lgd_get": "LangGraph `get(ns, key)` (default)",
            "mw_pg_view": "memwarden on PostgreSQL `session.view(limit=100)` (verify + read audit, durable)",
            "mw_pg_list": "memwarden on PostgreSQL `service.list_records(limit=100)` (verify, no read audit)",
            "lgp_search": "LangGraph `PostgresStore.search(ns, limit=100)`",
            "mw_pg_get": "memwarden on PostgreSQL `service.get(id)` (verify, no read audit)",
            "mw_pg_view_id": "memwarden on PostgreSQL `session.view(id)` (verify + read audit, durable)",
            "lgp_get": "LangGraph `PostgresStore.get(ns, key)`",
        }

        # 3. snapshot build for a scope of --snapshot-scope records (mixed kinds, some reminders due)
        print(f"snapshot: 2 scopes of {args.snapshot_scope:,} records, {args.repeat} session starts each",
              file=sys.stderr)
        snapshot: dict[str, Series] = {}
        snapshot_labels: dict[str, str] = {}
        block_entries: dict[str, int] = {}
        for case, user, data in (("", "u-snap", snap_items), ("_due", "u-snap-due", due_items)):
            scope, ns = memwarden.Scope(TENANT, user, AGENT), (TENANT, user, "memories")
            snap_ids: list[str] = []
            with svc.session(scope) as s:
                for it in data:
                    snap_ids.append(s.save(it.content, kind=it.kind, due=it.due).id or "")
            for it in data:
                lgw.put(ns, it.key, {"kind": it.kind, "content": it.content})
            snap_pg_ids: list[str] = []
            if svc_pg is not None and lgp is not None:
                with svc_pg.session(scope) as s:
                    for it in data:
                        snap_pg_ids.append(s.save(it.content, kind=it.kind, due=it.due).id or "")
                for it in data:
                    lgp.put(ns, it.key, {"kind": it.kind, "content": it.content})
            blocks: dict[str, set[str]] = {"sqlite": set(), "pg": set()}

            def mw_snapshot(_: int, service: memwarden.MemoryService = svc, scope: memwarden.Scope = scope,
                            blocks: set[str] = blocks["sqlite"]) -> None:
                s = service.session(scope)
                blocks.add(s.snapshot_sha256)
                stack.callback(s.close)  # closing is not part of the start; done at the end

            def lg_naive(_: int, store: BaseStore = lgw, ns: tuple[str, ...] = ns) -> None:
                found = store.search(ns, limit=10)
                block = "\n".join(f"- {it.value['content']}" for it in found)
                hashlib.sha256(block.encode()).hexdigest()

            ops: dict[str, Callable[[int], object]] = {"mw_session" + case: mw_snapshot, "lg_naive" + case: lg_naive}
            if svc_pg is not None and lgp is not None:
                ops["mw_pg_session" + case] = functools.partial(mw_snapshot, service=svc_pg, blocks=blocks["pg"])
                ops["lg_pg_naive" + case] = functools.partial(lg_naive, store=lgp)
            got = alternate(ops, args.repeat)
            if len(blocks["sqlite"]) != 1 or len(blocks["pg"]) > 1:
                raise SystemExit("benchmark invalid: the snapshot changed between identical session starts")
            due = sum(1 for it in data if it.kind == "reminder")
            what = ("a few reminders due" if not case else f"stress: all {due} reminders due in P4's window")
            for service, prefix, engine, ids_here in ((svc, "mw_session", "", snap_ids),
                                                      (svc_pg, "mw_pg_session", " on PostgreSQL", snap_pg_ids)):
                if service is None or not ids_here:
                    continue
                with service.session(scope) as probe_session:
                    shown = probe_session.system_block()
                entries = sum(1 for i in ids_here if i in shown)
                block_entries[prefix.removeprefix("mw_").removesuffix("session") + case] = entries
                snapshot_labels[prefix + case] = (f"memwarden{engine} session start, {what} ({entries} entries in "
                                                  "the blocks)")
            snapshot.update(got)
            snapshot_labels["lg_naive" + case] = "naive: LangGraph `search(ns, limit=10)` + join + sha256"
            snapshot_labels["lg_pg_naive" + case] = ("naive: LangGraph `PostgresStore.search(ns, limit=10)` + join "
                                                     "+ sha256")

    conc: list[Concurrent] = []
    if args.threads > 1:
        print(f"concurrent writes: {args.concurrent:,} records x 3 stores, {args.threads} threads each",
              file=sys.stderr)
        conc = concurrent_writes(args, tmp, key, make_items(args.concurrent, args.seed + 5, [("episode", 1.0)],
                                                            now))

    versions = {p: metadata.version(p) for p in ("memwarden", "langgraph-checkpoint-sqlite",
                                                  *(("psycopg", "langgraph-checkpoint-postgres") if pg else ()))}
    env = [
        ("machine", f"{os.cpu_count()} CPUs ({cpu_model()}), {platform.system()} {platform.release()}"),
        ("python", platform.python_version()),
        ("sqlite", sqlite3.sqlite_version),
        ("packages", ", ".join(f"{k} {v}" for k, v in versions.items())),
        ("memwarden source", source_version()),
        ("database dir", f"{tmp} ({fs_type(tmp)})"),
        ("fdatasync of a 4 KiB in-place write there",
         f"median {us(probe.median)} µs, p95 {us(probe.pct(95))} µs"),
        *((f"{SIDE_LABEL[s].split(' (')[0]} config" if s == MW else f"{s} config", config[s])
          for s in (MW, MW_NORMAL, LG_DEFAULT, LG_WAL)),
        *([("postgresql (memwarden-pg, langgraph-pg)", config[MW_PG])] if pg else []),
        ("load average (1/5/15 min)", f"{'/'.join(f'{x:.2f}' for x in load_before)} before, "
                                      f"{'/'.join(f'{x:.2f}' for x in os.getloadavg())} after"),
        ("run", f"n={args.n:,}, snapshot scope={args.snapshot_scope:,}, repeat={args.repeat}, "
                f"chunk={args.chunk}, concurrent={args.concurrent:,} x {args.threads} threads, seed={args.seed}, "
                f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC"),
    ]
    return Results(env, writes, reads, snapshot, read_labels, snapshot_labels, args.n, args.snapshot_scope,
                   args.repeat, block_entries, conc)


def concurrent_writes(args: argparse.Namespace, tmp: Path, key: str, items: Sequence[Item]) -> list[Concurrent]:
    """memwarden (full durability, group commit) vs LangGraph (as shipped, and WAL + FULL) with ``threads``
    writers each; the stores take turns, two rounds, and the better round of each is not chosen: both count."""
    threads = args.threads
    per = len(items) // threads
    policy = bench_policy(len(items), 0)
    out: dict[str, Concurrent] = {}
    pg: _postgres.PgTarget | None = args.pg
    with ExitStack() as stack:
        svc = stack.enter_context(memwarden.open(tmp / "conc-memwarden.db", key=key, policy=policy))
        lgd = stack.enter_context(open_langgraph(tmp / "conc-lg-default.db", wal=False))
        lgw = stack.enter_context(open_langgraph(tmp / "conc-lg-wal.db", wal=True))

        def sessions_of(service: memwarden.MemoryService) -> list[memwarden.Session]:
            return [stack.enter_context(service.session(memwarden.Scope(TENANT, f"u-conc-{t}", AGENT)))
                    for t in range(threads)]

        def mw_of(sessions: list[memwarden.Session]) -> Callable[[int], Callable[[Item], None]]:
            def mw(t: int) -> Callable[[Item], None]:
                s = sessions[t]

                def save(item: Item) -> None:
                    if s.save(item.content, kind=item.kind).status != "accepted":
                        raise SystemExit("benchmark invalid: memwarden did not accept a record")
                return save
            return mw

        sides: dict[str, tuple[Callable[[int], Callable[[Item], None]], Any]] = {
            "memwarden `session.save`, durability=full, group commit": (mw_of(sessions_of(svc)), svc),
            "LangGraph `SqliteStore.put` (default)": (lambda t: putter(lgd, (TENANT, f"u-conc-{t}", "m")), None),
            "LangGraph `SqliteStore.put` (WAL, sync FULL)": (lambda t: putter(lgw, (TENANT, f"u-conc-{t}", "m")),
                                                            None),
        }
        if pg is not None:
            # the scopes and namespaces u-conc-* are new in the run's PostgreSQL databases too
            svc_pg = stack.enter_context(memwarden.open(pg.app_url, key=key, policy=policy))
            lgp = stack.enter_context(open_langgraph_pg(pg.lg_url, pool=threads))
            sides["memwarden on PostgreSQL `session.save`, group commit"] = (mw_of(sessions_of(svc_pg)), svc_pg)
            sides[f"LangGraph `PostgresStore.put` (pool of {threads} connections)"] = (
                lambda t: putter(lgp, (TENANT, f"u-conc-{t}", "m")), None)
        names = list(sides)
        for rnd in range(2):
            for name in names[rnd % len(names):] + names[:rnd % len(names)]:
                make, service = sides[name]
                part = items[rnd * per * threads // 2:(rnd + 1) * per * threads // 2]
                chunk = len(part) // threads
                lat: list[list[int]] = [[] for _ in range(threads)]
                ops = [make(t) for t in range(threads)]
                barrier = threading.Barrier(threads + 1)

                def work(t: int, ops: list[Callable[[Item], None]] = ops, lat: list[list[int]] = lat,
                         part: Sequence[Item] = part, chunk: int = chunk, barrier: threading.Barrier = barrier
                         ) -> None:
                    clock, op, mine = time.perf_counter_ns, ops[t], lat[t]
                    barrier.wait()
                    for item in part[t * chunk:(t + 1) * chunk]:
                        t0 = clock()
                        op(item)
                        mine.append(clock() - t0)

                workers = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
                for w in workers:
                    w.start()
                commits0 = service.backend.commits if service is not None else 0
                gc.collect()
                barrier.wait()
                start = time.perf_counter_ns()
                for w in workers:
                    w.join()
                wall = time.perf_counter_ns() - start
                done = sum(len(x) for x in lat)
                prev = out.get(name)
                series = Series([x for xs in lat for x in xs], wall)
                commits = service.backend.commits - commits0 if service is not None else None
                if prev is None:
                    out[name] = Concurrent(name, threads, done, wall, series, commits)
                else:
                    prev.writes += done
                    prev.wall_ns += wall
                    prev.latency.ns += series.ns
                    if prev.commits is not None and commits is not None:
                        prev.commits += commits
                print(f"  concurrent round {rnd + 1}: {name.split(' (')[0]}: {done * 1e9 / wall:,.0f} writes/s",
                      file=sys.stderr)
    return list(out.values())


def report(r: Results) -> str:
    mw, mwn, lgw, lgd = r.writes[MW], r.writes[MW_NORMAL], r.writes[LG_WAL], r.writes[LG_DEFAULT]
    out = ["### Environment", "", table(["", ""], [list(e) for e in r.env], right=[False, False]), ""]

    rows = []
    for side in (x for x in SIDES if x in r.writes):
        s = r.writes[side]
        rows.append([SIDE_LABEL[side], us(s.median), us(s.pct(95)), us(s.pct(99)), f"{1e9 / s.mean:,.0f}",
                     f"{len(s.ns) * 1e9 / s.wall_ns:,.0f}",
                     "—" if side == MW else f"{mw.median / s.median:.2f}x"])
    out += [f"### Writes: {r.n:,} records into one scope, one durable transaction each", "",
            table(["store", "median µs", "p95 µs", "p99 µs", "writes/s (1/mean)", "writes/s (total)",
                   "memwarden median / this"], rows, right=[False, *[True] * 6]), ""]

    if r.concurrent:
        c0 = r.concurrent[0]
        rows = [[c.label, str(c.threads), f"{c.writes:,}", f"{c.per_s:,.0f}", us(c.latency.median),
                 us(c.latency.pct(95)), "—" if c.commits is None else f"{c.writes / max(c.commits, 1):.1f}"]
                for c in r.concurrent]
        out += [f"### Concurrent writers: {c0.threads} threads at once, each in its own scope, every write "
                "acknowledged only once durable", "",
                table(["store", "threads", "writes", "writes/s (total)", "median µs", "p95 µs",
                       "writes per commit"], rows, right=[False, *[True] * 6]), ""]

    rows = [[r.read_labels[k], us(s.median), us(s.pct(95)), us(s.pct(99))] for k, s in r.reads.items()]
    out += [f"### Reads of that scope ({r.n:,} records), {r.repeat} repetitions each", "",
            table(["operation", "median µs", "p95 µs", "p99 µs"], rows), ""]

    rows = [[r.snapshot_labels[k], ms(s.median), ms(s.pct(95)), ms(s.pct(99))] for k, s in r.snapshot.items()]
    out += [f"### Snapshot build: session start (frozen block + sha256 + session row + 2 audit rows, "
            f"durable) for a scope of {r.snapshot_scope:,} records, {r.repeat} repetitions", "",
            table(["operation", "median ms", "p95 ms", "p99 ms"], rows), ""]

    if MW_PG in r.writes:
        out += [pg_next_to_sqlite(r), ""]

    ratio = mw.median / lgd.median
    throughput = len(mw.ns) * 1e9 / mw.wall_ns
    throughput_n = len(mwn.ns) * 1e9 / mwn.wall_ns
    snap, stress = r.snapshot["mw_session"], r.snapshot["mw_session_due"]
    verdict = [
        [f"memwarden (full) median per write ≤ {MAX_RATIO}x LangGraph `SqliteStore` as shipped", f"≤ {MAX_RATIO}x",
         f"{ratio:.2f}x ({us(mw.median)} vs {us(lgd.median)} µs)", "PASS" if ratio <= MAX_RATIO else "FAIL"],
        ["stricter: memwarden (full) vs LangGraph tuned to WAL + synchronous=FULL", f"≤ {MAX_RATIO}x",
         f"{mw.median / lgw.median:.2f}x ({us(mw.median)} vs {us(lgw.median)} µs)",
         "pass" if mw.median / lgw.median <= MAX_RATIO else "FAIL"],
        ["memwarden durable writes/s, durability=full, one writer (fsync per commit)", f"≥ {MIN_WRITES_PER_S:,}/s",
         f"{throughput:,.0f}/s", "PASS" if throughput >= MIN_WRITES_PER_S else "FAIL"],
        *([[f"memwarden durable writes/s, durability=full, {r.concurrent[0].threads} concurrent writers "
            "(group commit)", f"≥ {MIN_WRITES_PER_S:,}/s", f"{r.concurrent[0].per_s:,.0f}/s",
            "PASS" if r.concurrent[0].per_s >= MIN_WRITES_PER_S else "FAIL"]] if r.concurrent else []),
        ["memwarden durable writes/s, durability=normal (survives kill -9)", f"≥ {MIN_WRITES_PER_S:,}/s",
         f"{throughput_n:,.0f}/s", "PASS" if throughput_n >= MIN_WRITES_PER_S else "FAIL"],
        [f"snapshot build (session start), scope of {r.snapshot_scope:,}, median",
         f"≤ {MAX_SNAPSHOT_MS:g} ms",
         f"{ms(snap.median)} ms (p95 {ms(snap.pct(95))} ms)",
         "PASS" if snap.median / 1e6 <= MAX_SNAPSHOT_MS else "FAIL"],
        ["(stress) the same with every reminder due", f"≤ {MAX_SNAPSHOT_MS:g} ms",
         f"{ms(stress.median)} ms (p95 {ms(stress.pct(95))} ms)",
         "pass" if stress.median / 1e6 <= MAX_SNAPSHOT_MS else "fail"],
    ]
    out += ["### Targets (issue 2, acceptance 4)", "",
            table(["target", "goal", "measured", "result"], verdict, right=[False, True, True, False])]
    return "\n".join(out) + "\n"


def pg_next_to_sqlite(r: Results) -> str:
    """``--postgres``: each operation's median on PostgreSQL over its median on SQLite, measured in the same run
    (memwarden at durability=full against memwarden at full; LangGraph as shipped on both)."""
    conc = {c.label: c for c in r.concurrent}

    def conc_of(prefix: str) -> Concurrent | None:
        return next((c for label, c in conc.items() if label.startswith(prefix)), None)

    def row(what: str, pg: float, lite: float, unit: str = "µs") -> list[str]:
        fmt = (lambda v: ms(v)) if unit == "ms" else (lambda v: us(v))
        return [what, fmt(lite), fmt(pg), f"{pg / lite:.2f}x"]

    rows = [row("memwarden `session.save`", r.writes[MW_PG].median, r.writes[MW].median),
            row("LangGraph `put`", r.writes[LG_PG].median, r.writes[LG_DEFAULT].median)]
    for pg_key, lite_key, what in (("mw_pg_view", "mw_view", "memwarden `session.view(limit=100)`"),
                                   ("mw_pg_list", "mw_list", "memwarden `service.list_records(limit=100)`"),
                                   ("mw_pg_get", "mw_get", "memwarden `service.get(id)`"),
                                   ("mw_pg_view_id", "mw_view_id", "memwarden `session.view(id)`"),
                                   ("lgp_search", "lgd_search", "LangGraph `search(ns, limit=100)`"),
                                   ("lgp_get", "lgd_get", "LangGraph `get(ns, key)`")):
        if pg_key in r.reads:
            rows.append(row(what, r.reads[pg_key].median, r.reads[lite_key].median))
    for case, what in (("", "memwarden session start"), ("_due", "memwarden session start, stress")):
        if "mw_pg_session" + case in r.snapshot:
            rows.append(row(what, r.snapshot["mw_pg_session" + case].median, r.snapshot["mw_session" + case].median,
                            "ms"))
    mw_c, mwp_c = conc_of("memwarden `session.save`"), conc_of("memwarden on PostgreSQL")
    lg_c, lgp_c = conc_of("LangGraph `SqliteStore.put` (default)"), conc_of("LangGraph `PostgresStore.put`")
    extra = []
    for lite_c, pg_c, what in ((mw_c, mwp_c, "memwarden"), (lg_c, lgp_c, "LangGraph")):
        if lite_c is not None and pg_c is not None:
            extra.append([f"{what}, {pg_c.threads} concurrent writers: writes/s", f"{lite_c.per_s:,.0f}",
                          f"{pg_c.per_s:,.0f}", f"{pg_c.per_s / lite_c.per_s:.2f}x"])
    return "\n".join([
        "### PostgreSQL next to SQLite (same run; median on PostgreSQL / median on SQLite)", "",
        table(["operation", "SQLite", "PostgreSQL", "PostgreSQL / SQLite"], rows + extra,
              right=[False, True, True, True]), "",
        "(times in µs, session start in ms; the concurrent rows are throughputs: above 1.00x PostgreSQL is faster; "
        "LangGraph's SQLite row is its shipped default, rollback journal)"])


def failed(r: Results) -> bool:
    mw = r.writes[MW]
    best = max([len(mw.ns) * 1e9 / mw.wall_ns, *(c.per_s for c in r.concurrent[:1])])
    return (mw.median / r.writes[LG_DEFAULT].median > MAX_RATIO or best < MIN_WRITES_PER_S
            or r.snapshot["mw_session"].median / 1e6 > MAX_SNAPSHOT_MS)


class _TimedConn:
    """Diagnostics only: stands in for a ``sqlite3.Connection`` and times every statement by its text."""

    def __init__(self, conn: sqlite3.Connection, acc: dict[str, list[int]]) -> None:
        self._conn, self._acc = conn, acc
        self._names: dict[str, str] = {}

    def _name(self, sql: str) -> str:
        name = self._names.get(sql)
        if name is None:
            name = self._names[sql] = " ".join(sql.split())[:48]
        return name

    def execute(self, sql: str, params: Sequence[object] = ()) -> sqlite3.Cursor:
        t = time.perf_counter_ns()
        cur = self._conn.execute(sql, params)
        self._acc.setdefault(self._name(sql), []).append(time.perf_counter_ns() - t)
        return cur

    def executemany(self, sql: str, rows: Sequence[Sequence[object]]) -> sqlite3.Cursor:
        t = time.perf_counter_ns()
        cur = self._conn.executemany(sql, rows)
        self._acc.setdefault(self._name(sql), []).append(time.perf_counter_ns() - t)
        return cur

    def cursor(self) -> _TimedConn:  # LangGraph executes through a cursor of the connection
        return self

    def close(self) -> None:  # the cursor LangGraph closes is this proxy; the connection stays open
        return None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


class _NoRow:
    lastrowid = 0

    def fetchone(self) -> None:
        return None


class _SkipConn:
    """Diagnostics only: drops statements starting with one of ``prefixes``, to price what they cost. A store
    driven through it is *not* a valid memwarden (no FTS or no audit chain); it never serves the benchmark."""

    def __init__(self, conn: sqlite3.Connection, prefixes: tuple[str, ...]) -> None:
        self._conn, self._prefixes = conn, prefixes

    def execute(self, sql: str, params: Sequence[object] = ()) -> sqlite3.Cursor | _NoRow:
        return _NoRow() if sql.lstrip().startswith(self._prefixes) else self._conn.execute(sql, params)

    def executemany(self, sql: str, rows: Sequence[Sequence[object]]) -> sqlite3.Cursor | _NoRow:
        return _NoRow() if sql.lstrip().startswith(self._prefixes) else self._conn.executemany(sql, rows)

    def cursor(self) -> _SkipConn:  # LangGraph executes through a cursor of the connection
        return self

    def close(self) -> None:  # the real connection is left to the garbage collector
        return None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


_FTS = ("INSERT INTO memories_fts",)
_INDEXES = (*_FTS, "INSERT INTO memory_dupkeys", "SELECT 1 FROM memory_dupkeys")  # what issue 5 adds to a save
_AUDIT = ("SELECT seq, hash FROM audit", "INSERT INTO audit", "INSERT OR IGNORE INTO audit_reads",
          "INSERT OR REPLACE INTO meta VALUES ('audit_head'")


def marginal_costs(n: int, seed: int, tmp: Path) -> str:
    """The same saves, interleaved, with one part removed or the sync level changed: what each part costs."""
    items = make_items(n, seed + 5, [("episode", 1.0)], datetime.now(UTC))
    variants: dict[str, tuple[tuple[str, ...], str]] = {
        "memwarden as shipped (synchronous=FULL)": ((), "FULL"),
        "memwarden without the FTS insert": (_FTS, "FULL"),
        "memwarden without its retrieval indexes (FTS terms, near-duplicate key + lookup)": (_INDEXES, "FULL"),
        "memwarden without the audit row": (_AUDIT, "FULL"),
        "memwarden without FTS and audit": (_FTS + _AUDIT, "FULL"),
        "memwarden, synchronous=NORMAL (survives kill -9, not power loss)": ((), "NORMAL"),
        "memwarden, synchronous=OFF (CPU + write syscalls only)": ((), "OFF"),
        "memwarden, every SQL statement skipped (Python only)": (("",), "FULL"),
    }
    sides: dict[str, Callable[[Item], None]] = {}
    with ExitStack() as stack:
        for i, (name, (skip, sync)) in enumerate(variants.items()):
            svc = stack.enter_context(memwarden.open(tmp / f"marginal-{i}.db", key=secrets.token_hex(32),
                                                     policy=bench_policy(n, 0)))
            svc.backend.conn.execute(f"PRAGMA synchronous={sync}")
            sess = stack.enter_context(svc.session(memwarden.Scope(TENANT, "u-marginal", AGENT)))
            if skip:
                svc.backend.conn = _SkipConn(svc.backend.conn, skip)  # type: ignore[assignment]
            sides[name] = saver(sess)
        for sync in ("FULL", "OFF", "skip"):
            lg = stack.enter_context(open_langgraph(tmp / f"marginal-lg-{sync}.db", wal=True))
            if sync == "skip":
                lg.conn = _SkipConn(lg.conn, ("",))
                name = "LangGraph put, every SQL statement skipped (Python only)"
            else:
                lg.conn.execute(f"PRAGMA synchronous={sync}")
                name = f"LangGraph put (WAL), synchronous={sync}"
            sides[name] = putter(lg, (TENANT, "u-marginal", "memories"))
        got = timed_chunks(sides, items, 100, "")
    base = got["LangGraph put (WAL), synchronous=FULL"].median
    rows = [[name, us(v.median), us(v.pct(95)), f"{1e9 / v.mean:,.0f}", f"{v.median / base:.2f}x"]
            for name, v in got.items()]
    return "\n".join([f"#### What each part costs: {n:,} saves per variant, interleaved (diagnostic variants "
                      "are not valid memwarden stores)", "",
                      table(["variant", "median µs", "p95 µs", "writes/s (1/mean)", "median / LangGraph WAL"],
                            rows), ""])


def wal_frames_by_btree(conn: sqlite3.Connection, wal: Path, commits: int) -> list[tuple[str, float]]:
    """Which tables and indexes the WAL frames written since the last TRUNCATE checkpoint belong to."""
    page = conn.execute("PRAGMA page_size").fetchone()[0]
    raw = wal.read_bytes() if wal.exists() else b""
    try:
        owner = dict(conn.execute("SELECT pageno, name FROM dbstat"))
    except sqlite3.OperationalError:  # SQLite built without dbstat
        owner = {}
    counts: dict[str, int] = {}
    for off in range(32, len(raw) - 23, 24 + page):
        name = owner.get(int.from_bytes(raw[off:off + 4], "big"), "?")
        counts[name] = counts.get(name, 0) + 1
    return sorted(((k, v / commits) for k, v in counts.items()), key=lambda kv: -kv[1])


def diagnose(n: int, seed: int, tmp: Path, top: int = 25) -> str:
    """Where a durable memwarden save spends its time, next to LangGraph (WAL, synchronous=FULL):
    per-statement SQL time, WAL frames per commit by B-tree, then a cProfile of the whole save path."""
    # distinct records for each part: a record saved twice is a near-duplicate (Q3) and stores nothing new
    every = make_items(2 * n + 600, seed + 4, [("episode", 1.0)], datetime.now(UTC))
    warm, items, wal_items, prof_items = every[:300], every[300:300 + n], every[300 + n:600 + n], every[600 + n:]
    ns = (TENANT, "u-diag", "memories")
    out: list[str] = []
    with memwarden.open(tmp / "diag.db", key=secrets.token_hex(32), policy=bench_policy(2 * n + 600, 0)) as svc, \
            svc.session(memwarden.Scope(TENANT, "u-diag", AGENT)) as s, \
            open_langgraph(tmp / "diag-langgraph.db", wal=True) as lg:
        for it in warm:
            s.save(it.content, kind=it.kind)
            lg.put(ns, it.key, {"kind": it.kind, "content": it.content})
        real_mw, real_lg = svc.backend.conn, lg.conn
        # 1. per-statement SQL time (the COMMIT carries the fdatasync of the WAL)
        acc_mw: dict[str, list[int]] = {}
        acc_lg: dict[str, list[int]] = {}
        svc.backend.conn = _TimedConn(real_mw, acc_mw)  # type: ignore[assignment]
        lg.conn = _TimedConn(real_lg, acc_lg)
        tot_mw, tot_lg = Series(), Series()
        for it in items:
            t = time.perf_counter_ns()
            s.save(it.content, kind=it.kind)
            tot_mw.ns.append(time.perf_counter_ns() - t)
            t = time.perf_counter_ns()
            lg.put(ns, it.key, {"kind": it.kind, "content": it.content})
            tot_lg.ns.append(time.perf_counter_ns() - t)
        svc.backend.conn, lg.conn = real_mw, real_lg
        for title, acc, tot in (("memwarden session.save", acc_mw, tot_mw),
                                ("LangGraph put (WAL, synchronous=FULL)", acc_lg, tot_lg)):
            rows = []
            sql_mean = 0.0
            for name, lat in sorted(acc.items(), key=lambda kv: -sum(kv[1])):
                per = sum(lat) / len(tot.ns)
                sql_mean += per
                rows.append([f"`{name}`", us(statistics.median(lat)), us(per)])
            rows.append(["**all SQL**", "", us(sql_mean)])
            rows.append(["**outside SQL (Python)**", "", us(tot.mean - sql_mean)])
            rows.append(["**whole call**", us(tot.median), us(tot.mean)])
            out += [f"#### {title}: time per statement, {n:,} writes", "",
                    table(["statement", "median µs", "mean µs per write"], rows), ""]
        # 2. WAL frames (pages) each commit writes and syncs, by B-tree
        for title, conn, path, write in (
            ("memwarden", real_mw, tmp / "diag.db-wal", lambda it: s.save(it.content, kind=it.kind)),
            ("LangGraph (WAL)", real_lg, tmp / "diag-langgraph.db-wal",
             lambda it: lg.put(ns, it.key, {"kind": it.kind, "content": it.content})),
        ):
            conn.execute("PRAGMA wal_autocheckpoint=0")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            k = len(wal_items)
            for it in wal_items:
                write(it)
            frames = wal_frames_by_btree(conn, path, k)
            conn.execute("PRAGMA wal_autocheckpoint=1000")
            rows = [[f"`{name}`", f"{v:.2f}"] for name, v in frames]
            rows.append(["**total**", f"{sum(v for _, v in frames):.2f}"])
            page = conn.execute("PRAGMA page_size").fetchone()[0]
            out += [f"#### {title}: WAL frames ({page:,}-byte pages) written and synced per commit", "",
                    table(["B-tree", "frames per commit"], rows), ""]
        # 3. cProfile of the memwarden save path
        prof = cProfile.Profile()
        prof.enable()
        for it in prof_items:
            s.save(it.content, kind=it.kind)
        prof.disable()
    buf = io.StringIO()
    st = pstats.Stats(prof, stream=buf).strip_dirs()
    st.sort_stats("tottime").print_stats(top)
    out += [f"#### cProfile of {n:,} memwarden saves (own time; the profiler inflates Python costs)", "",
            "```", buf.getvalue().strip(), "```", ""]
    out.append(marginal_costs(n, seed, tmp))
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--n", type=int, default=10_000, help="records written to each store (default 10000)")
    ap.add_argument("--snapshot-scope", type=int, default=1_000,
                    help="records in the scope whose session start is timed (default 1000)")
    ap.add_argument("--repeat", type=int, default=200,
                    help="repetitions of each read and snapshot (default 200)")
    ap.add_argument("--chunk", type=int, default=250, help="writes per side before rotating (default 250)")
    ap.add_argument("--warmup", type=int, default=100, help="untimed writes per store first (default 100)")
    ap.add_argument("--threads", type=int, default=8,
                    help="concurrent writers per store in the concurrency run (default 8; 1 skips it)")
    ap.add_argument("--concurrent", type=int, default=4_000,
                    help="records written by the concurrent writers of each store, two rounds (default 4000)")
    ap.add_argument("--seed", type=int, default=2, help="seed of the generated records (default 2)")
    ap.add_argument("--dir", type=Path, default=None,
                    help="where the temporary databases go (default: $TMPDIR)")
    ap.add_argument("--out", type=Path, default=None, help="also write the markdown tables to this file")
    ap.add_argument("--profile", type=int, default=0, metavar="N",
                    help="after the run, diagnose N more saves: SQL time per statement, WAL frames per "
                         "commit by B-tree, cProfile")
    ap.add_argument("--strict", action="store_true", help="exit 1 if a target fails")
    ap.add_argument("--postgres", default=None, metavar="ADMIN_URL",
                    help="also run every operation on PostgreSQL: memwarden on a database migrated for the run, "
                         "LangGraph's PostgresStore on another, both created on this server and dropped after "
                         "(e.g. postgresql://postgres@127.0.0.1:5432/postgres)")
    args = ap.parse_args(argv)
    if args.n < 100 or args.snapshot_scope < 1 or args.repeat < 1 or args.chunk < 1:
        ap.error("need --n >= 100 and positive --snapshot-scope, --repeat and --chunk")

    with tempfile.TemporaryDirectory(prefix="memwarden-bench-", dir=args.dir) as d:
        tmp = Path(d)
        os.environ.setdefault("MEMWARDEN_ANCHOR_DIR", str(tmp / "anchors"))  # the temporary stores' anchors (I5)
        with ExitStack() as stack:
            args.pg = None
            if args.postgres:
                if _postgres.langgraph_postgres() is None:
                    sys.exit("--postgres needs langgraph-checkpoint-postgres: .venv/bin/pip install -e '.[dev,bench]'")
                args.pg = stack.enter_context(_postgres.databases(args.postgres, "mwbench_store"))
            results = run(args, tmp)
        text = report(results)
        print(text)
        if args.out:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            exe = os.path.relpath(sys.executable) if sys.executable.startswith(os.getcwd()) else "python"
            cmd = f"{exe} benchmarks/bench_store.py " + " ".join(sys.argv[1:] if argv is None else argv)
            args.out.write_text(f"Command: `{cmd.strip()}`\n\n{text}", encoding="utf-8")
            print(f"wrote {args.out}", file=sys.stderr)
        if args.profile:
            print(f"diagnosing {args.profile:,} saves", file=sys.stderr)
            diag = diagnose(args.profile, args.seed, tmp)
            print(diag)
            if args.out:
                with args.out.open("a", encoding="utf-8") as fh:
                    fh.write("\n### Diagnosis of the write path (`--profile`)\n\n" + diag)
    return 1 if args.strict and failed(results) else 0


if __name__ == "__main__":
    sys.exit(main())
