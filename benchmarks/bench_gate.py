"""Write-gate benchmark (issue 3, acceptance item 2): memwarden's gate vs OWASP ``agent-memory-guard``.

One process, the same candidates for every detector:

* **attacks** — ``tests/gate_corpus/attacks.jsonl``, objects ``{"text", "family", "lang", "note"}``: memory-shaped
  poisoning attempts; detection rate per family, overall and per non-English language;
* **hard negatives** — ``tests/gate_corpus/negatives.jsonl``, objects ``{"text", "kind", "lang", "note"}``: benign
  facts full of trigger words; false-positive rate;
* **LoCoMo observations** — every ``observation`` fact of ``../shared/data/locomo10.json.gz`` (10 conversations,
  ~2,541 third-person facts, read in place, never copied); false-positive rate.

Detectors, and what counts as "detected" (a positive) for each:

* **memwarden** — ``memwarden.scan(text, source="model", kind=kind)`` with the default gate; detected iff
  ``verdict != "accept"`` (``review`` and ``reject`` both count). ``kind`` is the negative's ``"kind"`` when it has
  one, else ``"fact"`` (attacks and LoCoMo facts are scanned as facts).
* **agent-memory-guard ``scan()``** — the library's universal text API, ``agent_memory_guard.scan.scan(text)``
  (note: ``from agent_memory_guard import scan`` yields the *module* in 0.3.x, so the function is imported from
  the module). It runs ``PromptInjectionDetector``, ``SensitiveDataDetector`` (email ignored, its default) and
  ``SelfReinforcementDetector`` (inert outside ``MemoryGuard.write``); detected iff ``ScanResult.safe`` is False.
* **agent-memory-guard strict ``MemoryGuard``** — every rule-based detector the package ships, at its most
  sensitive: ``PromptInjectionDetector``, ``SensitiveDataDetector(ignore=())`` (email pattern on too),
  ``MemoryPersistenceInjectionDetector``, ``ToolAbuseDetector``, ``PrivilegeEscalationDetector``,
  ``ExcessiveAutonomyDetector``, ``SizeAnomalyDetector``, ``RapidChangeDetector``, plus the three the guard always
  adds (``ProtectedKeyDetector`` with ``Policy.strict()``'s protected keys, ``CrossTaskContaminationDetector``,
  ``SelfReinforcementDetector``). The policy blocks on *any* finding of any detector at any severity
  (one rule ``on="*"``, ``action=block``, ``min_severity=info``) instead of ``Policy.strict()``'s mix of block /
  redact / quarantine. Each candidate is ``guard.write(f"memory.{n}", text, source_class=AGENT_AUTHORED)`` to a
  key of its own (so the per-key stateful detectors — size growth, write churn, self-reinforcement — judge each
  candidate alone, as a single write), on a fresh guard per pass, with ``snapshot_on_block=False`` (otherwise
  every block deep-copies the whole store, a cost that grows with the run and is not detection). Detected iff
  the write raises ``PolicyViolation`` or returns an action other than ``ALLOW``. ``MLInjectionDetector`` is
  *not* used: it needs the ``[ml]`` extra (``transformers``) and a DeBERTa model download, and is not part of a
  default install.

Latency: every detector scans every candidate once per pass (``--passes``, after one untimed pass that also
decides detection and warms caches); within a pass the candidates go in chunks of 50 and the order of the
detectors rotates per chunk, so machine noise hits every side. Each call is timed with ``perf_counter_ns``; a
candidate's latency is the median of its passes, and the tables give the median and p99 of those over the
candidates (all of them, and those of <= 200 characters, which is where the issue's targets apply).

"What fired on benign candidates" names, per false positive, memwarden's verdict and rule ids, the threat types of
agent-memory-guard ``scan()``, and the blocking detector of the strict guard (its highest-severity finding).

    .venv/bin/python benchmarks/bench_gate.py [--corpus-dir tests/gate_corpus] [--locomo PATH] [--passes 7]
                                             [--out /tmp/gate.md] [--misses 20] [--strict]

Results: docs/benchmarks.md, section "Write gate (issue 3)".
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import gzip
import hashlib
import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import time
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

import memwarden
from _report import cpu_model, table, us
from memwarden.records import Kind

try:
    from agent_memory_guard import Action, MemoryGuard, PolicyViolation, SourceClass
    from agent_memory_guard.detectors import (
        Detector,
        ExcessiveAutonomyDetector,
        MemoryPersistenceInjectionDetector,
        PrivilegeEscalationDetector,
        PromptInjectionDetector,
        RapidChangeDetector,
        SensitiveDataDetector,
        SizeAnomalyDetector,
        ToolAbuseDetector,
    )
    from agent_memory_guard.events import Severity
    from agent_memory_guard.policies.policy import Policy as AmgPolicy
    from agent_memory_guard.policies.policy import PolicyRule
    from agent_memory_guard.scan import ScanResult
    from agent_memory_guard.scan import scan as amg_scan
except ImportError:  # pragma: no cover - the bench extra is missing
    sys.exit("agent-memory-guard is not installed: .venv/bin/pip install -e '.[dev,bench]'")

REPO = Path(__file__).resolve().parent.parent

# --- targets (issue 3, acceptance 2) ------------------------------------------------------------------------
MIN_DETECTION = 0.97  # memwarden, whole attack corpus
MAX_FP = 0.005  # memwarden, on LoCoMo observations and on the hard negatives
SHORT = 200  # characters: the latency targets apply to candidates this short
MAX_MEDIAN_US = 50.0  # memwarden median per candidate of <= SHORT characters
MAX_RATIO = 2.0  # memwarden median / agent-memory-guard median on the same (short) inputs

CHUNK = 50  # candidates per detector before the order of the detectors rotates

MW, AMG_SCAN, AMG_STRICT = "memwarden", "amg-scan", "amg-strict"
SIDES = (MW, AMG_SCAN, AMG_STRICT)
LABEL = {
    MW: "memwarden `scan()`",
    AMG_SCAN: "agent-memory-guard `scan()`",
    AMG_STRICT: "agent-memory-guard strict `MemoryGuard`",
}
ATTACKS, NEGATIVES, LOCOMO = "attacks", "negatives", "locomo"
SET_LABEL = {NEGATIVES: "hard negatives (corpus)", LOCOMO: "LoCoMo observations"}


@dataclass(frozen=True, slots=True)
class Item:
    text: str
    set: str  # attacks | negatives | locomo
    kind: str = "fact"  # memwarden kind the candidate is scanned as
    family: str = ""
    lang: str = "en"
    note: str = ""


# --- inputs -------------------------------------------------------------------------------------------------


def _read_jsonl(path: Path, required: Sequence[str]) -> list[dict[str, object]]:
    out = []
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                sys.exit(f"{path}:{n}: not valid JSON ({exc.msg})")
            if not isinstance(obj, dict) or not isinstance(obj.get("text"), str):
                sys.exit(f"{path}:{n}: expected an object with a string \"text\"")
            missing = [k for k in required if not isinstance(obj.get(k), str) or not obj.get(k)]
            if missing:
                sys.exit(f"{path}:{n}: missing {', '.join(missing)}")
            out.append(obj)
    return out


def load_corpus(corpus_dir: Path) -> tuple[list[Item], list[Item]]:
    paths = [corpus_dir / "attacks.jsonl", corpus_dir / "negatives.jsonl"]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        sys.exit("gate corpus not found: " + ", ".join(missing) + "\n(issue 3, acceptance 1 builds it under "
                 "tests/gate_corpus/; point --corpus-dir at a directory holding attacks.jsonl and negatives.jsonl)")
    attacks = [Item(str(o["text"]), ATTACKS, "fact", str(o["family"]), str(o.get("lang") or "en"),
                    str(o.get("note") or ""))
               for o in _read_jsonl(paths[0], ("family",))]
    negatives = [Item(str(o["text"]), NEGATIVES, str(o.get("kind") or "fact"), "", str(o.get("lang") or "en"),
                      str(o.get("note") or ""))
                 for o in _read_jsonl(paths[1], ())]
    if not attacks or not negatives:
        sys.exit(f"gate corpus in {corpus_dir} is empty ({len(attacks)} attacks, {len(negatives)} negatives)")
    kinds = {k.value for k in Kind}
    odd = Counter(it.kind for it in negatives if it.kind not in kinds)
    if odd:
        print(f"warning: negatives with kinds memwarden does not know (scanned as given, so record.invalid_kind "
              f"rejects them): {dict(odd)}", file=sys.stderr)
    return attacks, negatives


def load_locomo(path: Path) -> list[Item]:
    if not path.is_file():
        sys.exit(f"LoCoMo data not found: {path} (pass --locomo PATH to locomo10.json.gz)")
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        data = json.load(fh)
    out = []
    for conv in data:
        for session in (conv.get("observation") or {}).values():
            for facts in session.values():
                out.extend(Item(str(fact[0]), LOCOMO) for fact in facts)
    if not out:
        sys.exit(f"no observation facts in {path}")
    return out


def sha12(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:12]


# --- the detectors ------------------------------------------------------------------------------------------
# Each side is a factory (called once per pass) of a scan function; the scan function is what is timed, and
# ``interpret`` turns its result into None (accepted) or a short reason (detected), outside the timed region.

ScanFn = Callable[[Item], object]


def memwarden_side() -> ScanFn:
    scan = memwarden.scan

    def run(it: Item) -> object:
        return scan(it.text, source="model", kind=it.kind)
    return run


def memwarden_reason(result: object) -> str | None:
    assert isinstance(result, memwarden.Verdict)
    return None if result.verdict == "accept" else f"{result.verdict}: {', '.join(result.rules) or '-'}"


def amg_scan_side() -> ScanFn:
    def run(it: Item) -> object:
        return amg_scan(it.text)
    return run


def amg_scan_reason(result: object) -> str | None:
    assert isinstance(result, ScanResult)
    return None if result.safe else ", ".join(t.value for t in result.threats)


def strict_guard() -> MemoryGuard:
    """Every shipped rule-based detector; block on any finding of any detector at any severity."""
    policy = AmgPolicy(default_action=Action.ALLOW, protected_keys=AmgPolicy.strict().protected_keys,
                       rules=[PolicyRule("block_any_finding", "*", Action.BLOCK, min_severity=Severity.INFO)])
    detectors: list[Detector] = [
        PromptInjectionDetector(),
        SensitiveDataDetector(ignore=()),
        MemoryPersistenceInjectionDetector(),
        ToolAbuseDetector(),
        PrivilegeEscalationDetector(),
        ExcessiveAutonomyDetector(),
        SizeAnomalyDetector(),
        RapidChangeDetector(),
    ]  # the guard appends ProtectedKeyDetector, CrossTaskContaminationDetector, SelfReinforcementDetector
    return MemoryGuard(policy=policy, detectors=detectors, snapshot_on_block=False)


def amg_strict_side() -> ScanFn:
    guard = strict_guard()
    n = 0

    def run(it: Item) -> object:
        nonlocal n
        n += 1
        try:
            return guard.write(f"memory.{n}", it.text, source_class=SourceClass.AGENT_AUTHORED)
        except PolicyViolation as exc:
            return exc
    return run


def amg_strict_reason(result: object) -> str | None:
    if isinstance(result, PolicyViolation):
        return str(getattr(result, "rule", None) or "blocked")
    return None if result == Action.ALLOW else str(getattr(result, "value", result))


FACTORY: dict[str, Callable[[], ScanFn]] = {MW: memwarden_side, AMG_SCAN: amg_scan_side,
                                              AMG_STRICT: amg_strict_side}
REASON: dict[str, Callable[[object], str | None]] = {MW: memwarden_reason, AMG_SCAN: amg_scan_reason,
                                                     AMG_STRICT: amg_strict_reason}


def detect(items: Sequence[Item]) -> dict[str, list[str | None]]:
    """The untimed first pass: what each detector decides for every candidate (also warms every cache)."""
    out: dict[str, list[str | None]] = {}
    for side in SIDES:
        run, why = FACTORY[side](), REASON[side]
        out[side] = [why(run(it)) for it in items]
    return out


def time_passes(items: Sequence[Item], passes: int) -> dict[str, list[float]]:
    """Per side, each candidate's median latency (ns) over ``passes`` interleaved passes."""
    per: dict[str, list[list[int]]] = {side: [[] for _ in items] for side in SIDES}
    clock = time.perf_counter_ns
    names = list(SIDES)
    for p in range(passes):
        runs = {side: FACTORY[side]() for side in SIDES}
        gc.collect()
        for c, start in enumerate(range(0, len(items), CHUNK)):
            k = (p + c) % len(names)
            for side in names[k:] + names[:k]:
                run, acc = runs[side], per[side]
                for i in range(start, min(start + CHUNK, len(items))):
                    it = items[i]
                    t = clock()
                    run(it)
                    acc[i].append(clock() - t)
        print(f"  pass {p + 1}/{passes} done", file=sys.stderr)
    return {side: [float(statistics.median(v)) for v in lat] for side, lat in per.items()}


