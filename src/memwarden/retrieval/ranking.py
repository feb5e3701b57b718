"""Ranking parameters of the hybrid search (the shipped defaults; docs/retrieval.md says where each comes from)."""

from __future__ import annotations

from dataclasses import dataclass, field

from memwarden.records import Kind

MODES = ("bm25", "lexical", "hybrid")


@dataclass(frozen=True, slots=True)
class Ranking:
    """Parameters of the ranking (defaults are the shipped configuration; see docs/retrieval.md)."""

    mode: str = "hybrid"  # bm25: FTS5's own order only | lexical: + per-scope BM25, expansion | hybrid: + vectors
    pool: int = 60  # best lexical candidates read through the filter (LoCoMo: the same recall as 100, at less cost)
    postings_budget: int = 200  # mode="bm25" only: FTS5 matches the rarest query terms until their postings reach this
    dense_pool: int = 50  # vector candidates (best cosines of the scope)
    k1: float = 1.2  # BM25 term-frequency saturation (Robertson's default, also FTS5's)
    b: float = 0.3  # BM25 length normalisation (LoCoMo: 0.2-0.4 recall@5 0.632-0.639; the usual 0.75: 0.621)
    dense_weight: float | None = None  # None: 0.3 for the hash embedder, 0.5 for a model
    dense_floor: float | None = None  # cosine that counts as no match: None = 0.25 (hash), 0.75 (a model)
    expand: int = 2  # neighbouring episodes of the same session on each side
    expand_decay: float = 0.5  # a neighbour at distance d adds decay**d of a candidate's score
    expand_top: int = 20  # candidates whose neighbours are looked up
    expand_window: int = 256  # rows (in write order) searched on each side of a candidate for its neighbours
    kind_weights: dict[str, float] = field(default_factory=lambda: {k.value: 1.0 for k in Kind})
    recency_boost: float = 0.05  # up to +5 % for a record updated just now ...
    recency_half_life_days: float = 30.0  # ... halving every 30 days
