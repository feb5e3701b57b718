"""LoCoMo retrieval benchmark (``memwarden bench locomo``): every turn of a conversation is one episode in that
conversation's own scope, written through the real write path (one memwarden session per LoCoMo session); each
evidence-labelled question is a query; recall@k = share of a question's evidence turns among the top k, hit@k =
at least one of them there. The data (CC BY-NC 4.0) is read in place, never copied.
"""

from __future__ import annotations

import gzip
import json
import re
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from memwarden.errors import InvalidInput
from memwarden.ids import new_id
from memwarden.records import SourceType
from memwarden.retrieval.embedders import Embedder
from memwarden.retrieval.ranking import Ranking
from memwarden.scope import Scope

DEFAULT_PATH = Path(__file__).resolve().parents[3] / ".." / "shared" / "data" / "locomo10.json.gz"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
_EVIDENCE = re.compile(r"D(\d+):(\d+)")


@dataclass(frozen=True, slots=True)
class Turn:
    dia_id: str
    session: int
    text: str  # what is stored by default: reported speech, 'Speaker said, "words"' (and the shared image)
    raw: str = ""  # the turn as a transcript line, 'Speaker: words' (what record_turns stores)


@dataclass(frozen=True, slots=True)
class Question:
    text: str
    evidence: tuple[str, ...]
    category: int


@dataclass(frozen=True, slots=True)
class Conversation:
    sample_id: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]


def turn_text(t: dict[str, Any]) -> str:
    """Reported speech, the form this benchmark stored before episodes had their own gate tier (issue 11): with
    gate v1 a bare turn such as "Wow! Got any tips?" was rejected as an instruction (405 of 5,882 turns)."""
    text = f"{t['speaker']} said, \"{t['text']}\""
    if t.get("blip_caption"):  # the turn shared an image; its caption is part of what was said
        text += f" and shared {t['blip_caption']}."
    return text


def raw_text(t: dict[str, Any]) -> str:
    """The turn as a line of the transcript, not rewritten: "Speaker: words" (and the shared image)."""
    text = f"{t['speaker']}: {t['text']}"
    if t.get("blip_caption"):
        text += f" [shared: {t['blip_caption']}]"
    return text


def load(path: str | Path = DEFAULT_PATH) -> list[Conversation]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        data = json.load(fh)
    out = []
    for c in data:
        conv = c["conversation"]
        turns: list[Turn] = []
        n = 1
        while f"session_{n}" in conv:
            turns += [Turn(t["dia_id"], n, turn_text(t), raw_text(t)) for t in conv[f"session_{n}"]]
            n += 1
        ids = {t.dia_id for t in turns}
        qs = []
        for q in c["qa"]:
            ev = [f"D{int(a)}:{int(b)}" for e in q.get("evidence") or [] for a, b in _EVIDENCE.findall(e)]
            ev = [e for e in dict.fromkeys(ev) if e in ids]  # "D8:6; D9:17", "D30:05" are normalised
            if ev:
                qs.append(Question(q["question"], tuple(ev), int(q["category"])))
        out.append(Conversation(c["sample_id"], tuple(turns), tuple(qs)))
    return out


@dataclass
class Scores:
    recall: dict[int, list[float]] = field(default_factory=lambda: defaultdict(list))
    hit: dict[int, list[float]] = field(default_factory=lambda: defaultdict(list))
    by_cat: dict[tuple[int, int], list[float]] = field(default_factory=lambda: defaultdict(list))
    latency_ns: list[int] = field(default_factory=list)

    def add(self, got: Sequence[set[str]], q: Question, ks: Sequence[int]) -> None:
        ev = set(q.evidence)
        for k in ks:
            seen = set().union(*got[:k]) if got else set()
            r = len(seen & ev) / len(ev)
            self.recall[k].append(r)
            self.hit[k].append(1.0 if seen & ev else 0.0)
            self.by_cat[(q.category, k)].append(r)

    def mean(self, table: dict[Any, list[float]], key: Any) -> float:
        return statistics.fmean(table[key]) if table[key] else 0.0


Searcher = Callable[[int, str, int], list[set[str]]]  # (conversation index, question, k) -> dia ids per hit


def plain_bm25(convs: Sequence[Conversation]) -> Searcher:
    """The baseline: FTS5 BM25 (porter unicode61) over the same texts, every query word OR-ed — the search
    memwarden shipped before this issue — one in-memory table, filtered to the conversation."""
    from memwarden.store.sqlite.fts_baseline import PlainBm25

    index = PlainBm25()
    ids: dict[int, str] = {}
    for ci, c in enumerate(convs):
        for t in c.turns:
            ids[index.add(t.text, ci)] = t.dia_id
    word = re.compile(r"\w+")

    def search(ci: int, text: str, k: int) -> list[set[str]]:
        return [{ids[key]} for key in index.search(word.findall(text), ci, k)]

    return search