# --- statistics and tables ----------------------------------------------------------------------------------


def pct(values: Sequence[float], p: float) -> float:
    s = sorted(values)
    return float(s[max(0, math.ceil(p / 100 * len(s)) - 1)])




def rate(k: int, n: int) -> str:
    """``12.3 % (45/366)``; two decimals below 1 % so a single hit in a large set does not read as 0.0 %."""
    if not n:
        return "—"
    r = 100 * k / n
    return f"{r:.2f} % ({k:,}/{n:,})" if 0 < r < 1 else f"{r:.1f} % ({k:,}/{n:,})"




# --- environment --------------------------------------------------------------------------------------------




def git_state(*paths: str) -> str:
    """The commit measured, and whether ``paths`` had uncommitted changes (read-only git calls)."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                              text=True, check=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", *paths], cwd=REPO, capture_output=True,
                               text=True, check=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown (not a git checkout)"
    return head + (f" + uncommitted changes in {', '.join(paths)}" if dirty else "")


def shown_path(path: Path) -> str:
    """Relative to the repository when inside it or next to it (``../shared/...``), else absolute."""
    full = path.resolve()
    if full.is_relative_to(REPO.parent):
        return os.path.relpath(full, REPO)
    return str(full)


def corpus_state(corpus_dir: Path) -> str:
    full = corpus_dir.resolve()
    if not full.is_relative_to(REPO):
        return "outside the repository"
    return "repository " + git_state(os.path.relpath(full, REPO))


# --- the run ------------------------------------------------------------------------------------------------


@dataclass
class Results:
    env: list[tuple[str, str]]
    items: list[Item]
    found: dict[str, list[str | None]]  # side -> per item: None (accepted) or why it was flagged
    latency: dict[str, list[float]]  # side -> per item: median ns over the passes
    passes: int
    notes: list[str] = field(default_factory=list)


def run(args: argparse.Namespace) -> Results:
    attacks, negatives = load_corpus(args.corpus_dir)
    locomo = load_locomo(args.locomo)
    items = [*attacks, *negatives, *locomo]
    load_before = os.getloadavg()
    print(f"{len(attacks)} attacks, {len(negatives)} hard negatives, {len(locomo)} LoCoMo facts; "
          f"detection pass", file=sys.stderr)
    found = detect(items)
    latency = time_passes(items, args.passes)
    versions = {p: metadata.version(p) for p in ("memwarden", "agent-memory-guard")}
    env = [
        ("machine", f"{os.cpu_count()} CPUs ({cpu_model()}), {platform.system()} {platform.release()}"),
        ("python", platform.python_version()),
        ("packages", ", ".join(f"{k} {v}" for k, v in versions.items())),
        ("memwarden source", git_state("src")),
        ("attack corpus", f"{shown_path(args.corpus_dir / 'attacks.jsonl')}: {len(attacks):,} attacks, "
                          f"{len({a.family for a in attacks})} families, {len({a.lang for a in attacks})} "
                          f"languages (sha256 {sha12(args.corpus_dir / 'attacks.jsonl')}; "
                          f"{corpus_state(args.corpus_dir)})"),
        ("hard negatives", f"{shown_path(args.corpus_dir / 'negatives.jsonl')}: {len(negatives):,} "
                           f"(sha256 {sha12(args.corpus_dir / 'negatives.jsonl')})"),
        ("LoCoMo", f"{shown_path(args.locomo)}: {len(locomo):,} observation facts "
                   f"(sha256 {sha12(args.locomo)})"),
        ("load average (1/5/15 min)", f"{'/'.join(f'{x:.2f}' for x in load_before)} before, "
                                      f"{'/'.join(f'{x:.2f}' for x in os.getloadavg())} after"),
        ("run", f"passes={args.passes}, chunk={CHUNK}, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC"),
    ]
    return Results(env, items, found, latency, args.passes)


def _detected(r: Results, side: str, idx: Sequence[int]) -> int:
    return sum(1 for i in idx if r.found[side][i] is not None)


def _groups(r: Results, key: Callable[[Item], str], pred: Callable[[Item], bool]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for i, it in enumerate(r.items):
        if pred(it):
            out.setdefault(key(it), []).append(i)
    return dict(sorted(out.items()))


def targets(r: Results) -> list[tuple[str, str, str, bool]]:
    att = [i for i, it in enumerate(r.items) if it.set == ATTACKS]
    short = [i for i, it in enumerate(r.items) if len(it.text) <= SHORT]
    rows: list[tuple[str, str, str, bool]] = []
    k = _detected(r, MW, att)
    rows.append(("memwarden detection, attack corpus", f"≥ {MIN_DETECTION:.0%}", rate(k, len(att)),
                 k >= MIN_DETECTION * len(att)))
    for s in (LOCOMO, NEGATIVES):
        idx = [i for i, it in enumerate(r.items) if it.set == s]
        k = _detected(r, MW, idx)
        rows.append((f"memwarden false positives, {SET_LABEL[s]}", f"≤ {MAX_FP:.1%}", rate(k, len(idx)),
                     k <= MAX_FP * len(idx)))
    mw = statistics.median(r.latency[MW][i] for i in short)
    rows.append((f"memwarden median per candidate of ≤ {SHORT} chars ({len(short):,})", f"≤ {MAX_MEDIAN_US:g} µs",
                 f"{us(mw)} µs", mw / 1e3 <= MAX_MEDIAN_US))
    for side in (AMG_SCAN, AMG_STRICT):
        other = statistics.median(r.latency[side][i] for i in short)
        rows.append((f"memwarden median / {LABEL[side]} median, same ≤ {SHORT}-char inputs", f"≤ {MAX_RATIO:g}x",
                     f"{mw / other:.2f}x ({us(mw)} vs {us(other)} µs)", mw / other <= MAX_RATIO))
    return rows


def report(r: Results) -> str:
    out = ["#### Environment", "", table(["", ""], [list(e) for e in r.env], right=[False, False]), ""]
    heads = [LABEL[s] for s in SIDES]

    def det_rows(groups: dict[str, list[int]]) -> list[list[str]]:
        return [[name, f"{len(idx):,}", *(rate(_detected(r, s, idx), len(idx)) for s in SIDES)]
                for name, idx in groups.items()]

    fam = _groups(r, lambda it: it.family, lambda it: it.set == ATTACKS)
    every = [i for idx in fam.values() for i in idx]
    rows = [*det_rows(fam), ["**all attacks**", f"{len(every):,}",
                             *(f"**{rate(_detected(r, s, every), len(every))}**" for s in SIDES)]]
    out += ["#### Detection rate per attack family (higher is better)", "",
            table(["family", "n", *heads], rows, right=[False, True, True, True, True]), ""]

    lang = _groups(r, lambda it: it.lang, lambda it: it.set == ATTACKS and it.lang != "en")
    if lang:
        foreign = [i for idx in lang.values() for i in idx]
        rows = [*det_rows(lang), ["**all non-English**", f"{len(foreign):,}",
                                  *(f"**{rate(_detected(r, s, foreign), len(foreign))}**" for s in SIDES)]]
        out += ["#### Detection rate per language, non-English attacks", "",
                table(["language", "n", *heads], rows, right=[False, True, True, True, True]), ""]

    rows = []
    for s in (NEGATIVES, LOCOMO):
        idx = [i for i, it in enumerate(r.items) if it.set == s]
        rows.append([SET_LABEL[s], f"{len(idx):,}", *(rate(_detected(r, side, idx), len(idx)) for side in SIDES)])
    out += ["#### False-positive rate per benign set (lower is better)", "",
            table(["benign set", "n", *heads], rows, right=[False, True, True, True, True]), ""]

    rows = []
    for side in SIDES:
        for s in (NEGATIVES, LOCOMO):
            why = Counter(r.found[side][i] for i, it in enumerate(r.items) if it.set == s)
            why.pop(None, None)
            for reason, n in why.most_common(6):
                rows.append([LABEL[side], SET_LABEL[s], f"`{reason}`", f"{n:,}"])
    if rows:
        out += ["#### What fired on benign candidates (top 6 reasons per set)", "",
                table(["detector", "benign set", "reason", "n"], rows, right=[False, False, False, True]), ""]

    groups = {"all candidates": list(range(len(r.items))),
              f"≤ {SHORT} chars": [i for i, it in enumerate(r.items) if len(it.text) <= SHORT],
              "attacks": [i for i, it in enumerate(r.items) if it.set == ATTACKS],
              "hard negatives": [i for i, it in enumerate(r.items) if it.set == NEGATIVES],
              "LoCoMo": [i for i, it in enumerate(r.items) if it.set == LOCOMO]}
    rows = []
    for gname, idx in groups.items():
        if not idx:
            continue
        mw = statistics.median(r.latency[MW][i] for i in idx)
        for side in SIDES:
            lat = [r.latency[side][i] for i in idx]
            med = statistics.median(lat)
            rows.append([gname if side == MW else "", f"{len(idx):,}" if side == MW else "", LABEL[side], us(med),
                         us(pct(lat, 99)), "—" if side == MW else f"{mw / med:.2f}x"])
    out += [f"#### Scan latency per candidate (median of {r.passes} interleaved passes per candidate; median and "
            "p99 over the candidates)", "",
            table(["inputs", "n", "detector", "median µs", "p99 µs", "memwarden median / this"], rows,
                  right=[False, True, False, True, True, True]), ""]

    rows = [[name, goal, measured, "PASS" if ok else "FAIL"] for name, goal, measured, ok in targets(r)]
    out += ["#### Targets (issue 3, acceptance 2)", "",
            table(["target", "goal", "measured", "result"], rows, right=[False, True, True, False])]
    return "\n".join(out) + "\n"


def failed(r: Results) -> bool:
    return not all(ok for *_, ok in targets(r))


# --- --misses -----------------------------------------------------------------------------------------------

# 20+ characters of a token alphabet holding a letter and a digit (keys, tokens; not words, hosts or paths)
_TOKENISH = re.compile(r"(?<![\w+=-])(?=[\w+=-]{0,200}?\d)(?=[\w+=-]{0,200}?[A-Za-z])[\w+=-]{20,}")
# a cue word, then a value holding a digit or a symbol ("password Tr0ub4dor&3", "PIN is 4821" are masked,
# "password manager", "key is under the mat" are not), unless memwarden already redacted it
_PROSE_SECRET = re.compile(r"(?i)\b(password|passwd|passphrase|pin|passcode|cvv|secret|token|api[ _-]?key|key)"
                           r"(\s{0,3}(?:is|was|:|=)\s{0,3}|\s{1,3})(?!\[REDACTED)(?=\S{0,80}?[\d!#$%&*@^~])(\S+)")
_REST_SECRET = re.compile(r"(?i)\b(seed phrase|recovery (?:codes?|phrase)|mnemonic|ssn|social security number)"
                          r"([^\w\n]{0,3})[^\n]{1,120}")
_PEM = re.compile(r"-----BEGIN [A-Z ]+-----.*?(?:-----END [A-Z ]+-----|$)", re.DOTALL)
_URL_PASSWORD = re.compile(r"(://[^/\s:@]{1,200}:)[^/\s@]{1,200}@")
_BEARER = re.compile(r"(?i)\b(bearer\s+)\S+")
_NAMED_SECRET = re.compile(r"(?i)\b((?:secret|key|token|password)\s+)[\w+/=-]{16,}")


def _mask(text: str) -> str:
    """Fallback when memwarden has no secret redactor yet: hide PEM blocks, URL passwords, bearer tokens, long
    token-like runs and the value after "password is" / "PIN:" style prose."""
    text = _PEM.sub("[PEM REDACTED]", text)
    text = _URL_PASSWORD.sub(r"\1[REDACTED]@", text)
    text = _BEARER.sub(r"\1[REDACTED]", text)
    text = _NAMED_SECRET.sub(r"\1[REDACTED]", text)
    text = _PROSE_SECRET.sub(lambda m: m.group(1) + m.group(2) + "[REDACTED]", text)
    text = _REST_SECRET.sub(r"\1\2[REDACTED]", text)
    return _TOKENISH.sub(lambda m: m.group()[:4] + "…[REDACTED]", text)


def redactor() -> tuple[Callable[[str], str], str]:
    """memwarden's own secret redaction when it exists, then the fallback mask on top: a *missed* secret attack
    is by definition one memwarden's finder did not see, and its value must not be printed either."""
    try:
        from memwarden.gate.secrets import find_secrets, redact
    except ImportError:
        return _mask, "masked by the benchmark (memwarden.gate.secrets not available)"

    def run(text: str) -> str:
        with contextlib.suppress(Exception):  # the gate is under construction; never fail the report on it
            text = redact(text, find_secrets(text))
        return _mask(text)
    return run, "redacted by memwarden.gate.secrets, then masked by the benchmark's fallback"


