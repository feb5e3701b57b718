"""Search results equivalence (issue 13, acceptance 5 work): this tree's ``search`` returns exactly what a
reference revision's does — the same records, in the same order, with the same scores — and writes the same
read-audit rows.

One store is built by the *reference* tree (a subprocess with only its ``src`` on ``PYTHONPATH``): ``--records``
episodes in the main scope, written interleaved over many sessions, plus facts, preferences and procedures at
several sensitivities, held records, records that have expired by query time, removed records, consolidation
records folding some episodes (Q4), the user's shared records, and two other scopes (another agent, another
user). Vectors of the hash embedder are written too. The store is then copied, once per tree and configuration,
and each copy is searched by one tree in its own subprocess, with the clock frozen (``now_ms``) so recency
weights and expiry are identical: a few thousand varied queries (bench_server-style 2–3 words, single words,
long queries, non-ASCII words, words that match nothing, an empty query; ``k`` 1, 5, 20; ``kind`` filters;
clearances; with and without the user's shared records; three scopes), each followed by the read-audit row a
session writes (``log_reads``). Configurations: the default store (no embedder: lexical ranking + expansion),
the hash embedder (hybrid: + vectors), and ``Ranking(mode="bm25")`` (FTS5's own order).

Compared: per query the returned ids in order and the top-``k`` (row key, score) pairs of the ranking, exactly
(floats by ``repr``); and every audit row the queries appended (event, scope, session, actor, details, hash — with
the clock frozen and the same store, the chain hashes must match too).

    .venv/bin/python benchmarks/search_equivalence.py [--ref ccb725a] [--records 10000] [--queries 3000]
                                                      [--dir DIR]

Exit status 0 only when every configuration matches.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _words

HERE = Path(__file__).resolve().parent
TREE_SRC = HERE.parent / "src"
TENANT = "eq"
CONFIGS = ("none", "hash", "bm25")

_NAMES = (*_words.NAMES, "Zoë", "Łukasz")
_TOPICS = (*_words.TOPICS, "la facturación mensual", "die Größe des Caches", "東京 オフィス の 移転",
           "café crème budget")
_PROJECTS, _OUTCOMES = _words.PROJECTS, _words.OUTCOMES
_FACTS = ("prefers {t} discussed in the morning", "works on the {p} with {n}", "{n} owns {t}",
          "the {p} deadline is next Friday", "uses dark mode when reviewing {t}")


def _episode(rng: random.Random, n: int) -> str:
    return (f"{rng.choice(_NAMES)} and the user discussed {rng.choice(_TOPICS)} on the {rng.choice(_PROJECTS)} "
            f"(note {n}); {rng.choice(_OUTCOMES)}.")


def _fact(rng: random.Random, n: int) -> str:
    return rng.choice(_FACTS).format(t=rng.choice(_TOPICS), p=rng.choice(_PROJECTS), n=rng.choice(_NAMES)) + f" #{n}"


def _env(root: Path, embedder: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMWARDEN_")}
    for var, sub in (("XDG_CONFIG_HOME", "config"), ("XDG_DATA_HOME", "data"), ("XDG_STATE_HOME", "state"),
                     ("XDG_CACHE_HOME", "cache")):
        env[var] = str(root / sub)
    env["MEMWARDEN_KEY_FILE"] = str(root / "config" / "memwarden" / "key")
    env["MEMWARDEN_ANCHOR_DIR"] = str(root / "config" / "memwarden" / "anchors")
    if embedder != "none":
        env["MEMWARDEN_EMBEDDER"] = embedder
    return env


def _scopes() -> dict[str, Any]:
    from memwarden.scope import Scope

    return {"main": Scope(TENANT, "u-main", "agent"), "shared": Scope(TENANT, "u-main", None),
            "other-agent": Scope(TENANT, "u-main", "helper"), "other-user": Scope(TENANT, "u-other", "agent")}


# --- child: build (reference tree) ------------------------------------------------------------------------------

def child_build(root: Path, records: int) -> None:
    import memwarden
    from memwarden.errors import MemwardenError
    from memwarden.records import SourceType
    from memwarden.service import Context
    from memwarden.store.base import View

    rng = random.Random(13)
    svc = memwarden.open(root / "eq.db")
    scopes = _scopes()

    def ctx(name: str, session: str, source: str = SourceType.OPERATOR) -> Context:
        return Context(scopes[name], session_id=session, source_type=source, actor="operator:eq", clearance=3)

    def ids_of(results: list[Any]) -> list[str]:
        return [r.id for r in results if getattr(r, "status", None) in ("accepted", "review") and r.id]

    main_eps: list[str] = []
    n = 0
    while n < records:  # sessions written interleaved: a few at a time, in runs of 1..12 turns
        batch: list[tuple[str, dict[str, Any]]] = []
        for _ in range(rng.randint(20, 200)):
            if n >= records:
                break
            sess = f"s{rng.randrange(60)}"
            for _ in range(rng.randint(1, 12)):
                if n >= records:
                    break
                item: dict[str, Any] = {"content": _episode(rng, n), "kind": "episode"}
                r = rng.random()
                if r < 0.03:
                    item["sensitivity"] = rng.choice(["confidential", "secret"])
                elif r < 0.04:
                    item["hold"] = "equivalence: held for review"
                elif r < 0.05:
                    item["ttl_minutes"] = 1  # expired by the (frozen) query time
                batch.append((sess, item))
                n += 1
        for sess in sorted({s for s, _ in batch}):
            main_eps += ids_of(svc.write_many(ctx("main", sess), [i for s, i in batch if s == sess]))
    facts = []
    for kind in ("fact", "preference", "procedure"):
        items = [{"content": _fact(rng, i) + f" ({kind})", "kind": kind,
                  **({"sensitivity": "confidential"} if i % 9 == 0 else {})} for i in range(300)]
        facts += ids_of(svc.write_many(ctx("main", "facts"), items))
    svc.write_many(ctx("shared", "shared"), [{"content": _episode(rng, 10**6 + i), "kind": "episode"}
                                             for i in range(800)])
    svc.write_many(ctx("shared", "shared"), [{"content": _fact(rng, i), "kind": "fact"} for i in range(200)])
    for name, count in (("other-agent", 1500), ("other-user", 2500)):
        svc.write_many(ctx(name, "x"), [{"content": _episode(rng, 2 * 10**6 + i), "kind": "episode"}
                                        for i in range(count)])
    # removals and consolidations in the main scope
    main = ctx("main", "facts")
    for mid in rng.sample(main_eps, 60) + rng.sample(facts, 20):
        with contextlib.suppress(MemwardenError):  # already gone (derived): the store is what it is
            svc.remove(main, mid)
    cons = Context(scopes["main"], session_id="cons", source_type=SourceType.CONSOLIDATION, actor="system:eq",
                   clearance=3)
    for _ in range(40):
        start = rng.randrange(len(main_eps) - 4)
        group = main_eps[start:start + rng.randint(2, 4)]
        with svc.backend.read() as db:
            recs = svc._check(db, db.records(View.of(scopes["main"], ids=tuple(group), status="active")))[0]
        if len(recs) < 2:
            continue
        with contextlib.suppress(MemwardenError):
            svc.write(cons, max(r.content for r in recs) + " (merged)", kind="episode",
                      derived_from=[r.id for r in recs], derived_versions={r.id: r.version for r in recs})
    svc.close()
    (root / "built_at").write_text(str(time.time_ns() // 1_000_000))


# --- child: run queries (either tree) ---------------------------------------------------------------------------

def make_queries(count: int, seed: int = 5) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    words = sorted({w for s in _TOPICS + _PROJECTS + _OUTCOMES + _NAMES for w in s.replace("-", " ").split()})
    out = []
    for i in range(count):
        r = rng.random()
        if r < 0.45:  # bench_server's query(): two topic words and a project word
            topic = rng.choice(_TOPICS).split()
            q = " ".join([*rng.sample(topic, min(2, len(topic))), rng.choice(_PROJECTS).split()[0]])
        elif r < 0.6:
            q = rng.choice(words)
        elif r < 0.7:
            q = " ".join(rng.choice(words) for _ in range(rng.randint(12, 40)))
        elif r < 0.78:
            q = rng.choice(["größe caches", "東京 オフィス", "facturación", "Chloé café", "Zoë Łukasz deploy",
                            "crème", "移転 budget", "Größe"])
        elif r < 0.84:
            q = rng.choice(["zzqx vorpal", "xylophone", "", "   ", "the and of", "note 4242", "note 17"])
        else:
            q = " ".join(rng.sample(words, rng.randint(3, 7)))
        out.append({"q": q, "k": rng.choice([1, 5, 5, 20]),
                    "kind": rng.choice([None] * 6 + ["episode", "fact", "preference"]),
                    "scope": rng.choice(["main"] * 8 + ["other-agent", "other-user"]),
                    "clearance": rng.choice([1, 1, 1, 3]), "shared": rng.random() < 0.3, "i": i})
    return out


def child_run(root: Path, config: str, queries: int, out: Path) -> None:
    import memwarden
    import memwarden.retrieval.hybrid as hybrid
    from memwarden import records as rec_mod
    from memwarden.retrieval import Ranking
    from memwarden.service import Context

    frozen = int((root / "built_at").read_text()) + 3_600_000  # an hour later: the 1-minute TTLs have expired
    original = rec_mod.now_ms
    for name, mod in list(sys.modules.items()):
        if name.startswith("memwarden") and getattr(mod, "now_ms", None) is original:
            mod.now_ms = lambda: frozen  # type: ignore[attr-defined]

    captured: list[list[tuple[int, float]]] = []
    want_k = [0]
    cls = hybrid.HybridSearch
    if hasattr(cls, "_best"):  # this tree: the ranking's top k
        orig_best = cls._best

        def best(self: Any, *a: Any, **kw: Any) -> Any:
            got = orig_best(self, *a, **kw)
            captured.append([(int(r), float(s)) for r, s in got])
            return got

        cls._best = best  # type: ignore[method-assign]
    else:  # the reference: scores after _weigh, best first, ties by row key
        orig_weigh = cls._weigh

        def weigh(self: Any, cands: dict[int, Any]) -> None:
            orig_weigh(self, cands)
            top = sorted(cands.values(), key=lambda c: (-c.score, c.rowid))[:want_k[0]]
            captured.append([(c.rowid, c.score) for c in top])

        cls._weigh = weigh  # type: ignore[method-assign]

    svc = memwarden.open(root / "eq.db")
    if config == "bm25":
        svc.retrieval.ranking = Ranking(mode="bm25")
    with svc.backend.read() as db:
        start_seq = db.audit_head()[0]
    scopes = _scopes()
    results = []
    for q in make_queries(queries):
        ctx = Context(scopes[q["scope"]], session_id=f"eq-{q['scope']}", actor="agent:eq",
                      clearance=q["clearance"], read_shared=q["shared"])
        svc.open_session(ctx.session_id)
        want_k[0] = q["k"]
        before = len(captured)
        found = svc.search(ctx, q["q"], k=q["k"], kind=q["kind"])
        svc.log_reads(ctx, "read", found, {"via": "search"})
        scores = captured[before] if len(captured) > before else []
        results.append({"ids": [r.id for r in found], "versions": [r.version for r in found],
                        "scores": [[r, repr(s)] for r, s in scores]})
    from memwarden.store.base import AUDIT_COLUMNS

    with svc.backend.read() as db:
        rows = list(db.audit_rows(start_seq))
    audit = [dict(zip(AUDIT_COLUMNS, r, strict=True)) for r in rows]
    svc.close()
    out.write_text(json.dumps({"results": results, "audit": audit}, default=str))


# --- parent ------------------------------------------------------------------------------------------------------

def _child(src: Path, root: Path, embedder: str, *args: str) -> None:
    env = _env(root, embedder)
    env["PYTHONPATH"] = str(src)
    subprocess.run([sys.executable, str(Path(__file__).resolve()), *args], env=env, check=True, cwd=root)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ref", default="ccb725a", help="reference revision (git archive of its src/)")
    p.add_argument("--records", type=int, default=10_000)
    p.add_argument("--queries", type=int, default=3_000)
    p.add_argument("--dir", type=Path, default=None, help="work directory (default: a new temporary one)")
    p.add_argument("--configs", default=",".join(CONFIGS))
    p.add_argument("--new", type=Path, default=TREE_SRC, help="src/ of the tree compared (default: this tree's)")
    a = p.parse_args()
    work = a.dir or Path(tempfile.mkdtemp(prefix="search-eq-"))
    work.mkdir(parents=True, exist_ok=True)
    ref_root = Path(f"/tmp/search-ref-{a.ref}")
    if not (ref_root / "src").is_dir():
        ref_root.mkdir(parents=True, exist_ok=True)
        arch = subprocess.run(["git", "-C", str(HERE.parent), "archive", a.ref, "src"], check=True,
                              capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(ref_root)], input=arch, check=True)
    # every run uses the same path (the anchor beside the key names the database's path): built there, kept as
    # ``base``, copied back before each run
    base, run = work / "base", work / "run"
    if not (base / "built_at").exists():
        shutil.rmtree(run, ignore_errors=True)
        run.mkdir()
        t0 = time.monotonic()
        _child(ref_root / "src", run, "hash", "_build", str(run), str(a.records))
        shutil.rmtree(base, ignore_errors=True)
        run.rename(base)
        print(f"built the store with {a.ref} in {time.monotonic() - t0:.0f} s", flush=True)
    ok = True
    rows = []
    for config in a.configs.split(","):
        outs = {}
        for side, src in (("ref", ref_root / "src"), ("tree", a.new)):
            shutil.rmtree(run, ignore_errors=True)
            shutil.copytree(base, run)
            t0 = time.monotonic()
            out = work / f"{config}-{side}.json"
            _child(src, run, "hash" if config == "hash" else "none", "_run", str(run), config, str(a.queries),
                   str(out))
            outs[side] = json.loads(out.read_text())
            print(f"{config}/{side}: {a.queries} queries in {time.monotonic() - t0:.0f} s", flush=True)
        ref, new = outs["ref"], outs["tree"]
        diff = [i for i, (x, y) in enumerate(zip(ref["results"], new["results"], strict=True)) if x != y]
        audit_same = ref["audit"] == new["audit"]
        nonempty = sum(bool(r["ids"]) for r in ref["results"])
        rows.append((config, len(ref["results"]), nonempty, sum(len(r["ids"]) for r in ref["results"]),
                     len(diff), len(ref["audit"]), "same" if audit_same else "DIFFERENT"))
        if diff:
            i = diff[0]
            print(f"  first difference, query {i}: {make_queries(a.queries)[i]}\n   ref:  {ref['results'][i]}\n"
                  f"   tree: {new['results'][i]}")
        ok = ok and not diff and audit_same and len(ref["audit"]) >= a.queries
    head = ("config", "queries", "with results", "records returned", "differing", "audit rows", "audit")
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows, strict=True)]
    for r in (head, *rows):
        print("  ".join(str(x).rjust(w) for x, w in zip(r, widths, strict=True)))
    print("EQUIVALENT" if ok else "NOT EQUIVALENT")
    return 0 if ok else 1


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "_build":
        child_build(Path(sys.argv[2]), int(sys.argv[3]))
    elif len(sys.argv) > 1 and sys.argv[1] == "_run":
        child_run(Path(sys.argv[2]), sys.argv[3], int(sys.argv[4]), Path(sys.argv[5]))
    else:
        sys.exit(main())
