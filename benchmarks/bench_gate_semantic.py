"""What the gate's semantic layer (gate/semantic.py, the ``e5`` extra) costs per candidate, next to the gate without it.

Times ``Gate.check`` on the same candidates with ``Policy(semantic_gate=False)`` (the baseline, in the same process)
and ``True``, interleaved candidate by candidate: ordinary short memories (the layer runs on every one of them, since
nothing else holds them), and 10 KB benign notes (the layer reads at most ``MAX_WINDOWS`` windows). Prints medians,
p95 and the ratio.

    .venv/bin/python benchmarks/bench_gate_semantic.py [--n 300]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from memwarden.gate import Candidate, Gate
from memwarden.policy import Policy

SHORT = ["The user's sister lives in Porto and visits every August.", "User prefers metric units and 24-hour time.",
         "The team ships on Thursdays after the 2 pm sync.", "User is allergic to penicillin.",
         "The user's dog is called Biscuit and is nine years old.", "User's preferred airline is KLM.",
         "El usuario trabaja de lunes a jueves desde casa.", "Der Nutzer spielt dienstags Volleyball.",
         "用户喜欢简短的回答。", "The user is learning Japanese and practises with Anki every morning."]


def _times(gate: Gate, texts: list[str]) -> list[float]:
    out = []
    for t in texts:
        c = Candidate(content=t, kind="fact", source="model")
        start = time.perf_counter()
        gate.check(c)
        out.append((time.perf_counter() - start) * 1e3)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=300, help="short candidates per side (default 300)")
    args = ap.parse_args()
    rng = random.Random(7)
    shorts = [f"{rng.choice(SHORT)} ({i})" for i in range(args.n)]
    longs = [" ".join(rng.choice(SHORT) for _ in range(200))[:10_240] for _ in range(max(5, args.n // 30))]
    off, on = Gate(Policy(semantic_gate=False)), Gate(Policy(semantic_gate=True))
    _times(on, shorts[:5])  # load the model once
    rows = []
    for name, texts in (("ordinary memory, <= 200 chars", shorts), ("10 KB benign note", longs)):
        a, b = [], []
        for t in texts:  # interleaved: both sides see the same load
            a += _times(off, [t])
            b += _times(on, [t])
        ma, mb = statistics.median(a), statistics.median(b)
        rows.append((name, len(texts), ma, statistics.quantiles(a, n=20)[-1], mb, statistics.quantiles(b, n=20)[-1],
                     mb / ma))
    print("| candidates | n | without layer: median / p95 ms | with layer: median / p95 ms | ratio of medians |")
    print("|:--|--:|--:|--:|--:|")
    for name, n, ma, pa, mb, pb, r in rows:
        print(f"| {name} | {n} | {ma:.3f} / {pa:.3f} | {mb:.3f} / {pb:.3f} | {r:.1f}x |")


if __name__ == "__main__":
    main()
