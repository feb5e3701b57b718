"""The gate's cost targets (issue 11 item 6) for one source tree, as JSON, so two trees can be timed in turn.

Uses ``bench_gate``'s own measurements: ``time_short`` (the rule layers' median on ≤ 200-character candidates of
the whole eval mix, and on LoCoMo observations alone), ``time_shapes`` (the 33 10 KB shapes) and ``time_long``
(eval texts of 2,000+ characters, per 10 KB). ``--side-by-side REF_TREE`` runs this tree and the reference in
alternating subprocesses and prints medians and ratios.

    PYTHONPATH=src .venv/bin/python benchmarks/gate_cost.py [--passes 3]
    PYTHONPATH=src .venv/bin/python benchmarks/gate_cost.py --side-by-side /tmp/gate-old --rounds 2
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def measure(passes: int) -> dict[str, Any]:
    import bench_gate as bg

    items, _ = bg.load_items(None)
    short = bg.time_short(items, passes, amg=False)
    obs = bg.time_short([it for it in items if it.set == "locomo.observations"], passes, amg=False)
    shapes = bg.time_shapes(passes)
    long = bg.per_10kb(bg.time_long(items, passes))
    return {"rules_median_us": short[bg.MW_RULES][0], "whole_median_us": short[bg.MW][0],
            "rules_median_locomo_us": obs[bg.MW_RULES][0],
            "slowest_shape": shapes[0][0], "slowest_shape_ms": shapes[0][2],
            "shapes_median_ms": statistics.median(r[2] for r in shapes),
            "shapes": {name: ms for name, _, ms in shapes},
            "long_n": len(long), "long_median_ms_per_10kb": statistics.median(long) if long else None,
            "long_p90_ms_per_10kb": long[int(0.9 * (len(long) - 1))] if long else None,
            "long_max_ms_per_10kb": long[-1] if long else None}


def _child(tree: Path, passes: int) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": f"{tree / 'src'}{os.pathsep}{HERE}"}
    out = subprocess.run([sys.executable, __file__, "--passes", str(passes)], env=env, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def side_by_side(ref: Path, rounds: int, passes: int) -> None:
    this = HERE.parent
    runs: dict[str, list[dict[str, Any]]] = {"ref": [], "new": []}
    for _ in range(rounds):
        runs["ref"].append(_child(ref, passes))
        runs["new"].append(_child(this, passes))
    keys = ("rules_median_us", "rules_median_locomo_us", "whole_median_us", "slowest_shape_ms", "shapes_median_ms",
            "long_median_ms_per_10kb", "long_p90_ms_per_10kb", "long_max_ms_per_10kb")
    print(f"| measure | reference {ref} | this tree | ratio |\n|---|---:|---:|---:|")
    for k in keys:
        a = statistics.median(r[k] for r in runs["ref"])
        b = statistics.median(r[k] for r in runs["new"])
        ra = ", ".join(f"{r[k]:.1f}" for r in runs["ref"])
        rb = ", ".join(f"{r[k]:.1f}" for r in runs["new"])
        print(f"| {k} | {a:.1f} ({ra}) | {b:.1f} ({rb}) | {a / b:.1f}x |")
    print("slowest shapes (this tree):", [(r["slowest_shape"], round(r["slowest_shape_ms"], 2)) for r in runs["new"]])
    print("slowest shapes (reference):", [(r["slowest_shape"], round(r["slowest_shape_ms"], 2)) for r in runs["ref"]])
    last = runs["new"][-1]["shapes"]
    print("this tree, every shape (ms):", json.dumps({k: round(v, 2) for k, v in last.items()}))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--side-by-side", type=Path, metavar="REF_TREE")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    if args.side_by_side:
        side_by_side(args.side_by_side, args.rounds, args.passes)
    else:
        print(json.dumps(measure(args.passes)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
