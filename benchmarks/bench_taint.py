"""Taint benchmark (issue 4, acceptance 3): what the session ledger costs, side by side with its baseline.

One process, interleaved repetitions:

* **per recorded tool call** — ``session.record_tool_call`` on a realistic mix (web fetch with a URL, web search,
  MCP tool, file read inside the workspace, file read through a symlink that leaves it, memwarden's own memory
  tool, an unknown tool, JSON-string arguments), timed per call; the baseline is the least an application does
  to keep any call log (append ``(name, arguments)`` to a list). Target: ≤ 10 µs median per call.
* **session start** — ``store.session(scope, workspace=[…])`` (frozen block, session row, audit, ledger) with
  taint tracking vs the same session start with the ledger replaced by a no-op in the same process. Target: the
  ratio of medians ≤ 1.1x.

    .venv/bin/python benchmarks/bench_taint.py [--calls 20000] [--starts 300] [--scope-records 1000]
                                              [--out FILE] [--strict]
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import secrets
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import memwarden
from _report import cpu_model, table, us
from memwarden import session as session_mod
from memwarden.taint import Ledger, TaintDecision

MAX_CALL_US = 10.0
MAX_START_RATIO = 1.1


def _calls(ws: Path) -> list[tuple[str, str, Any]]:
    return [
        ("web fetch (URL recorded)", "web_fetch", {"url": "https://docs.example.com/guide?page=2"}),
        ("web search", "web_search", {"query": "python sqlite wal fsync"}),
        ("MCP tool (server__tool)", "github__get_issue", {"repo": "acme/api", "number": 42}),
        ("file read inside the workspace", "read_file", {"path": "src/app/main.py"}),
        ("file read via symlink to /etc", "read_file", {"path": str(ws / "etc-link" / "hostname")}),
        ("own memory tool (never taints)", "memory_search", {"query": "deploy"}),
        ("unknown tool (fail closed)", "run_migration", {"target": "staging"}),
        ("JSON-string arguments", "read_file", '{"path": "README.md"}'),
    ]


class _NoLedger:
    """Stands in for the ledger in the baseline session start: the same attributes, no work."""

    changes = 0
    tainted = False
    reasons: list[str] = []  # noqa: RUF012 - read only
    sources: tuple[str, ...] = ()
    calls = 0

    def __init__(self, *_: Any) -> None:
        pass

    def record_tool_call(self, *_: Any) -> TaintDecision:
        return TaintDecision(False, "")


@contextmanager
def _without_ledger() -> Any:
    real = session_mod.Ledger
    session_mod.Ledger = _NoLedger  # type: ignore[assignment,misc]
    try:
        yield
    finally:
        session_mod.Ledger = real  # type: ignore[misc]


def _med(ns: list[int]) -> float:
    return float(statistics.median(ns))


def _p95(ns: list[int]) -> float:
    s = sorted(ns)
    return float(s[max(0, int(0.95 * len(s)) - 1)])


def run(args: argparse.Namespace, tmp: Path) -> tuple[str, bool]:
    ws = tmp / "workspace"
    (ws / "src" / "app").mkdir(parents=True)
    (ws / "src" / "app" / "main.py").write_text("print('hi')\n")
    (ws / "README.md").write_text("# repo\n")
    (ws / "etc-link").symlink_to("/etc")
    calls = _calls(ws.resolve())
    policy = memwarden.Policy()
    clock = time.perf_counter_ns

    # 1. per tool call: a fresh ledger every 50 calls (sessions are short), calls interleaved with the baseline
    per: dict[str, list[int]] = {label: [] for label, _, _ in calls}
    base: list[int] = []
    ledger = Ledger(policy.taint, [str(ws.resolve())])
    log: list[tuple[str, Any]] = []
    gc.collect()
    for i in range(args.calls):
        label, name, arguments = calls[i % len(calls)]
        if i % 50 == 0:
            ledger = Ledger(policy.taint, [str(ws.resolve())])
            log = []
        t = clock()
        ledger.record_tool_call(name, arguments)
        per[label].append(clock() - t)
        t = clock()
        log.append((name, arguments))
        base.append(clock() - t)
    every = [x for v in per.values() for x in v]

    # 2. session start with and without the ledger, alternating, on a scope of --scope-records records
    key = secrets.token_hex(32)
    scope = memwarden.Scope("bench", "u-1", "agent")
    with memwarden.open(tmp / "taint.db", key=key, durability="normal") as store:
        op = memwarden.service.Context(scope, session_id="seed", source_type="operator", actor="operator:bench")
        for i in range(args.scope_records):
            kind = ("preference", "fact", "episode", "episode", "episode")[i % 5]  # within the default caps
            store.write(op, f"Benchmark memory number {i} about project item {i % 97}", kind=kind)
        starts: dict[str, list[int]] = {"with taint tracking": [], "without (ledger replaced by a no-op)": []}

        def with_ledger() -> None:
            store.session(scope, workspace=[ws]).close()

        def without() -> None:
            with _without_ledger():
                store.session(scope, workspace=[ws]).close()

        ops: list[tuple[str, Callable[[], None]]] = [("with taint tracking", with_ledger),
                                                     ("without (ledger replaced by a no-op)", without)]
        for _ in range(10):
            with_ledger()
            without()
        gc.collect()
        for i in range(args.starts):
            for label, fn in ops[i % 2:] + ops[:i % 2]:
                t = clock()
                fn()
                starts[label].append(clock() - t)

    call_med = _med(every)
    ratio = _med(starts["with taint tracking"]) / _med(starts["without (ledger replaced by a no-op)"])
    ok_call, ok_start = call_med / 1e3 <= MAX_CALL_US, ratio <= MAX_START_RATIO
    env = [("machine", f"{os.cpu_count()} CPUs ({cpu_model()}), {platform.system()} {platform.release()}"),
           ("python", platform.python_version()), ("run", f"calls={args.calls:,}, starts={args.starts}, "
                                                          f"scope records={args.scope_records:,}"),
           ("load average", "/".join(f"{x:.2f}" for x in os.getloadavg()))]
    rows = [[label, us(_med(v)), us(_p95(v))] for label, v in per.items()]
    rows += [["**every recorded call**", us(call_med), us(_p95(every))],
             ["baseline: append (name, arguments) to a list", us(_med(base)), us(_p95(base))]]
    out = ["#### Environment", "", table(["", ""], env, [False, False]), "",
           f"#### Ledger cost per recorded tool call ({args.calls:,} calls, interleaved with the baseline)", "",
           table(["call", "median µs", "p95 µs"], rows), "",
           f"#### Session start, scope of {args.scope_records:,} records ({args.starts} each, alternating)", "",
           table(["session start", "median µs", "p95 µs"],
                 [[k, us(_med(v)), us(_p95(v))] for k, v in starts.items()]), "",
           "#### Targets (issue 4, acceptance 3)", "",
           table(["target", "goal", "measured", "result"],
                 [["ledger median per recorded call", f"≤ {MAX_CALL_US:.0f} µs", f"{call_med / 1e3:.1f} µs",
                   "PASS" if ok_call else "FAIL"],
                  ["session start with / without taint tracking (medians)", f"≤ {MAX_START_RATIO}x",
                   f"{ratio:.3f}x", "PASS" if ok_start else "FAIL"]],
                 [False, True, True, False])]
    return "\n".join(out), ok_call and ok_start


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--calls", type=int, default=20_000)
    p.add_argument("--starts", type=int, default=300)
    p.add_argument("--scope-records", type=int, default=1_000)
    p.add_argument("--dir", default=None, help="where the temporary database goes")
    p.add_argument("--out", default=None, help="also write the tables to this file")
    p.add_argument("--strict", action="store_true", help="exit 1 when a target fails")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="memwarden-taint-", dir=args.dir) as d:
        report, ok = run(args, Path(d))
    print(report)
    if args.out:
        Path(args.out).write_text(report + "\n", encoding="utf-8")
    return 1 if args.strict and not ok else 0


if __name__ == "__main__":
    sys.exit(main())
