"""Paired A/B of a durable ``session.save`` between two source trees (issue 12, acceptance 4: "a save may not get
more than 10 % slower"). Each round runs one process per tree, alternating, on a fresh store: ``--saves`` saves of
short facts, the median of all but the first ``--warmup``. Prints each pair and the median ratio.

    .venv/bin/python benchmarks/bench_save_ab.py --base /tmp/base/src --new src [--pairs 6] [--durability full]

A benchmark, not a test: it prints a table and exits 0.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

CHILD = r"""
import os, random, statistics, sys, tempfile, time
d = tempfile.mkdtemp()
os.environ.update(MEMWARDEN_KEY="k" * 40, MEMWARDEN_ANCHOR_DIR=d, XDG_CONFIG_HOME=d)
import memwarden
saves, warmup, seed, durability = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
rng = random.Random(seed)
words = "user likes tea lives in lyon team uses python deploys friday review prefers dark mode short answers".split()
store = memwarden.open(os.path.join(d, "m.db"), durability=durability)
lat = []
with store.session(memwarden.Scope(tenant="acme", user="u1", agent="a")) as s:
    for i in range(saves):
        text = "User " + " ".join(rng.choice(words) for _ in range(8)) + f" {i}"
        t = time.perf_counter()
        s.save(text)
        lat.append(time.perf_counter() - t)
print(statistics.median(lat[warmup:]) * 1e6)
"""


def run(src: Path, args: argparse.Namespace, seed: int) -> float:
    env = {**os.environ, "PYTHONPATH": str(src.resolve())}
    out = subprocess.run([sys.executable, "-c", CHILD, str(args.saves), str(args.warmup), str(seed), args.durability],
                         env=env, capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", type=Path, required=True, help="src/ directory of the baseline tree")
    ap.add_argument("--new", type=Path, default=Path("src"), help="src/ directory of the tree measured (default src)")
    ap.add_argument("--pairs", type=int, default=6, help="alternating process pairs (default 6)")
    ap.add_argument("--saves", type=int, default=480, help="saves per process (default 480; a kind holds 500)")
    ap.add_argument("--warmup", type=int, default=60, help="first saves left out of the median (default 60)")
    ap.add_argument("--durability", choices=("full", "normal"), default="full")
    args = ap.parse_args()
    ratios = []
    print("| pair | base µs | new µs | new / base |\n|---:|---:|---:|---:|")
    for i in range(args.pairs):
        b, n = run(args.base, args, i), run(args.new, args, i)
        ratios.append(n / b)
        print(f"| {i + 1} | {b:,.0f} | {n:,.0f} | {n / b:.3f} |")
    print(f"\nmedian ratio {statistics.median(ratios):.3f} (durability={args.durability}, {args.saves} saves, "
          f"median of the last {args.saves - args.warmup})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