def printable(text: str, limit: int = 100) -> str:
    """One line, at most ``limit`` characters of the original, invisible and control characters spelled out."""
    cut = text[:limit]
    shown = "".join(f"\\u{ord(ch):04x}" if unicodedata.category(ch) in ("Cc", "Cf", "Co", "Cn", "Zl", "Zp")
                    or (ch.isspace() and ch != " ") else ch for ch in cut)
    return shown + ("…" if len(text) > limit else "")


def misses(r: Results, n: int) -> str:
    redact, how = redactor()
    found = r.found[MW]
    missed = [it for i, it in enumerate(r.items) if it.set == ATTACKS and found[i] is None]
    fps = [(it, found[i]) for i, it in enumerate(r.items) if it.set != ATTACKS and found[i] is not None]
    out = [f"#### memwarden: missed attacks ({len(missed):,}; up to {n} shown, text truncated to 100 chars, "
           f"secrets {how})", ""]
    out += [f"- [{it.family} / {it.lang}] {printable(redact(it.text))}" for it in missed[:n]] or ["- none"]
    out += ["", f"#### memwarden: false positives ({len(fps):,}; up to {n} shown)", ""]
    out += [f"- [{SET_LABEL[it.set]} / kind={it.kind} / {it.lang}] {why} — {printable(redact(it.text))}"
            for it, why in fps[:n]] or ["- none"]
    return "\n".join(out) + "\n"


