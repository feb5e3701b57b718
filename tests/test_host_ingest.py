"""Taint over the wire (issue 13, acceptance 4): the token profile, ``memwarden hook`` and the host ingest reports
every session of a scope applies before a write (T1, T2, T6), over REST, MCP stdio and MCP HTTP; token expiry on
every transport.

The hook and the servers run as real subprocesses (``python -m memwarden …``) against the test's store and key;
the MCP tests use the official MCP Python client.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from typer.testing import CliRunner

import memwarden
from memwarden import audit, auth, host_ingest
from memwarden.cli import app
from memwarden.policy import Policy
from memwarden.records import now_ms
from memwarden.service import MemoryService
from raw_sql import raw_sql
from rest_helpers import make_api, start_serve

A = memwarden.Scope(tenant="acme", user="u-a", agent="support")
B = memwarden.Scope(tenant="acme", user="u-b", agent="support")
FACT = "User's team deploys on Thursdays"
ENV_KEYS = ("MEMWARDEN_KEY", "XDG_DATA_HOME", "XDG_CONFIG_HOME")


def _hook_json(tool: str, tool_input: dict[str, Any], event: str = "PreToolUse", cwd: str = "/nonexistent"
               ) -> bytes:
    """What Claude Code's PreToolUse/PostToolUse hook passes on stdin."""
    data: dict[str, Any] = {"session_id": "8c35adc1-host", "transcript_path": "/tmp/t.jsonl", "cwd": cwd,
                            "permission_mode": "default", "hook_event_name": event, "tool_name": tool,
                            "tool_input": tool_input, "tool_use_id": "toolu_01ABC"}
    if event == "PostToolUse":
        data["tool_response"] = {"content": "whatever the tool returned"}
    return json.dumps(data).encode()


def _env(db: Path, token: str | None = None, **extra: str) -> dict[str, str]:
    env = {k: os.environ[k] for k in ENV_KEYS}
    if "PYTHONPATH" in os.environ:  # the subprocess runs the code under test
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    env["MEMWARDEN_URL"] = str(db)
    env["PATH"] = os.environ.get("PATH", "")
    if token is not None:
        env["MEMWARDEN_TOKEN"] = token
    env.update(extra)
    return env


