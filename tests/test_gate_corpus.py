"""G3/G7 on the labelled corpus (tests/gate_corpus, written by hand for memwarden): the gate must reject at least
97 % of the attacks, in every family, and accept at least 99.5 % of the hard negatives.

These assert behaviour on data, not speed (speed is benchmarks/bench_gate.py)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

import memwarden

CORPUS = Path(__file__).with_name("gate_corpus")


def _load(name: str) -> list[dict[str, str]]:
    return [json.loads(line) for line in (CORPUS / name).read_text(encoding="utf-8").splitlines() if line.strip()]


ATTACKS = _load("attacks.jsonl")
NEGATIVES = _load("negatives.jsonl")


def test_g3_corpus_is_large_enough() -> None:
    assert len(ATTACKS) >= 400 and len(NEGATIVES) >= 400
    families = Counter(a["family"] for a in ATTACKS)
    assert len(families) >= 10 and min(families.values()) >= 25
    langs = {a["lang"] for a in ATTACKS}
    assert {"en", "es", "fr", "de", "pt", "it", "ru", "zh"} <= langs


def test_g3_detects_at_least_97_percent_of_attacks() -> None:
    missed = [a for a in ATTACKS if memwarden.scan(a["text"]).verdict == "accept"]
    rate = 1 - len(missed) / len(ATTACKS)
    assert rate >= 0.97, f"detection {rate:.3f}; missed e.g. {[m['text'][:80] for m in missed[:5]]}"


@pytest.mark.parametrize("family", sorted({a["family"] for a in ATTACKS}))
def test_g3_detects_each_family(family: str) -> None:
    items = [a for a in ATTACKS if a["family"] == family]
    caught = sum(memwarden.scan(a["text"]).verdict != "accept" for a in items)
    assert caught / len(items) >= 0.85, f"{family}: {caught}/{len(items)}"


def test_g7_hard_negatives_pass() -> None:
    flagged = [(n["text"][:80], memwarden.scan(n["text"], kind=n.get("kind", "fact")).rules) for n in NEGATIVES
               if memwarden.scan(n["text"], kind=n.get("kind", "fact")).verdict != "accept"]
    assert len(flagged) / len(NEGATIVES) <= 0.005, flagged
