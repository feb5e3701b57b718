"""Two real ``memwarden serve`` processes on one PostgreSQL database (issue 14, acceptance 3).

A fresh database is migrated with the real ``memwarden migrate``; two servers on different ports serve it
through the application role; 16 concurrent REST clients per server save (and now and then search) for a few
seconds, pairs of clients on the two servers sharing a scope. Afterwards: every acknowledged save is stored
exactly once, verified, in the scope it was saved to; no id was acknowledged twice; a record saved through one
server is found by a search through the other; ``memwarden audit verify`` through the operator role exits 0."""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import httpx
import psycopg
import pytest

import memwarden
from memwarden import auth
from memwarden.service import ALL_AGENTS
from pg_helpers import ADMIN_URL, url_for
from rest_helpers import start_serve

TENANT = "acme"
CLIENTS = 16  # per server
SECONDS = 3.0  # of load: bounded, so that the test stays fast on 2 cores
SEARCH_EVERY = 5  # every 5th call of a client is a search


def _word(n: int) -> str:
    """A word of letters only, unique per ``n``: what a search for one save finds alone."""
    out = ""
    while True:
        n, r = divmod(n, 26)
        out += chr(ord("a") + r)
        if not n:
            return "zq" + out


@dataclass
class Load:
    acked: list[tuple[int, str, str, str]] = field(default_factory=list)  # (server, user, id, content) per ack
    searches: int = 0
    failures: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _client(server: int, base: str, token: str, user: str, tag: int, deadline: float, load: Load) -> None:
    """One REST client: its own token, session and keep-alive connection; saves unique episodes until the
    deadline (and at least SEARCH_EVERY calls), every SEARCH_EVERY-th call a search."""
    try:
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=60) as c:
            r = c.post("/v1/sessions")
            assert r.status_code == 201, r.text
            sid = r.json()["session_id"]
            n = 0
            # at least one search per client however slow the machine is (under load a client could reach the
            # deadline before its SEARCH_EVERY-th call)
            while n < SEARCH_EVERY or time.monotonic() < deadline:
                n += 1
                if n % SEARCH_EVERY == 0:
                    r = c.post(f"/v1/sessions/{sid}/tools/memory_search", json={"query": "release build", "k": 5})
                    if r.status_code != 200 or "results" not in r.json()["result"]:
                        with load.lock:
                            load.failures.append(f"search {r.status_code}: {r.text[:200]}")
                        continue
                    with load.lock:
                        load.searches += 1
                    continue
                content = f"Release build {_word(tag * 100_000 + n)} of the billing service went out on schedule."
                r = c.post(f"/v1/sessions/{sid}/tools/memory_save", json={"content": content, "kind": "episode"})
                result = r.json().get("result", {}) if r.status_code == 200 else {}
                if result.get("status") != "accepted" or not result.get("id"):
                    with load.lock:
                        load.failures.append(f"save {r.status_code}: {r.text[:200]}")
                    continue
                with load.lock:
                    load.acked.append((server, user, str(result["id"]), content))
            c.delete(f"/v1/sessions/{sid}")
    except Exception as exc:  # a client that dies is a failure of the test, not a silent gap in the load
        with load.lock:
            load.failures.append(f"client {tag}: {exc!r}")


def _stop(proc: subprocess.Popen[bytes]) -> int:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            return proc.wait(timeout=40)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


@pytest.fixture
def migrated(pg_server: object) -> Iterator[tuple[str, str]]:
    """(application URL, operator URL) of a database made here and migrated by the real ``memwarden migrate``;
    the database and its two roles are dropped afterwards."""
    name = "mwt_serve_" + secrets.token_hex(4)
    with psycopg.connect(ADMIN_URL, autocommit=True, connect_timeout=5) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        done = subprocess.run([sys.executable, "-m", "memwarden", "--db", url_for(ADMIN_URL, name), "migrate",
                               "--json"], env=_env(), capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        out = json.loads(done.stdout)
        assert set(out["created_roles"]) == {f"{name}_app", f"{name}_operator"}
        yield out["app_url"], out["operator_url"]
    finally:
        with psycopg.connect(ADMIN_URL, autocommit=True, connect_timeout=5) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            for role in (f"{name}_app", f"{name}_operator"):
                conn.execute(f'DROP ROLE IF EXISTS "{role}"')


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}


def test_I3_A1_two_servers_one_postgres_no_lost_or_duplicate_acknowledged_write(migrated: tuple[str, str]) -> None:
    app_url, operator_url = migrated
    # one token per client; client i of either server writes to the scope of user u-i: the two servers write
    # into the same scopes at once
    with memwarden.open(app_url) as svc:
        tokens = [[auth.create_token(svc, "agent", TENANT, user=f"u-{i}", agent="bot", name=f"s{s}-c{i}",
                                     host_reports_ingest=True)[0] for i in range(CLIENTS)] for s in range(2)]
    env = _env()
    procs: list[subprocess.Popen[bytes]] = []
    try:
        bases = []
        for _ in range(2):
            proc, base = start_serve(app_url, env, args=("--write-rate", "1000000"))  # type: ignore[arg-type]
            procs.append(proc)
            bases.append(base)
        assert bases[0] != bases[1]
        load = Load()
        deadline = time.monotonic() + SECONDS
        threads = [threading.Thread(target=_client, args=(s, bases[s], tokens[s][i], f"u-{i}", s * CLIENTS + i,
                                                          deadline, load))
                   for s in range(2) for i in range(CLIENTS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=SECONDS + 120)
        assert not any(t.is_alive() for t in threads), "a client did not finish"
        assert load.failures == []
        assert load.searches > 0
        per_user = {u: {a[0] for a in load.acked if a[1] == u} for u in {a[1] for a in load.acked}}
        assert len(per_user) == CLIENTS and all(v == {0, 1} for v in per_user.values()), per_user
        # the last save acknowledged by server 1 is found through server 0 by its one unique word (server 0's
        # postings of the scope are kept current across processes through the index change log)
        _server, user, rid, content = next(a for a in reversed(load.acked) if a[0] == 1)
        token = tokens[0][int(user.removeprefix("u-"))]
        with httpx.Client(base_url=bases[0], headers={"Authorization": f"Bearer {token}"}, timeout=60) as c:
            sid = c.post("/v1/sessions").json()["session_id"]
            found = c.post(f"/v1/sessions/{sid}/tools/memory_search",
                           json={"query": content.split()[2], "k": 5}).json()["result"]["results"]
            assert found and found[0]["id"] == rid
        assert [_stop(p) for p in procs] == [0, 0]
    finally:
        for p in procs:
            _stop(p)
    ids = [a[2] for a in load.acked]
    assert len(ids) == len(set(ids)), "an id was acknowledged twice"
    with memwarden.open(operator_url) as op:
        for user in per_user:
            want = {a[2]: a[3] for a in load.acked if a[1] == user}
            rows = op.operator_rows(TENANT, user, ALL_AGENTS, include_held=True, kind="episode")
            assert all(r.ok for r in rows)
            stored = [r.id for r in rows]
            assert len(stored) == len(set(stored)) == len(want) and set(stored) == set(want), user
            assert {r.id: r.record.content for r in rows if r.record} == want
    verify = subprocess.run([sys.executable, "-m", "memwarden", "--db", operator_url, "audit", "verify"], env=env,
                            capture_output=True, text=True, timeout=120)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert "audit chain intact" in verify.stdout


def test_word_is_unique_and_letters_only() -> None:
    words = [_word(n) for n in range(5_000)]
    assert len(set(words)) == len(words) and all(w.isalpha() for w in words)
