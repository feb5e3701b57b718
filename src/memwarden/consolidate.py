"""Near-duplicate detection on write (Q3) and ``memwarden consolidate`` (Q4).

Both decide on **text only** — pairs of consecutive stemmed terms (shingles) compared by Jaccard similarity —
never on vectors, so a failing or swapped embedder cannot change what is merged, kept or deleted (Q2).

* On write (:func:`near_duplicate`): a new record whose shingles have Jaccard similarity ≥ ``DUPLICATE_JACCARD``
  (0.9) with a visible record of the same scope, kind and sensitivity, written at the same trust level, is not
  stored again: the write returns the existing record and the audit log gets a ``merged`` event. Only trusted
  writes are deduplicated (held writes never are), and only against records of the same trust, so untrusted
  text never overwrites or evicts trusted memory.
* :func:`consolidate` groups redundant records (same threshold) of one scope and kind and writes one merged
  record per group through :meth:`MemoryService.write` (gate, taint, sign, audit) with ``derived_from`` and the
  version of every input as read: if any input changed (or vanished) since, the write aborts (VersionConflict)
  and nothing is stored. The merged record inherits the least-trusted provenance of its inputs (an untrusted
  input makes it untrusted and held), and deleting any input deletes it (D3). Inputs stay stored (they are what
  the merged record is regenerated from) but search serves the merged record instead of them.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memwarden.errors import MemwardenError
from memwarden.records import Kind, Record, SourceType, Status, Trust, now_ms
from memwarden.retrieval.tokenize import TAG_LEN, terms

if TYPE_CHECKING:
    from memwarden.service import Context, MemoryService
    from memwarden.store.base import Writes

DUPLICATE_JACCARD = 0.9  # stemmed-term Jaccard similarity at or above which two texts are the same memory
DEDUP_KINDS = frozenset({Kind.EPISODE, Kind.FACT, Kind.PREFERENCE})


def jaccard(a: set[str], b: set[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def _terms_of(index_text: str) -> list[str]:
    """The hashed terms of an FTS row, in order (each token is the scope tag + a hashed term)."""
    return [tok[TAG_LEN:] for tok in index_text.split()]


def shingles(tokens: Sequence[str]) -> set[str]:
    """Consecutive term pairs (order matters: "A paid B" is not "B paid A"); a one-term text is its term."""
    if len(tokens) < 2:
        return set(tokens)
    return {f"{a} {b}" for a, b in itertools.pairwise(tokens)}


def near_duplicate(service: MemoryService, tx: Writes, ctx: Context, kind: str, content: str,
                   sensitivity: int) -> Record | None:
    """The visible record of the caller's own scope that ``content`` nearly duplicates, if any (Q3)."""
    if kind not in DEDUP_KINDS or ctx.trust != Trust.TRUSTED:
        return None
    scope = ctx.scope
    hasher = service.backend.indexer.hasher
    tag = hasher.tag(scope.tenant, scope.user, scope.agent_key)
    found = hasher.terms_of(content)
    if not found:
        return None
    # candidates share the text's set of terms (its near-duplicate key): Jaccard ≥ 0.9 on term pairs is then
    # checked on each; a near-duplicate that adds or drops a word is not seen (a miss, never a wrong merge)
    # the caller's exact scope, never the shared one; an index probe that finds no key anywhere reads nothing
    rows = tx.near_duplicates(scope, kind, sensitivity, hasher.dup_key(tag, content), now_ms())
    if not rows:
        return None  # no record has the key, or the key's records are of another kind, sensitivity or status
    mine = shingles([hasher.token(t) for t in found])
    best: tuple[float, Sequence[Any]] | None = None
    for row, index_text in rows:
        other = shingles(_terms_of(index_text))
        sim = jaccard(mine, other)
        if sim >= DUPLICATE_JACCARD and (best is None or sim > best[0]):
            best = (sim, row)
    if best is None:
        return None
    served = service._serve(ctx, [best[1]], tx=tx)  # verified like any read (I1)
    if not served or served[0].provenance.trust != ctx.trust or served[0].status != Status.ACTIVE:
        return None
    return served[0]


@dataclass(frozen=True, slots=True)
class Merge:
    ids: tuple[str, ...]
    merged_id: str | None
    status: str  # accepted | review | rejected | conflict | error
    message: str


def groups(records: Sequence[Record], threshold: float = DUPLICATE_JACCARD) -> list[list[Record]]:
    """Records of one kind grouped by near-duplicate text (single link on Jaccard ≥ ``threshold``)."""
    sets = [shingles(terms(r.content)) for r in records]
    parent = list(range(len(records)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    by_term: dict[str, list[int]] = {}
    for i, s in enumerate(sets):
        for t in s:
            by_term.setdefault(t, []).append(i)
    for i, s in enumerate(sets):
        if not s:
            continue
        seen: set[int] = set()
        for t in s:
            for j in by_term[t]:
                if j > i and j not in seen:
                    seen.add(j)
                    if sets[j] and jaccard(s, sets[j]) >= threshold:
                        parent[find(j)] = find(i)
    out: dict[int, list[Record]] = {}
    for i, r in enumerate(records):
        out.setdefault(find(i), []).append(r)
    return [g for g in out.values() if len(g) > 1]


def merged_text(group: Sequence[Record]) -> str:
    """The most complete wording of a group of near-duplicates (the longest; ties: the oldest)."""
    return max(group, key=lambda r: (len(r.content), -r.created_at)).content


def consolidate(service: MemoryService, ctx: Context, kind: str | None = None, *,
                threshold: float = DUPLICATE_JACCARD, dry_run: bool = False) -> list[Merge]:
    """Merge redundant visible records of ``ctx``'s own scope (Q4); one :class:`Merge` per group."""
    from dataclasses import replace

    ctx = replace(ctx, source_type=SourceType.CONSOLIDATION, read_shared=False)
    kinds = [kind] if kind else sorted(DEDUP_KINDS)
    results: list[Merge] = []
    for knd in kinds:
        records = [r for r in service.list_records(ctx, kind=knd, limit=100_000)
                   if r.provenance.source_type != SourceType.CONSOLIDATION]
        folded = _already_folded(service, [r.id for r in records])
        for group in groups([r for r in records if r.id not in folded], threshold):
            group.sort(key=lambda r: (r.created_at, r.id))
            ids = tuple(r.id for r in group)
            if dry_run:
                results.append(Merge(ids, None, "planned", merged_text(group)[:80]))
                continue
            try:
                res = service.write(ctx, merged_text(group), kind=knd, derived_from=ids,
                                    derived_versions={r.id: r.version for r in group},
                                    sensitivity=max(r.sensitivity for r in group),
                                    confidence=min(r.confidence for r in group))
            except MemwardenError as exc:  # VersionConflict: an input changed since it was read
                results.append(Merge(ids, None, "conflict" if exc.code == "version_conflict" else "error",
                                     str(exc)))
                continue
            results.append(Merge(ids, res.id, res.status, res.message))
    return results


def _already_folded(service: MemoryService, ids: Sequence[str]) -> set[str]:
    """Inputs already represented by a live consolidation record (not merged twice)."""
    with service.backend.read() as db:
        return db.folded(ids)
