"""Search benchmark (issue 5, acceptance 2): memwarden ``service.search`` vs LangGraph ``SqliteStore.search``
with the same embedder wired into both, for scopes of 1k, 10k and 100k records in a database holding ``--total``
records overall (the rest in other scopes), in one process.

memwarden is measured twice on the same database: its **default** search, through a second service opened on the
file as a user would (no embedder configured: lexical ranking, no vectors read), and the **opt-in hybrid** ranking
with the hash-embedder vectors the build wrote (the ones LangGraph searches too).

Build: memwarden's database is filled with ``MemoryService.write_many`` — per record exactly what ``write`` runs
(gate, taint, sign, store: row, FTS terms, vector; audit), ``--batch`` records per durable transaction — so a
million records build in minutes instead of a million fsyncs. LangGraph gets the same texts through
``SqliteStore.batch`` of ``PutOp`` (it embeds them with the same ``HashEmbedder``).

Queries: for each measured scope, ``--queries`` records are drawn and a query is made from 5 of their content
words; recall@5 = the drawn record is among the 5 results. The three searches take turns per query, in rotating
order.

    .venv/bin/python benchmarks/bench_search.py [--total 1000000] [--queries 200] [--dir DIR] [--out FILE]
                                               [--reuse DIR]   # measure an earlier run's databases again
                                               [--postgres ADMIN_URL]

``--postgres`` (issue 14) builds the same records into a PostgreSQL database migrated for the run (served through
its application role, dropped afterwards) and measures memwarden's default and hybrid search there too, in the
same rotation. LangGraph's ``PostgresStore`` is not measured: its vector search needs the pgvector extension
(without an index configured its ``search(query=…)`` does not rank by the query at all).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import _postgres
import memwarden
from _report import cpu_model, table
from bench_store import make_items
from memwarden.policy import DEFAULT_LIMITS, KindLimits, Policy
from memwarden.retrieval import HashEmbedder, Ranking
from memwarden.retrieval.tokenize import STOPWORDS
from memwarden.service import Context

try:
    import pysqlite3.dbapi2 as lg_sqlite  # type: ignore[import-not-found, unused-ignore]
    from langgraph.store.base import PutOp
    from langgraph.store.sqlite import SqliteStore
except ImportError:  # pragma: no cover
    sys.exit("langgraph-checkpoint-sqlite / pysqlite3-binary missing: .venv/bin/pip install -e '.[dev,bench]'")

SIZES = (1_000, 10_000, 100_000)
TARGET_P95_MS = 5.0  # at 10k records per scope
TARGET_RATIO = 2.0  # memwarden at least 2x faster than LangGraph
HYBRID = Ranking(mode="hybrid")  # lexical + the scope's vectors (with the hash embedder the store was built with)


def pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[max(0, math.ceil(p / 100 * len(s)) - 1)]


def build_memwarden(svc: memwarden.MemoryService, scope: memwarden.Scope, texts: list[str], batch: int) -> None:
    ctx = Context(scope, session_id=f"bench-{scope.user}", source_type="user", actor="system:bench")
    for i in range(0, len(texts), batch):
        svc.write_many(ctx, [{"content": t, "kind": "episode"} for t in texts[i:i + batch]])


def build_langgraph(store: SqliteStore, ns: tuple[str, ...], keys: list[str], texts: list[str], batch: int) -> None:
    for i in range(0, len(texts), batch):
        store.batch([PutOp(ns, k, {"text": t}) for k, t in zip(keys[i:i + batch], texts[i:i + batch], strict=True)])


def query_for(rng: random.Random, text: str) -> str:
    words = [w.strip(".,;") for w in text.split() if w.lower().strip(".,;") not in STOPWORDS and len(w) > 2]
    return " ".join(rng.sample(words, min(5, len(words))))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--total", type=int, default=1_000_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--batch", type=int, default=2_000)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--out", default=None)
    ap.add_argument("--reuse", default=None, metavar="DIR",
                    help="measure the databases an earlier run built in DIR (same --total) instead of building")
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--postgres", default=None, metavar="ADMIN_URL",
                    help="also build and search memwarden on PostgreSQL (a database created on this server for the "
                         "run, dropped after); not with --reuse")
    args = ap.parse_args()
    if args.postgres and args.reuse:
        ap.error("--postgres builds its database in the run: it cannot --reuse one")
    with ExitStack() as stack:
        pg = stack.enter_context(_postgres.databases(args.postgres, "mwbench_search")) if args.postgres else None
        return run(args, pg)


def run(args: argparse.Namespace, pg: _postgres.PgTarget | None) -> int:
    from datetime import UTC, datetime

    now = datetime.now(UTC)
    emb = HashEmbedder()
    limits = dict(DEFAULT_LIMITS)
    limits["episode"] = KindLimits(10_000_000, 1 << 40)
    if args.reuse:
        tmp = args.reuse
        if not (Path(tmp) / "mw.db").is_file() or not (Path(tmp) / "lg.db").is_file():
            sys.exit(f"--reuse {tmp}: no mw.db and lg.db there (an earlier run prints the directory it built)")
    else:
        tmp = tempfile.mkdtemp(prefix="memwarden-search-", dir=args.dir)
    svc = memwarden.open(Path(tmp) / "mw.db", policy=Policy(limits=limits), durability="normal")
    svc.retrieval.set_embedder(emb)  # for the opt-in hybrid side (and the build): not stored as the default
    # memwarden's default: the same database opened as a user would, with no embedder configured
    svc_default = memwarden.open(Path(tmp) / "mw.db", policy=Policy(limits=limits), durability="normal")
    if svc_default.retrieval.embedder.dim:
        sys.exit("benchmark invalid: $MEMWARDEN_EMBEDDER or the database chose an embedder; unset it")
    svc_pg = svc_pg_default = None
    if pg is not None:  # the same two services on PostgreSQL
        svc_pg = memwarden.open(pg.app_url, policy=Policy(limits=limits))
        svc_pg.retrieval.set_embedder(emb)
        svc_pg_default = memwarden.open(pg.app_url, policy=Policy(limits=limits))
        if svc_pg_default.retrieval.embedder.dim:
            sys.exit("benchmark invalid: $MEMWARDEN_EMBEDDER or the database chose an embedder; unset it")

    def embed(texts: list[str]) -> list[list[float]]:
        return emb.embed(texts).tolist()

    # LangGraph's vector search needs the sqlite-vec extension, which this interpreter's sqlite3 cannot load:
    # its connection comes from pysqlite3-binary (SQLite 3.51; memwarden runs on the interpreter's 3.40).
    lg_conn = lg_sqlite.connect(str(Path(tmp) / "lg.db"), isolation_level=None, check_same_thread=False)
    lg_conn.execute("PRAGMA journal_mode=WAL")
    lg_conn.execute("PRAGMA synchronous=NORMAL")
    lg = SqliteStore(lg_conn, index={"dims": emb.dim, "embed": embed, "fields": ["text"]})  # type: ignore[arg-type]
    lg.setup()
    sizes = [s for s in SIZES if s <= args.total]
    filler = args.total - sum(sizes)
    plan = [(f"scope-{s}", s) for s in sizes]
    per_filler = 10_000
    plan += [(f"other-{i}", min(per_filler, filler - i * per_filler)) for i in range(math.ceil(filler / per_filler))]
    data: dict[str, tuple[list[str], list[str]]] = {}
    pg_build_s = 0.0
    t0 = time.perf_counter()
    if args.reuse:
        held = svc.backend.query("SELECT count(*) FROM memories")[0][0]
        lg_held = lg_conn.execute("SELECT count(*) FROM store").fetchone()[0]
        # memwarden holds a little less than it was given: the gate rejects a few texts and near-duplicates
        # of the generator are kept once (the build does not count them either)
        if lg_held != args.total or not 0.99 * args.total <= held <= args.total:
            sys.exit(f"--reuse {tmp}: it holds {held:,} (memwarden) / {lg_held:,} (LangGraph) records, not --total "
                     f"{args.total:,}")
        print(f"reusing {tmp}: {held:,} memwarden records, {lg_held:,} LangGraph items", file=sys.stderr)
        for name, _count in plan[:len(sizes)]:  # the measured scopes' texts and LangGraph keys, as stored
            key_of = {json.loads(v)["text"]: k for k, v in lg_conn.execute(
                "SELECT key, value FROM store WHERE prefix = ?", (f"bench.{name}.agent",))}
            texts = [str(r[0]) for r in svc.backend.query(
                "SELECT content FROM memories WHERE tenant = 'bench' AND user_id = ? ORDER BY rowid", (name,))]
            data[name] = (texts, [key_of.get(t, "") for t in texts])
    for n, (name, count) in enumerate([] if args.reuse else plan):
        items = make_items(count, args.seed + n, [("episode", 1.0)], now)
        texts, keys = [it.content for it in items], [it.key for it in items]
        if name.startswith("scope-"):
            data[name] = (texts, keys)
        build_memwarden(svc, memwarden.Scope("bench", name, "agent"), texts, args.batch)
        if svc_pg is not None:
            t1 = time.perf_counter()
            build_memwarden(svc_pg, memwarden.Scope("bench", name, "agent"), texts, args.batch)
            pg_build_s += time.perf_counter() - t1
        build_langgraph(lg, ("bench", name, "agent"), keys, texts, args.batch)
        print(f"built {name}: {count} records ({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
    if pg is not None:  # statistics as autovacuum would have them on a running server (it runs every minute)
        _postgres.analyze(pg, args.postgres)
    build_s = time.perf_counter() - t0
    rows = []
    results: dict[str, Any] = {}
    rng = random.Random(args.seed)
    for name, (texts, keys) in data.items():
        scope = memwarden.Scope("bench", name, "agent")
        ctx = Context(scope, session_id="q", source_type="user", actor="system:bench")
        picks = rng.sample(range(len(texts)), min(args.queries, len(texts)))
        sides: dict[str, list[float]] = {"mw": [], "mwh": [], "lg": []}
        if svc_pg is not None:
            sides.update({"mw_pg": [], "mwh_pg": []})
        # side → (service, hybrid): the default search of a service opened without an embedder, or the
        # opt-in hybrid ranking of the one that built the vectors
        searchers: dict[str, tuple[memwarden.MemoryService, bool]] = {"mw": (svc_default, False), "mwh": (svc, True)}
        if svc_pg is not None and svc_pg_default is not None:
            searchers.update({"mw_pg": (svc_pg_default, False), "mwh_pg": (svc_pg, True)})
        hits = dict.fromkeys(sides, 0)
        for j, i in enumerate(picks):
            q = query_for(rng, texts[i])
            names = list(sides)
            for side in names[j % len(names):] + names[:j % len(names)]:  # the order rotates per query
                t = time.perf_counter_ns()
                if side == "lg":
                    got = lg.search(("bench", name, "agent"), query=q, limit=5)
                    sides[side].append((time.perf_counter_ns() - t) / 1e6)
                    hits[side] += any(it.key == keys[i] for it in got)
                    continue
                service, hybrid = searchers[side]
                found = (service.retrieval.search(ctx, q, 5, ranking=HYBRID) if hybrid
                         else service.search(ctx, q, k=5))
                sides[side].append((time.perf_counter_ns() - t) / 1e6)
                hits[side] += any(r.content == texts[i] for r in found)
        n = len(picks)
        results[name] = (sides["mw"], sides["lg"], sides["mwh"])
        for side, label in (("mw", "memwarden `service.search`, default (lexical, verified)"),
                            ("mw_pg", "memwarden on PostgreSQL `service.search`, default (lexical, verified)"),
                            ("mwh", "memwarden hybrid, hash embedder (opt-in, verified)"),
                            ("mwh_pg", "memwarden on PostgreSQL hybrid, hash embedder (opt-in, verified)"),
                            ("lg", "LangGraph `SqliteStore.search` (vector, hash embedder)")):
            if side not in sides:
                continue
            xs = sides[side]
            rows.append([f"{len(texts):,}", label, f"{statistics.median(xs):.2f}", f"{pct(xs, 95):.2f}",
                         f"{hits[side] / n:.3f}"])
        for side, label in (("mw", "default"), ("mwh", "hybrid")):
            rows.append(["", f"ratio LangGraph / memwarden {label} (p50, p95)",
                         f"{statistics.median(sides['lg']) / statistics.median(sides[side]):.1f}x",
                         f"{pct(sides['lg'], 95) / pct(sides[side], 95):.1f}x", ""])
        for side, label in (("mw", "default"), ("mwh", "hybrid")):
            if side + "_pg" in sides:
                pgx = sides[side + "_pg"]
                rows.append(["", f"ratio memwarden {label} PostgreSQL / SQLite (p50, p95)",
                             f"{statistics.median(pgx) / statistics.median(sides[side]):.1f}x",
                             f"{pct(pgx, 95) / pct(sides[side], 95):.1f}x", ""])
    built = f"reused {tmp}" if args.reuse else f"built in {tmp} in {build_s:.0f} s"
    if pg is not None:
        built += f", of which {pg_build_s:.0f} s the PostgreSQL build; {pg.server}"
    out = [f"bench_search: {args.total:,} records in each database ({built}), {cpu_model()}",
           "", table(["scope size", "store", "p50 ms", "p95 ms", "recall@5"], rows)]
    if "scope-10000" in results:
        mw, lgm, _mwh = results["scope-10000"]
        out += ["", table(["target (issue 5, acceptance 2)", "goal", "measured", "result"], [
            ["memwarden p95 at 10k records per scope", f"≤ {TARGET_P95_MS} ms", f"{pct(mw, 95):.2f} ms",
             "PASS" if pct(mw, 95) <= TARGET_P95_MS else "FAIL"],
            ["LangGraph p50 / memwarden p50 at 10k", f"≥ {TARGET_RATIO}x",
             f"{statistics.median(lgm) / statistics.median(mw):.1f}x",
             "PASS" if statistics.median(lgm) / statistics.median(mw) >= TARGET_RATIO else "FAIL"]])]
    text = "\n".join(out)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")
    svc.close()
    svc_default.close()
    for x in (svc_pg, svc_pg_default):
        if x is not None:
            x.close()
    lg_conn.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