# --- main ---------------------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--corpus-dir", type=Path, default=REPO / "tests" / "gate_corpus",
                    help="directory holding attacks.jsonl and negatives.jsonl (default: tests/gate_corpus)")
    ap.add_argument("--locomo", type=Path, default=REPO.parent / "shared" / "data" / "locomo10.json.gz",
                    help="LoCoMo locomo10.json.gz (default: <repo>/../shared/data/locomo10.json.gz)")
    ap.add_argument("--passes", type=int, default=7, help="timed passes over every candidate (default 7)")
    ap.add_argument("--out", type=Path, default=None, help="also write the markdown tables to this file")
    ap.add_argument("--misses", type=int, default=0, metavar="N",
                    help="print up to N attacks memwarden misses and N benign candidates it flags")
    ap.add_argument("--strict", action="store_true", help="exit 1 if a target fails")
    args = ap.parse_args(argv)
    if args.passes < 1 or args.misses < 0:
        ap.error("need --passes >= 1 and --misses >= 0")

    t0 = time.perf_counter()
    results = run(args)
    text = report(results)
    print(text)
    if args.misses:
        print(misses(results, args.misses))
    print(f"done in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        exe = os.path.relpath(sys.executable) if sys.executable.startswith(os.getcwd()) else "python"
        cmd = f"{exe} benchmarks/bench_gate.py " + " ".join(sys.argv[1:] if argv is None else argv)
        args.out.write_text(f"Command: `{cmd.strip()}`\n\n{text}", encoding="utf-8")
        print(f"wrote {args.out}", file=sys.stderr)
    return 1 if args.strict and failed(results) else 0


if __name__ == "__main__":
    sys.exit(main())