def build_store(convs: Sequence[Conversation], db_path: Path | str, embedder: Embedder | None = None) -> Any:
    """A memwarden store holding every turn as an episode (real write path); returns (service, id map, stats).
    ``db_path``: a SQLite file, or a PostgreSQL URL (which must not hold the tenant ``locomo`` yet)."""
    import memwarden
    from memwarden.policy import DEFAULT_LIMITS, KindLimits, Policy
    from memwarden.service import Context

    limits = dict(DEFAULT_LIMITS)
    limits["episode"] = KindLimits(1_000_000, 1 << 30)
    svc = memwarden.open(db_path, policy=Policy(limits=limits), durability="normal")
    if svc.users_of("locomo", limit=1):
        svc.close()
        raise InvalidInput("the database already holds records of the tenant 'locomo': build LoCoMo into an empty "
                           "database")
    if embedder is not None:
        svc.retrieval.set_embedder(embedder)
    where: dict[str, set[str]] = defaultdict(set)  # record id -> dia ids it holds (near-duplicates merge)
    stats: dict[str, int] = defaultdict(int)
    for c in convs:
        scope = Scope("locomo", c.sample_id, "bench")
        session_ids: dict[int, str] = {}
        for t in c.turns:
            sid = session_ids.setdefault(t.session, new_id())
            ctx = Context(scope, session_id=sid, source_type=SourceType.USER, actor="system:bench")
            res = svc.write(ctx, t.text, kind="episode")
            stats[res.status] += 1
            if res.id and res.status == "accepted":
                where[res.id].add(t.dia_id)
    stats["records"] = len(where)
    return svc, where, dict(stats)


def build_store_turns(convs: Sequence[Conversation], db_path: Path) -> Any:
    """A memwarden store holding every turn as the transcript line it is, through ``Session.record_turns`` (one
    memwarden session per LoCoMo session, each turn a user turn: both speakers are the application's users);
    returns (service, id map, stats) like :func:`build_store`."""
    import memwarden
    from memwarden.policy import DEFAULT_LIMITS, KindLimits, Policy

    limits = dict(DEFAULT_LIMITS)
    limits["episode"] = KindLimits(1_000_000, 1 << 30)
    svc = memwarden.open(db_path, policy=Policy(limits=limits), durability="normal")
    where: dict[str, set[str]] = defaultdict(set)
    stats: dict[str, int] = defaultdict(int)
    for c in convs:
        scope = Scope("locomo", c.sample_id, "bench")
        by_session: dict[int, list[Turn]] = defaultdict(list)
        for t in c.turns:
            by_session[t.session].append(t)
        for turns in by_session.values():
            with svc.session(scope) as s:
                recorded = s.record_turns([{"role": "user", "content": t.raw} for t in turns])
            for r in recorded:
                stats[r.status] += 1
                rid = getattr(r.result, "id", None)
                if rid and r.status == "accepted":
                    where[rid].add(turns[r.index].dia_id)
    stats["records"] = len(where)
    return svc, where, dict(stats)


def memwarden_searcher(svc: Any, convs: Sequence[Conversation], where: dict[str, set[str]],
                       ranking: Ranking) -> Searcher:
    from memwarden.service import Context

    ctxs = [Context(Scope("locomo", c.sample_id, "bench"), session_id=new_id(), source_type=SourceType.OPERATOR,
                    actor="system:bench", clearance=3) for c in convs]

    def search(ci: int, text: str, k: int) -> list[set[str]]:
        found = svc.retrieval.search(ctxs[ci], text, k, ranking=ranking)
        return [where.get(r.id, set()) for r in found]

    return search


def evaluate(convs: Sequence[Conversation], search: Searcher, ks: Sequence[int]) -> Scores:
    sc = Scores()
    kmax = max(ks)
    for ci, c in enumerate(convs):
        for q in c.questions:
            t0 = time.perf_counter_ns()
            got = search(ci, q.text, kmax)
            sc.latency_ns.append(time.perf_counter_ns() - t0)
            sc.add(got, q, ks)
    return sc


DEFAULT_LABEL = "memwarden default (no vectors: per-scope BM25 + context expansion)"
PG = ", on PostgreSQL"  # suffix of a configuration measured on the PostgreSQL engine
TURNS_LABEL = "memwarden default, raw turns stored through record_turns (\"Speaker: words\")"


