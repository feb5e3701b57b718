"""Paired A/B of one library search on a 10k scope between two source trees (issue 13, acceptance 5 work: the CPU
of one search is what the GIL serialises under concurrent clients).

One long-lived child process per tree, each with its own store preloaded exactly as ``bench_server.py`` does
(``preload``: ``--records`` episodes in one scope, same seed, so the same texts), searched with
``bench_server.query()`` queries (2–3 words, ``k=5``). The parent alternates the children batch by batch
(``--batches`` of ``--per-batch`` searches, which tree goes first alternating too), so both see the same load on a
shared machine; only the paired ratios mean anything there. Each search is timed as a session does it: the library
``search`` (wall and CPU: ``time.perf_counter`` / ``time.process_time``), then its read-audit row (``log_reads``).

    .venv/bin/python benchmarks/bench_search_ab.py --base /tmp/search-ref-ccb725a/src [--new src]
                                                   [--records 10000] [--batches 10] [--per-batch 200]

Prints a table (medians over all timed searches, and the median of the per-batch ratios); a benchmark, not a
test: it exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

CHILD = r"""
import json, os, random, sys, tempfile, time
from pathlib import Path
d = Path(tempfile.mkdtemp(prefix="mwab"))
for k, sub in (("XDG_CONFIG_HOME", "config"), ("XDG_DATA_HOME", "data"), ("XDG_STATE_HOME", "state"),
               ("XDG_CACHE_HOME", "cache")):
    os.environ[k] = str(d / sub)
os.environ["MEMWARDEN_KEY_FILE"] = str(d / "config" / "memwarden" / "key")
os.environ["MEMWARDEN_ANCHOR_DIR"] = str(d / "config" / "memwarden" / "anchors")
sys.path.insert(0, sys.argv[1])
import memwarden
import bench_server as bs
from memwarden.scope import Scope
records, k = int(sys.argv[2]), int(sys.argv[3])
svc = memwarden.open(d / "ab.db")
bs.preload(svc, ["search-0"], records, 5)
rng = random.Random(1)
session = svc.session(Scope(bs.TENANT, "search-0", "agent"))
ctx = session.context
for _ in range(200):  # warm: postings, statement cache, audit chain walk
    found = svc.search(ctx, bs.query(rng), k=k)
    svc.log_reads(ctx, "read", found, {"via": "search"})
print("ready", flush=True)
for line in sys.stdin:
    n = int(line)
    out = {"wall": [], "cpu": [], "audit_wall": [], "audit_cpu": []}
    for _ in range(n):
        q = bs.query(rng)
        w0, c0 = time.perf_counter(), time.process_time()
        found = svc.search(ctx, q, k=k)
        w1, c1 = time.perf_counter(), time.process_time()
        svc.log_reads(ctx, "read", found, {"via": "search"})
        w2, c2 = time.perf_counter(), time.process_time()
        out["wall"].append(w1 - w0); out["cpu"].append(c1 - c0)
        out["audit_wall"].append(w2 - w1); out["audit_cpu"].append(c2 - c1)
    print(json.dumps(out), flush=True)
session.close()
"""


def start(src: Path, args: argparse.Namespace) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(src.resolve())}
    env.pop("MEMWARDEN_EMBEDDER", None)
    p = subprocess.Popen([sys.executable, "-c", CHILD, str(HERE), str(args.records), str(args.k)], env=env,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=tempfile.gettempdir())
    return p


def wait_ready(p: subprocess.Popen[str]) -> None:
    assert p.stdout is not None
    line = p.stdout.readline()
    if line.strip() != "ready":
        raise SystemExit(f"child failed to start: {line!r}")


def batch(p: subprocess.Popen[str], n: int) -> dict[str, list[float]]:
    assert p.stdin is not None and p.stdout is not None
    p.stdin.write(f"{n}\n")
    p.stdin.flush()
    return json.loads(p.stdout.readline())  # type: ignore[no-any-return]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", type=Path, required=True, help="src/ directory of the baseline tree")
    ap.add_argument("--new", type=Path, default=HERE.parent / "src", help="src/ of the tree measured (default: this)")
    ap.add_argument("--records", type=int, default=10_000, help="episodes in the searched scope (default 10000)")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--batches", type=int, default=10)
    ap.add_argument("--per-batch", type=int, default=200)
    args = ap.parse_args()
    sides = {"base": start(args.base, args), "new": start(args.new, args)}
    for p in sides.values():
        wait_ready(p)
    allv: dict[str, dict[str, list[float]]] = {s: {} for s in sides}
    ratios: dict[str, list[float]] = {}
    for i in range(args.batches):
        order = ("base", "new") if i % 2 == 0 else ("new", "base")
        got = {s: batch(sides[s], args.per_batch) for s in order}
        for s, d in got.items():
            for key, vals in d.items():
                allv[s].setdefault(key, []).extend(vals)
        for key in got["base"]:
            ratios.setdefault(key, []).append(statistics.median(got["new"][key]) / statistics.median(got["base"][key]))
    for p in sides.values():
        assert p.stdin is not None
        p.stdin.close()
        p.wait()
    labels = {"cpu": "search CPU", "wall": "search wall", "audit_cpu": "read-audit row CPU",
              "audit_wall": "read-audit row wall"}
    n = args.batches * args.per_batch
    print(f"{n} searches per tree, {args.records:,} records in the scope, k={args.k}, {args.batches} alternating"
          " batches\n")
    print("| measure (median per search) | base µs | new µs | new / base | per-batch ratios: median (min–max) |")
    print("|---|---:|---:|---:|---|")
    for key in ("cpu", "wall", "audit_cpu", "audit_wall"):
        b, m = statistics.median(allv["base"][key]) * 1e6, statistics.median(allv["new"][key]) * 1e6
        r = ratios[key]
        print(f"| {labels[key]} | {b:,.0f} | {m:,.0f} | {m / b:.3f} | {statistics.median(r):.3f}"
              f" ({min(r):.3f}–{max(r):.3f}) |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
