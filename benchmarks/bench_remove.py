"""Remove benchmark (issue 12 item 15, D3): what deleting a record costs now that its transaction compacts the
FTS5 index, at several store sizes.

For each size, a store of that many episodes (1,000 per scope, written with ``write_many``) is built once; then,
``--repeat`` times, a record with words of its own is saved in a random scope (untimed) and ``Session.remove``
of it is timed (durability full, as the store defaults: the delete, its audit tombstone, the FTS5 'optimize'
before the COMMIT, and the WAL checkpoint after it). Last, ``Session.clear`` of one whole scope (1,000 records,
one transaction) is timed once. Every figure is a median of ``perf_counter`` over the repetitions.

    .venv/bin/python benchmarks/bench_remove.py [--sizes 1000,10000,100000] [--repeat 11] [--out FILE]
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import secrets
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import memwarden
from _report import cpu_model, table
from memwarden.service import WriteResult

SCOPE_SIZE = 1_000
_WORDS = ("deploy", "staging", "cluster", "billing", "invoice", "release", "review", "incident", "roadmap", "sprint",
          "dashboard", "latency", "migration", "schema", "pipeline", "customer", "rollback", "index", "cache", "quota")


def _episode(rng: random.Random, i: int) -> str:
    return f"On day {i % 400} we discussed the " + " ".join(rng.choices(_WORDS, k=rng.randint(6, 18))) + "."


def build(path: Path, n: int, key: str, seed: int) -> list[memwarden.Scope]:
    rng = random.Random(seed)
    scopes = [memwarden.Scope("bench", f"u{i}", "agent-1") for i in range((n + SCOPE_SIZE - 1) // SCOPE_SIZE)]
    with memwarden.open(path, key=key, durability="normal") as store:
        for j, scope in enumerate(scopes):
            count = min(SCOPE_SIZE, n - j * SCOPE_SIZE)
            with store.session(scope) as s:
                for start in range(0, count, 500):
                    items = [{"content": _episode(rng, j * SCOPE_SIZE + start + k), "kind": "episode"}
                             for k in range(min(500, count - start))]
                    bad = [r for r in store.write_many(s.context, items) if not isinstance(r, WriteResult)]
                    if bad:
                        raise SystemExit(f"build failed: {bad[0]}")
    return scopes


def measure(path: Path, scopes: Sequence[memwarden.Scope], key: str, repeat: int, seed: int
            ) -> tuple[list[float], float]:
    rng = random.Random(seed)
    lat: list[float] = []
    with memwarden.open(path, key=key) as store:
        for _ in range(repeat):
            with store.session(rng.choice(scopes)) as s:
                words = " ".join(f"zq{rng.getrandbits(40):x}" for _ in range(4))
                mid = s.save(f"The vault code words are {words}", kind="episode").id
                assert mid
                t = time.perf_counter()
                s.remove(mid)
                lat.append(time.perf_counter() - t)
        with store.session(scopes[-1]) as s:
            t = time.perf_counter()
            s.clear()
            clear = time.perf_counter() - t
    return lat, clear


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--sizes", default="1000,10000,100000", help="store sizes, comma-separated")
    ap.add_argument("--repeat", type=int, default=11, help="removes timed per size (default 11)")
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--dir", type=Path, default=None, help="where the temporary databases go (default $TMPDIR)")
    ap.add_argument("--out", type=Path, default=None, help="also write the markdown table to this file")
    args = ap.parse_args(argv)
    sizes = [int(x) for x in args.sizes.split(",") if x.strip()]
    key = secrets.token_hex(32)
    rows = []
    with tempfile.TemporaryDirectory(prefix="memwarden-bench-remove-", dir=args.dir) as d:
        for n in sizes:
            path = Path(d) / f"remove-{n}.db"
            print(f"building {n:,} records", file=sys.stderr)
            scopes = build(path, n, key, args.seed)
            with sqlite3.connect(path) as conn:
                pages, size = conn.execute("SELECT count(*), coalesce(sum(length(block)), 0)"
                                           " FROM memories_fts_data").fetchone()
            conn.close()
            lat, clear = measure(path, scopes, key, args.repeat, args.seed)
            ms = sorted(x * 1e3 for x in lat)
            rows.append([f"{n:,}", f"{size / 1e6:.2f} MB in {pages:,} rows", f"{statistics.median(ms):.2f}",
                         f"{ms[0]:.2f}", f"{ms[-1]:.2f}", f"{clear * 1e3:.0f}"])
            path.unlink()
    text = (f"{os.cpu_count()} CPUs ({cpu_model()}), Python {platform.python_version()}, "
            f"SQLite {sqlite3.sqlite_version}, {args.repeat} removes per size\n\n"
            + table(["records", "FTS5 index", "remove median ms", "min ms", "max ms",
                     f"clear of {SCOPE_SIZE:,} ms"], rows))
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