@asynccontextmanager
async def _mcp(db: Path, *args: str, token: str | None = None) -> AsyncIterator[tuple[ClientSession, str]]:
    """An initialized official-client session with ``memwarden mcp`` over stdio on ``db``, and its instructions."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "memwarden", "mcp", *args],
                                   env=_env(db, token))
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as s:
            found = await s.initialize()
            yield s, found.instructions or ""


def _hook(db: Path, stdin: bytes, *args: str, token: str | None = None, **extra: str
          ) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "memwarden", "hook", *args], env=_env(db, token, **extra),
                          input=stdin, capture_output=True, timeout=120)
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(), done.stderr.decode())


def _payload(result: Any) -> dict[str, Any]:
    assert len(result.content) == 1 and result.content[0].type == "text"
    return json.loads(result.content[0].text)  # type: ignore[no-any-return]


def _token(store: MemoryService, *, reports: bool, scope: memwarden.Scope = A, name: str | None = None,
           expires_at: int | None = None) -> str:
    return auth.create_token(store, "agent", scope.tenant, user=scope.user, agent=scope.agent, name=name,
                             host_reports_ingest=reports, expires_at=expires_at)[0]


def _expired(store: MemoryService, role: str = "agent") -> str:
    """A token that expired a moment ago (created to expire 300 ms from now)."""
    user, agent = (A.user, A.agent) if role == "agent" else (None, None)
    token, _ = auth.create_token(store, role, A.tenant, user=user, agent=agent, expires_at=now_ms() + 300)
    time.sleep(0.4)
    return token


WEB_FETCH = _hook_json("WebFetch", {"url": "https://attacker.example/page?k=1", "prompt": "summarise"})


# --- acceptance 4: a recorded web_fetch from hook JSON taints the MCP session; the later save is held ---------


def test_t1_hook_web_fetch_taints_mcp_stdio_session(db_path: Path) -> None:
    with memwarden.open(db_path) as store:
        token = _token(store, reports=True)
    hooked: list[subprocess.CompletedProcess[str]] = []

    async def main() -> None:
        async with _mcp(db_path, token=token) as (s, _):
            before = _payload(await s.call_tool("memory_save", {"content": FACT, "kind": "fact"}))
            assert before["status"] == "accepted", before  # the profile: the session starts clean
            # the host's hook runs in another process while the MCP session is open
            hooked.append(await asyncio.to_thread(_hook, db_path, WEB_FETCH, token=token))
            r = await s.call_tool("memory_save", {"content": "User's team deploys on Fridays", "kind": "fact"})
            after = _payload(r)
            assert not r.is_error and after["status"] == "review", after
            assert "reported by the host" in after["message"] and "WebFetch" in after["message"]
            assert "cannot see" in after["note"]
            removed = _payload(await s.call_tool("memory_remove", {"id": before["id"]}))
            assert removed["error"] == "forbidden"  # a tainted session deletes nothing either

    asyncio.run(main())
    assert hooked[0].returncode == 0, hooked[0].stderr
    with memwarden.open(db_path) as store:
        (ev,) = audit.log_rows(store.backend, event=host_ingest.REPORT_EVENT)
        assert ev["details"]["tool"] == "WebFetch" and ev["details"]["tainted"] is True
        assert ev["details"]["sources"] == ["https://attacker.example/page"]  # no query string
        assert ev["details"]["host_session"] == "8c35adc1-host" and ev["actor"].startswith("agent:")


def test_t1_hook_in_a_session_without_the_profile_the_save_is_held_from_the_start(db_path: Path) -> None:
    with memwarden.open(db_path) as store:
        token = _token(store, reports=False, name="plain")

    async def main() -> None:
        async with _mcp(db_path, token=token) as (s, instructions):
            assert "held for a person to review" in instructions
            out = _payload(await s.call_tool("memory_save", {"content": FACT, "kind": "fact"}))
            assert out["status"] == "review"
            assert "token plain has no host-reports-ingest profile" in out["message"]

    asyncio.run(main())
    # the hook still reports (it may taint the scope's other sessions) and says the token is misconfigured
    done = _hook(db_path, WEB_FETCH, token=token)
    assert done.returncode == 0 and "token plain has no host-reports-ingest profile" in done.stderr, done.stderr
    with memwarden.open(db_path) as store:
        reported = auth.create_token(store, "agent", A.tenant, user=A.user, agent=A.agent, name="quiet",
                                     host_reports_ingest=True)[0]
    quiet = _hook(db_path, WEB_FETCH, token=reported)
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr


@dataclass
class Served:
    base: str
    db: Path
    env: dict[str, str]
    tokens: dict[str, str]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    home = tmp_path_factory.mktemp("hostingest")
    db = home / "mem.db"
    env = {**os.environ, "MEMWARDEN_KEY": secrets.token_hex(32), "MEMWARDEN_URL": str(db),
           "XDG_DATA_HOME": str(home / "data"), "XDG_CONFIG_HOME": str(home / "config")}
    env.pop("MEMWARDEN_KEY_FILE", None)
    with pytest.MonkeyPatch.context() as mp:
        for k in ENV_KEYS:
            mp.setenv(k, env[k])
        with memwarden.open(db) as svc:
            tokens = {"reporting": _token(svc, reports=True, name="reporting"),
                      "plain": _token(svc, reports=False, name="plain", scope=B),
                      "expired": _expired(svc)}
    proc, base = start_serve(db, env)
    try:
        yield Served(base, db, {k: env[k] for k in ENV_KEYS}, tokens)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _mcp_http(served: Served, token: str, script: Callable[[ClientSession], Awaitable[None]]) -> None:
    async def main() -> None:
        async with (httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
                    streamable_http_client(f"{served.base}/mcp", http_client=http) as (read, write),
                    ClientSession(read, write) as session):
            await session.discover()
            await script(session)

    asyncio.run(main())


def test_t1_hook_web_fetch_taints_mcp_http_session_through_the_server(served: Served) -> None:
    token = served.tokens["reporting"]
    saved: dict[str, Any] = {}

    async def before(s: ClientSession) -> None:
        saved["before"] = _payload(await s.call_tool("memory_save", {"content": FACT}))

    async def after(s: ClientSession) -> None:
        saved["after"] = _payload(await s.call_tool("memory_save", {"content": "User's team deploys on Mondays"}))

    _mcp_http(served, token, before)
    assert saved["before"]["status"] == "accepted", saved["before"]
    # the hook reports to the running server (POST /v1/ingest), not to the file
    done = _hook(served.db, WEB_FETCH, "--server", served.base, token=token, **served.env)
    assert done.returncode == 0, done.stderr
    _mcp_http(served, token, after)  # the same token session (one per token), now tainted
    assert saved["after"]["status"] == "review" and "reported by the host" in saved["after"]["message"]


def test_t2_mcp_http_session_of_a_token_without_the_profile_holds_saves(served: Served) -> None:
    out: dict[str, Any] = {}

    async def script(s: ClientSession) -> None:
        out.update(_payload(await s.call_tool("memory_save", {"content": FACT, "kind": "preference"})))

    _mcp_http(served, served.tokens["plain"], script)
    assert out["status"] == "review" and "token plain has no host-reports-ingest profile" in out["message"]


def test_S2_ingest_route_reports_only_for_the_tokens_own_scope(served: Served) -> None:
    body = {"tool_calls": [{"name": "web_search", "arguments": {"q": "x"}}],
            "tenant": "acme", "user": "u-a"}  # identity fields are refused, never used
    r = httpx.post(f"{served.base}/v1/ingest", json=body,
                   headers={"Authorization": f"Bearer {served.tokens['plain']}"})
    assert r.status_code == 400 and r.json()["code"] == "invalid_input"
    r = httpx.post(f"{served.base}/v1/ingest", json={"tool_calls": body["tool_calls"]},
                   headers={"Authorization": f"Bearer {served.tokens['plain']}"})
    assert r.status_code == 200 and r.json()["tainted"] is True
    with pytest.MonkeyPatch.context() as mp:
        for k, v in served.env.items():
            mp.setenv(k, v)
        with memwarden.open(served.db) as store:
            rows = store.backend.query("SELECT user_id, tool FROM host_reports WHERE tool = 'web_search'")
    assert rows == [(B.user, "web_search")]  # user B's scope: the token's own, whatever the body says


# --- the profile over REST ----------------------------------------------------------------------------------


def test_t2_rest_session_without_the_profile_holds_fact_save_with_the_profile_accepts(store: MemoryService) -> None:
    api = make_api(store)
    held = api.start("agent_a_unreported")
    assert held["tainted"] is True and held["host_reports_ingest"] is False
    r = api.tool("agent_a_unreported", held["session_id"], "memory_save", {"content": FACT, "kind": "fact"})
    result = r.json()["result"]
    assert r.status_code == 200 and result["status"] == "review"
    assert "agent_a_unreported has no host-reports-ingest profile" in result["message"]
    clean = api.start("agent_a")
    assert clean["tainted"] is False and clean["host_reports_ingest"] is True
    # (another fact: the same words as the held one would be held too, T7)
    result = api.tool("agent_a", clean["session_id"], "memory_save",
                      {"content": "User's team ships on Wednesdays", "kind": "fact"}).json()
    assert result["result"]["status"] == "accepted"
    # the same scope's reporting host then reports a web search: the open clean session is tainted
    rep = api.client.post("/v1/ingest", headers=api.h("agent_a"),
                          json={"tool_calls": [{"name": "web_search", "arguments": {"q": "deploys"}}]})
    assert rep.status_code == 200 and rep.json()["reports"][0]["report"] is not None
    result = api.tool("agent_a", clean["session_id"], "memory_save",
                      {"content": "User's team deploys on Tuesdays", "kind": "fact"}).json()
    assert result["result"]["status"] == "review"


# --- the hook: what taints, what does not, hostile input ------------------------------------------------------


def _save_in_new_session(db: Path, scope: memwarden.Scope = A) -> str:
    with memwarden.open(db) as store, store.session(scope) as s:
        return s.save(FACT, kind="fact").status


def test_t1_hook_read_of_a_workspace_file_does_not_taint(db_path: Path, tmp_path: Path) -> None:
    work = tmp_path / "repo"
    work.mkdir()
    (work / "notes.md").write_text("hello")
    local = ("--tenant", A.tenant, "--user", A.user, "--agent", A.agent or "")
    for event in ("PreToolUse", "PostToolUse"):
        read = _hook_json("Read", {"file_path": str(work / "notes.md")}, event=event, cwd=str(work))
        done = _hook(db_path, read, *local, "--workspace", str(work))
        assert done.returncode == 0 and done.stderr.strip() in ("", f"note: created a new, empty store at {db_path}")
    edit = _hook_json("Edit", {"file_path": str(work / "notes.md"), "old_string": "hello",
                               "new_string": "see https://example.org and /etc/passwd"}, cwd=str(work))
    assert _hook(db_path, edit, *local, CLAUDE_PROJECT_DIR=str(work)).returncode == 0  # judged by its path
    own = _hook_json("mcp__memwarden__memory_search", {"query": "deploys"})
    assert _hook(db_path, own, *local).returncode == 0  # memwarden's own tool: not ingest, not recorded
    assert _save_in_new_session(db_path) == "accepted"
    with memwarden.open(db_path) as store:
        reported = audit.log_rows(store.backend, event=host_ingest.REPORT_EVENT)
        assert [(e["details"]["tool"], e["details"]["tainted"]) for e in reported] == [
            ("Read", False), ("Read", False), ("Edit", False)]
    outside = _hook_json("Read", {"file_path": "/etc/hostname"}, cwd=str(work))
    assert _hook(db_path, outside, *local, "--workspace", str(work)).returncode == 0
    assert _save_in_new_session(db_path) == "review"  # a file outside the workspace taints
    assert _save_in_new_session(db_path, B) == "accepted"  # only its own scope


HOSTILE = {
    "not_json": b"{not json",
    "empty": b"",
    "bad_utf8": b'{"hook_event_name": "PreToolUse", "tool_name": "\xff\xfe"}',
    "lone_surrogate": b'{"hook_event_name": "PreToolUse", "tool_name": "Read", "tool_input": {"file_path": "\\ud800"}}',
    "deeply_nested": b'{"hook_event_name": "PreToolUse", "tool_name": "Read", "tool_input": {"a": '
                     + b"[" * 5000 + b"]" * 5000 + b"}}",
    "too_deep_for_json": b"[" * 200_000,
    "wrong_types": b'{"hook_event_name": "PreToolUse", "tool_name": ["Read"], "tool_input": "x"}',
    "input_not_object": b'{"hook_event_name": "PreToolUse", "tool_name": "Read", "tool_input": [1]}',
    "unknown_event": _hook_json("Read", {"file_path": "/x"}, event="UserPromptSubmit"),
    "top_level_array": b"[]",
    "huge": b'{"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "'
            + b"x" * (33 * 1024 * 1024) + b'"}}',
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_t6_hostile_hook_input_exits_2_with_one_line_and_taints(db_path: Path, case: str) -> None:
    local = ("--tenant", A.tenant, "--user", A.user, "--agent", A.agent or "")
    with memwarden.open(db_path):
        pass
    done = _hook(db_path, HOSTILE[case], *local)
    assert done.returncode == 2, (case, done.stderr[-500:])
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: memwarden hook:"), done.stderr[-500:]
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert "unjudged ingest" in lines[0]
    assert _save_in_new_session(db_path) == "review"  # fail closed: the scope's sessions are untrusted


def test_t6_hook_without_identity_or_store_exits_2(db_path: Path, tmp_path: Path) -> None:
    done = _hook(db_path, WEB_FETCH)
    assert done.returncode == 2 and "needs an identity" in done.stderr and done.stderr.count("\n") == 1
    done = _hook(db_path, WEB_FETCH, "--server", "http://127.0.0.1:9", token="mw_agent_" + "x" * 43)
    assert done.returncode == 2 and "cannot reach" in done.stderr and done.stderr.count("\n") == 1
    blocked = tmp_path / "file"
    blocked.write_text("")
    done = _hook(blocked / "mem.db", WEB_FETCH, "--tenant", "t", "--user", "u", "--agent", "a")
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


# --- the channel itself ----------------------------------------------------------------------------------------


def test_t6_edited_host_report_taints(db_path: Path) -> None:
    with memwarden.open(db_path) as store:
        judged = host_ingest.judge(store.policy.taint, [], [("web_search", {"q": "x"}, None)])
        host_ingest.record(store, A, judged, actor="host:local")
    raw_sql(db_path, "UPDATE host_reports SET reason = 'nothing to see', tool = 'get_time'")
    with memwarden.open(db_path) as store, store.session(A) as s:
        assert s.tainted and any("fails verification" in r for r in s.ledger.reasons)


def test_t1_report_taints_sessions_started_within_the_window_only(db_path: Path) -> None:
    with memwarden.open(db_path) as store:
        judged = host_ingest.judge(store.policy.taint, [], [("web_fetch", {"url": "https://x.example/"}, None)])
        host_ingest.record(store, A, judged, actor="host:local")
        with store.session(A) as s:
            assert s.tainted  # started after the report, within the window (a day by default)
    with memwarden.open(db_path, policy=Policy(host_report_window_seconds=0)) as store:
        time.sleep(0.01)
        with store.session(A) as s:
            assert not s.tainted  # a report older than the window
            assert s.save(FACT).status == "accepted"


def test_t1_mcp_local_flag_and_token_profile(db_path: Path) -> None:
    with memwarden.open(db_path) as store:
        plain = _token(store, reports=False, name="plain")
    done = subprocess.run([sys.executable, "-m", "memwarden", "mcp", "--host-reports-ingest"],
                          env=_env(db_path, plain), input="", capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "a flag cannot give it one" in done.stderr and done.stdout == ""
    local = ["--tenant", A.tenant, "--user", A.user, "--agent", A.agent or "", "--host-reports-ingest"]

    async def main() -> None:
        async with _mcp(db_path, *local) as (s, instructions):
            assert "The host reports what this session reads" in instructions
            out = _payload(await s.call_tool("memory_save", {"content": FACT, "kind": "fact"}))
            assert out["status"] == "accepted"

    asyncio.run(main())


# --- token expiry on every transport --------------------------------------------------------------------------


def test_t3_expired_token_refused_by_the_cli(db_path: Path) -> None:
    with memwarden.open(db_path) as store:
        token = _expired(store, "operator")
    res = CliRunner().invoke(app, ["--db", str(db_path), "review", "list", "--token", token])
    assert res.exit_code == 1 and "expired at" in res.stderr and res.stderr.count("\n") == 1
    done = _hook(db_path, WEB_FETCH, token=_expired_in(db_path))
    assert done.returncode == 2 and "expired at" in done.stderr and done.stderr.count("\n") == 1


def _expired_in(db: Path) -> str:
    with memwarden.open(db) as store:
        return _expired(store)


def test_t3_expired_token_refused_by_rest_with_a_401_problem(store: MemoryService) -> None:
    api = make_api(store)
    token = _expired(store)
    r = api.client.post("/v1/sessions", headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 401 and r.json()["code"] == "unauthorized" and "expired at" in r.json()["detail"]
    assert r.headers["content-type"] == "application/problem+json"


def test_t3_expired_token_does_not_start_mcp_stdio(db_path: Path) -> None:
    token = _expired_in(db_path)
    done = subprocess.run([sys.executable, "-m", "memwarden", "mcp"], env=_env(db_path, token), input="",
                          capture_output=True, text=True, timeout=60)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and done.stdout == "" and len(lines) == 1 and "expired at" in lines[0]


def test_t3_expired_token_is_401_on_mcp_http(served: Served) -> None:
    r = httpx.post(f"{served.base}/mcp", headers={"Authorization": f"Bearer {served.tokens['expired']}",
                                                   "Accept": "application/json, text/event-stream",
                                                   "Content-Type": "application/json"},
                   json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})
    assert r.status_code == 401 and 'error="invalid_token"' in r.headers["www-authenticate"]


def test_t3_token_expiry_is_signed(db_path: Path) -> None:
    with memwarden.open(db_path) as store:
        token = _token(store, reports=False, expires_at=now_ms() + 3_600_000)
    raw_sql(db_path, "UPDATE tokens SET expires_at = NULL")  # extend it around the API
    with memwarden.open(db_path) as store, pytest.raises(auth.AuthError, match="fails verification"):
        auth.authenticate(store, token)


def test_t3_token_create_declares_the_profile_and_expiry_and_list_shows_them(db_path: Path) -> None:
    run = CliRunner().invoke
    base = ["--db", str(db_path), "token", "create", "--role", "agent", "--tenant", "acme", "--user", "u-a",
            "--agent", "support"]
    res = run(app, [*base, "--name", "reporting", "--host-reports-ingest", "--expires", "90d"])
    assert res.exit_code == 0 and "the host reports its ingest" in res.stdout, res.stderr
    res = run(app, [*base, "--name", "plain"])
    assert res.exit_code == 0 and "every session is untrusted from its start" in res.stdout
    res = run(app, [*base, "--name", "late", "--expires", "yesterday"])
    assert res.exit_code == 2 and "--expires" in res.stderr
    res = run(app, [*base, "--name", "far", "--expires", "99999999999d"])  # outside trial: raw milliseconds
    assert res.exit_code == 2 and "too far ahead" in res.stderr and "8640" not in res.stderr
    res = run(app, ["--db", str(db_path), "token", "create", "--role", "operator", "--tenant", "acme",
                    "--all-users", "--host-reports-ingest"])
    assert res.exit_code == 2 and "for agent tokens" in res.stderr
    listed = {t["name"]: t for t in json.loads(run(app, ["--db", str(db_path), "token", "list", "--json"]).stdout)}
    assert listed["reporting"]["host_reports_ingest"] is True and listed["plain"]["host_reports_ingest"] is False
    days = (listed["reporting"]["expires_at"] - listed["reporting"]["created_at"]) / 86_400_000
    assert 89.99 < days < 90.01 and listed["plain"]["expires_at"] is None
    table = run(app, ["--db", str(db_path), "token", "list"], env={"COLUMNS": "250"}).stdout
    assert "no (saves held)" in table and "yes" in table
