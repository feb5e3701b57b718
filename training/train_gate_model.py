"""Train the gate's learned layer (src/memwarden/gate/learned.py) and write it as package data.

    .venv/bin/python training/train_gate_model.py            # train, report held-out numbers, write the model
    .venv/bin/python training/train_gate_model.py --check    # report only, write nothing

Data: only text the project may redistribute, all of it in this repository (docs/gate.md lists it):

* ``tests/gate_corpus/attacks.jsonl`` and ``negatives.jsonl`` — the hand-written gate corpus (issue 3);
* ``tests/gate_eval/*.jsonl`` — the outside attack corpora (a, b, c) and round 1's benign sets (assistant-behaviour
  preferences, multilingual memories and turns), each used for training only after its first report (issue 11);
  rounds 2 and 3 are not trained on yet (``NOT_YET_TRAINED`` says why);
* ``training/gate_data/*.jsonl`` — multilingual training text written for memwarden (issue 11).

Never: ``tests/gate_eval/sealed/`` (held out until the report), LoCoMo or the PromptShield file (evaluation only,
not redistributable).

Each text is read the way the gate reads it (normalised, and de-obfuscated when that changes it). The model is
logistic regression with L2 over the hashed n-grams of :func:`memwarden.gate.learned.doc_features`, trained by
Adam in numpy, classes weighted to balance. Long texts are cut into the chunks the model scores; benign chunks are
all negatives, and an attack text's positive is its highest-scoring chunk (multiple-instance rounds), because only
some sentence of it carries the attack. The review threshold is chosen on a leave-one-source-out split so that,
for three held-out sources in four, at most ``--max-fp`` of benign text from a source the model did not see is
held; then the model is refitted on everything. Deterministic for a given seed.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from memwarden.gate.deobfuscate import deobfuscate
from memwarden.gate.learned import BITS, MODEL_FILE, Model, chunk_bounds, doc_features, prepare
from memwarden.gate.normalize import normalize

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "src" / "memwarden" / "gate" / "data" / MODEL_FILE
VERSION = "2026.12.01-1"


# Sets tuned on by the rules but not yet trained on. A retrain with round 2 (2026.12.01-2, threshold 0.898) learned
# "User likes it when the assistant …" as an attack (0.938 on "User likes it when the assistant uses metric
# units."); one with rounds 2 and 3 plus train_benign_prefs (913 benign preferences in 18 languages, in every
# opening a preference is written with; 2026.12.01-3, threshold 0.942) fixed that (0.513) but no longer held
# disguise combinations the rules miss (the property test of G9 found two), so neither was shipped. The shipped
# model is what this script makes. A third (2026-12-02), with every round up to 5 and every benign set (21,897 texts),
# chose a threshold of 0.943 (more unseen sources that each need a high one) and was not shipped either: a model
# trained the same way without round 5 and scored on it held 45.0 % of its attacks at that threshold, against 54.0 %
# for the shipped model (3.1 % of its benign controls against 5.8 %); on the held-out PromptShield attacks the whole
# gate detected 93.3 % against 93.6 %.
NOT_YET_TRAINED = frozenset({"attacks_d1", "attacks_d2", "benign_behaviour_prefs", "benign_dev_memories",
                             "benign_memories_multilingual_r2", "benign_turns_multilingual_r2",
                             "attacks_e", "benign_work_memories", "benign_life_prefs", "train_benign_prefs",
                             "attacks_f", "benign_mixed_memories", "attacks_g", "benign_memories_r5"})


@dataclass
class Doc:
    views: list[str]  # the gate's readings of the text (normalised, de-obfuscated)
    label: int  # 1 attack, 0 benign
    source: str  # file the text came from (the split unit)
    lang: str


def read_jsonl(path: Path) -> list[dict[str, object]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def views(text: str) -> list[str]:
    n = normalize(text)
    deep = deobfuscate(text, n)
    return [n.skeleton] + ([deep.text] if deep is not None else [])


def load_docs() -> list[Doc]:
    docs: list[Doc] = []
    corpus = REPO / "tests" / "gate_corpus"
    for row in read_jsonl(corpus / "attacks.jsonl"):
        docs.append(Doc(views(str(row["text"])), 1, "gate_corpus", str(row.get("lang", "en"))))
    for row in read_jsonl(corpus / "negatives.jsonl"):
        docs.append(Doc(views(str(row["text"])), 0, "gate_corpus", str(row.get("lang", "en"))))
    # every outside set once reported on (round 1's sealed sets included since their report); never sealed/
    sources = [*sorted(p for p in (REPO / "tests" / "gate_eval").glob("*.jsonl") if p.stem not in NOT_YET_TRAINED),
               *sorted(p for p in (REPO / "training" / "gate_data").glob("*.jsonl") if p.stem not in NOT_YET_TRAINED)]
    for path in sources:
        if not path.is_file():
            continue
        for row in read_jsonl(path):
            # the benign "memories" sets carry no label: every row of a benign_* file is benign
            label = row.get("label", "benign" if path.stem.startswith("benign_") else None)
            if label not in ("attack", "benign"):
                continue
            docs.append(Doc(views(str(row["text"])), int(label == "attack"), path.stem, str(row.get("lang", "?"))))
    return docs


def chunks_of(text: str) -> list[str]:
    prepared = prepare(text)
    return [prepared[a:b] for a, b in chunk_bounds(prepared)]


@dataclass
class Instances:
    idx: np.ndarray  # concatenated bucket indices
    val: np.ndarray  # concatenated values
    offsets: np.ndarray  # start of each instance in idx/val (len = n + 1)
    y: np.ndarray
    w: np.ndarray  # sample weights


def build(feats: Sequence[tuple[np.ndarray, np.ndarray]], y: Sequence[int], w: Sequence[float]) -> Instances:
    lens = np.array([len(f[0]) for f in feats], dtype=np.int64)
    offsets = np.concatenate(([0], np.cumsum(lens)))
    idx = np.concatenate([f[0] for f in feats]) if feats else np.zeros(0, np.int64)
    val = np.concatenate([f[1] for f in feats]) if feats else np.zeros(0, np.float32)
    return Instances(idx, val.astype(np.float32), offsets, np.asarray(y, np.float32), np.asarray(w, np.float32))


def scores(weights: np.ndarray, bias: float, inst: Instances) -> np.ndarray:
    contrib = weights[inst.idx] * inst.val
    sums = np.add.reduceat(contrib, inst.offsets[:-1]) if len(contrib) else np.zeros(len(inst.y))
    sums[np.diff(inst.offsets) == 0] = 0.0
    return sums + bias


def fit(inst: Instances, *, l2: float, epochs: int, lr: float, seed: int,
        init: tuple[np.ndarray, float] | None = None) -> tuple[np.ndarray, float]:
    rng = np.random.default_rng(seed)
    dim = 1 << BITS
    wts, bias = (init[0].copy(), init[1]) if init else (np.zeros(dim, np.float32), 0.0)
    m, v = np.zeros(dim, np.float32), np.zeros(dim, np.float32)
    mb = vb = 0.0
    n = len(inst.y)
    batch = 256
    t = 0
    for _ in range(epochs):
        order = rng.permutation(n)
        for start in range(0, n, batch):
            sel = order[start:start + batch]
            lo, hi = inst.offsets[sel], inst.offsets[sel + 1]
            pieces = [np.arange(a, b) for a, b in zip(lo, hi, strict=True)]
            flat = np.concatenate(pieces) if pieces else np.zeros(0, np.int64)
            owner = np.repeat(np.arange(len(sel)), hi - lo)
            z = np.zeros(len(sel), np.float64)
            np.add.at(z, owner, wts[inst.idx[flat]] * inst.val[flat])
            z += bias
            p = 1.0 / (1.0 + np.exp(-np.clip(z, -30, 30)))
            gdoc = ((p - inst.y[sel]) * inst.w[sel]).astype(np.float32) / len(sel)
            grad = np.zeros(dim, np.float32)
            np.add.at(grad, inst.idx[flat], inst.val[flat] * gdoc[owner])
            touched = np.unique(inst.idx[flat])
            grad[touched] += l2 * wts[touched]
            gb = float(gdoc.sum())
            t += 1
            m[touched] = 0.9 * m[touched] + 0.1 * grad[touched]
            v[touched] = 0.999 * v[touched] + 0.001 * grad[touched] ** 2
            wts[touched] -= lr * (m[touched] / (1 - 0.9 ** t)) / (np.sqrt(v[touched] / (1 - 0.999 ** t)) + 1e-8)
            mb = 0.9 * mb + 0.1 * gb
            vb = 0.999 * vb + 0.001 * gb * gb
            bias -= lr * (mb / (1 - 0.9 ** t)) / (np.sqrt(vb / (1 - 0.999 ** t)) + 1e-8)
    return wts, bias


def train(docs: Sequence[Doc], *, l2: float, epochs: int, lr: float, seed: int, rounds: int = 2
          ) -> tuple[np.ndarray, float]:
    """Multiple-instance training: benign chunks are negatives; an attack's positive is its best chunk."""
    neg: list[tuple[np.ndarray, np.ndarray]] = []
    pos_chunks: list[list[tuple[np.ndarray, np.ndarray]]] = []
    for d in docs:
        per_view = [doc_features(c) for view in d.views for c in chunks_of(view)]
        if d.label:
            pos_chunks.append(per_view)
        else:
            neg.extend(per_view)
    n_pos, n_neg = len(pos_chunks), len(neg)
    wpos, wneg = 0.5 * (n_pos + n_neg) / max(n_pos, 1), 0.5 * (n_pos + n_neg) / max(n_neg, 1)
    chosen = [max(ch, key=lambda f: len(f[0])) for ch in pos_chunks]  # round 0: the longest chunk
    model: tuple[np.ndarray, float] | None = None
    for r in range(rounds):
        inst = build(chosen + neg, [1] * n_pos + [0] * n_neg, [wpos] * n_pos + [wneg] * n_neg)
        model = fit(inst, l2=l2, epochs=epochs, lr=lr, seed=seed + r, init=model)
        w, b = model
        chosen = []
        for ch in pos_chunks:
            s = scores(w, b, build(ch, [1] * len(ch), [1.0] * len(ch)))
            chosen.append(ch[int(np.argmax(s))])
    assert model is not None
    return model