def run(path: str | Path = DEFAULT_PATH, ks: Sequence[int] = (1, 5, 10, 20), embedders: Sequence[str] = (),
        db_dir: str | None = None, postgres: str | None = None) -> dict[str, Any]:
    """Every configuration in one run: the plain BM25 baseline, memwarden's shipped default (no embedder, no
    model) and its lexical variants, then hybrid ranking for each embedder asked for (``hash``, ``e5``, …).
    ``postgres``: the application URL of a migrated database where the default store is built too, and the
    lexical configurations measured again on it (issue 14: the same ranking code on both engines)."""
    from memwarden.retrieval.embedders import from_spec

    convs = load(path)
    results: dict[str, Scores] = {}
    results["plain BM25 (FTS5 porter, words OR-ed; memwarden before issue 5)"] = evaluate(convs, plain_bm25(convs),
                                                                                         ks)
    info: dict[str, Any] = {"conversations": len(convs), "turns": sum(len(c.turns) for c in convs),
                            "questions": sum(len(c.questions) for c in convs)}
    base = Ranking()
    specs = ["none", *dict.fromkeys(s for s in embedders if s != "none")]
    with tempfile.TemporaryDirectory(dir=db_dir) as tmp:
        for spec in specs:
            emb = from_spec(spec)
            t0 = time.perf_counter()
            svc, where, stats = build_store(convs, Path(tmp) / f"locomo-{spec.split(':')[0]}.db", emb)
            info[f"build {spec}"] = {**stats, "seconds": round(time.perf_counter() - t0, 1)}
            if spec == "none":
                configs = [("memwarden BM25 only (new terms, FTS5 order)", replace(base, mode="bm25")),
                           ("memwarden per-scope BM25, no context expansion", replace(base, expand=0)),
                           (DEFAULT_LABEL, base)]
            else:
                configs = [(f"memwarden hybrid, no context expansion, embedder {spec}", replace(base, expand=0)),
                           (f"memwarden hybrid + context expansion, embedder {spec}", base)]
            try:
                for name, rk in configs:
                    results[name] = evaluate(convs, memwarden_searcher(svc, convs, where, rk), ks)
            finally:
                svc.close()
            if spec == "none" and postgres is not None:
                t0 = time.perf_counter()
                svc, where, stats = build_store(convs, postgres, emb)
                info["build none, PostgreSQL"] = {**stats, "seconds": round(time.perf_counter() - t0, 1)}
                try:
                    for name, rk in configs:
                        results[name + PG] = evaluate(convs, memwarden_searcher(svc, convs, where, rk), ks)
                finally:
                    svc.close()
        t0 = time.perf_counter()
        svc, where, stats = build_store_turns(convs, Path(tmp) / "locomo-turns.db")
        info["build raw turns (record_turns)"] = {**stats, "seconds": round(time.perf_counter() - t0, 1)}
        try:
            results[TURNS_LABEL] = evaluate(convs, memwarden_searcher(svc, convs, where, base), ks)
        finally:
            svc.close()
    return {"info": info, "results": results, "ks": list(ks)}


def report(out: dict[str, Any]) -> str:
    """Markdown tables: recall@k and hit@k overall, recall@5/@10 per category."""
    ks = out["ks"]
    res: dict[str, Scores] = out["results"]

    def table(headers: list[str], rows: list[list[str]]) -> str:
        lines = ["| " + " | ".join(headers) + " |", "|" + "|".join(":--" if i == 0 else "--:"
                                                                 for i in range(len(headers))) + "|"]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        return "\n".join(lines)

    rows = []
    for name, sc in res.items():
        lat = sorted(sc.latency_ns)
        p50 = lat[len(lat) // 2] / 1e6 if lat else 0.0
        rows.append([name, *[f"{sc.mean(sc.recall, k):.3f}" for k in ks], *[f"{sc.mean(sc.hit, k):.3f}" for k in ks],
                     f"{p50:.2f}"])
    parts = [table(["configuration", *[f"recall@{k}" for k in ks], *[f"hit@{k}" for k in ks], "p50 ms"], rows)]
    for k in (5, 10):
        if k not in ks:
            continue
        rows = []
        for name, sc in res.items():
            rows.append([name, *[f"{sc.mean(sc.by_cat, (cat, k)):.3f}" for cat in CATEGORIES]])
        n = {cat: len(next(iter(res.values())).by_cat[(cat, k)]) for cat in CATEGORIES}
        parts.append(f"recall@{k} per category\n\n" + table(
            ["configuration", *[f"{CATEGORIES[c]} ({c}, n={n[c]})" for c in CATEGORIES]], rows))
    rows = []
    for name, sc in res.items():
        lite = res.get(name.removesuffix(PG)) if name.endswith(PG) else None
        if lite is not None:
            rows.append([name.removesuffix(PG), *[f"{sc.mean(sc.recall, k) - lite.mean(lite.recall, k):+.3f}"
                                                  for k in ks]])
    if rows:
        parts.append("recall@k on PostgreSQL minus recall@k on SQLite (same turns, same queries)\n\n"
                     + table(["configuration", *[f"recall@{k}" for k in ks]], rows))
    return "\n\n".join(parts)