def doc_scores(model: Model, docs: Sequence[Doc]) -> np.ndarray:
    return np.array([max(model.score(v) for v in d.views) for d in docs])


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="report the held-out split only; write nothing")
    ap.add_argument("--skip-split", action="store_true", help="no leave-one-source-out report (needs --threshold)")
    ap.add_argument("--threshold", type=float, default=None, help="review threshold instead of the split's choice")
    ap.add_argument("--l2", type=float, default=1e-6)
    ap.add_argument("--epochs", type=int, default=8)
    ap.add_argument("--lr", type=float, default=0.02)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--exclude", action="append", default=[], metavar="SOURCE",
                    help="leave a source out of the final model (to measure the whole gate on it)")
    ap.add_argument("--out", type=Path, default=OUT, help=f"where to write the model (default {OUT.relative_to(REPO)})")
    ap.add_argument("--max-fp", type=float, default=0.02,
                    help="share of benign text of an unseen source the threshold may hold (default 0.02)")
    args = ap.parse_args(argv)

    docs = load_docs()
    sources = sorted({d.source for d in docs})
    print(f"{len(docs)} texts ({sum(d.label for d in docs)} attacks) from {', '.join(sources)}", file=sys.stderr)
    held_thresholds = []
    for src in [] if args.skip_split else sources:
        test = [d for d in docs if d.source == src]
        train_docs = [d for d in docs if d.source != src]
        if not any(d.label == 0 for d in test) or not any(d.label for d in test):
            continue
        w, b = train(train_docs, l2=args.l2, epochs=args.epochs, lr=args.lr, seed=args.seed)
        m = Model(w, b, 0.5, "held-out")
        s = doc_scores(m, test)
        y = np.array([d.label for d in test])
        ben = np.sort(s[y == 0])
        thr = float(ben[min(len(ben) - 1, int(np.floor((1 - args.max_fp) * len(ben))))])
        held_thresholds.append(thr)
        for t in (0.5, thr):
            det = float((s[y == 1] > t).mean())
            fp = float((s[y == 0] > t).mean())
            print(f"held out {src:14s} threshold {t:.3f}: attacks held {det:6.1%} of {int(y.sum())}, benign "
                  f"held {fp:6.1%} of {int((y == 0).sum())}")
    # three sources in four: a source the model never saw has at most --max-fp of its benign text held (the
    # median left half the sources above it, and short plain facts such as "User's timezone is CET" held)
    threshold = args.threshold if args.threshold is not None else (
        float(np.quantile(held_thresholds, 0.75)) if held_thresholds else 0.5)
    print(f"threshold (75th percentile of the held-out choices): {threshold:.3f}")
    if args.check:
        return 0
    final = [d for d in docs if d.source not in args.exclude]
    w, b = train(final, l2=args.l2, epochs=args.epochs, lr=args.lr, seed=args.seed)
    out: Path = args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out, weights=w.astype(np.float16), bias=np.float32(b), threshold=np.float32(threshold),
                        version=np.str_(VERSION + ("-without-" + "-".join(args.exclude) if args.exclude else "")))
    print(f"wrote {out} ({out.stat().st_size // 1024} KB) from {len(final)} texts")
    return 0


if __name__ == "__main__":
    sys.exit(main())
