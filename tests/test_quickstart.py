"""``memwarden quickstart`` — what ``make run`` runs (issue 13): serve on a fresh directory and print how to call it.

The test uses only what the command prints, as a new user would: the agent token in the ``curl`` line, the MCP URL
and header of the HTTP client configuration, the ``command``/``env`` of the stdio configuration, and ``env.sh``.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import httpx2
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from rest_helpers import free_port

TOOLS = {"memory_save", "memory_update", "memory_remove", "memory_clear", "memory_search", "memory_view"}


def _start(tmp: Path, port: int) -> tuple[subprocess.Popen[str], str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMWARDEN_")}
    proc = subprocess.Popen([sys.executable, "-m", "memwarden", "quickstart", "--port", str(port),
                             "--dir", str(tmp / "run")], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    out: list[str] = []
    deadline = time.monotonic() + 60
    for line in proc.stdout:
        out.append(line)
        if "Serving until Ctrl-C" in line or time.monotonic() > deadline:
            break
    text = "".join(out)
    for _ in range(300):
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return proc, text
        except httpx.TransportError:
            time.sleep(0.1)
    proc.kill()
    raise AssertionError(f"quickstart did not serve:\n{text}")


def _json_after(text: str, heading: str) -> dict[str, Any]:
    start = text.index("{", text.index(heading))
    obj, _ = json.JSONDecoder().raw_decode(text[start:])
    return obj


def _stop(proc: subprocess.Popen[str]) -> str:
    proc.send_signal(signal.SIGINT)
    rest, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, rest
    return rest


def test_quickstart_prints_working_tokens_curl_and_mcp_configs(tmp_path: Path) -> None:
    port = free_port()
    proc, text = _start(tmp_path, port)
    try:
        operator = re.search(r"mw_operator_[A-Za-z0-9_-]+", text)
        curl = re.search(r"curl -s -X POST -H 'Authorization: Bearer (mw_agent_[A-Za-z0-9_-]+)' (\S+)", text)
        assert operator and curl, text
        agent, url = curl.group(1), curl.group(2)
        # The curl line: start a session with the agent token.
        r = httpx.post(url, headers={"Authorization": f"Bearer {agent}"})
        assert r.status_code == 201 and r.json()["session_id"], r.text
        # The printed save, in that session: the application token reports its ingest, so it is accepted.
        save = re.search(r"-d '(\{.*?\})' (\S+/tools/memory_save)", text)
        assert save, text
        saved_rest = httpx.post(save.group(2).replace("$SID", r.json()["session_id"]), content=save.group(1),
                                headers={"Authorization": f"Bearer {agent}", "Content-Type": "application/json"})
        assert saved_rest.json()["result"]["status"] == "accepted", saved_rest.text
        # The operator token is an operator's: the review queue answers, an agent route refuses it.
        assert httpx.get(f"http://127.0.0.1:{port}/v1/review",
                         headers={"Authorization": f"Bearer {operator.group(0)}"}).status_code == 200
        assert httpx.post(url, headers={"Authorization": f"Bearer {operator.group(0)}"}).status_code == 403

        http_cfg = _json_after(text, "MCP over HTTP")["mcpServers"]["memwarden"]
        stdio_cfg = _json_after(text, "MCP over stdio")["mcpServers"]["memwarden"]

        async def clients() -> tuple[set[str], set[str], dict[str, Any]]:
            async with (httpx2.AsyncClient(headers=http_cfg["headers"], timeout=30) as http,
                        streamable_http_client(http_cfg["url"], http_client=http) as (read, write),
                        ClientSession(read, write) as session):
                await session.discover()
                over_http = {t.name for t in (await session.list_tools()).tools}
                saved = await session.call_tool("memory_save", {"content": "The user's timezone is Europe/Oslo",
                                                                "kind": "fact"})
            params = StdioServerParameters(command=stdio_cfg["command"], args=stdio_cfg["args"],
                                           env=stdio_cfg["env"])
            with open(os.devnull, "w") as errlog:
                async with stdio_client(params, errlog=errlog) as (read, write), \
                        ClientSession(read, write) as session:
                    await session.initialize()
                    over_stdio = {t.name for t in (await session.list_tools()).tools}
            return over_http, over_stdio, json.loads(saved.content[0].text)

        over_http, over_stdio, saved = asyncio.run(clients())
        assert over_http == TOOLS and over_stdio == TOOLS
        # An MCP host does not report its ingest: the save is stored but held, as the printed note says.
        assert saved["status"] == "review", saved
        assert "held for review" in text

        # env.sh points the CLI at the same store: the held save is in the operator's review queue.
        env_sh = (tmp_path / "run" / "env.sh").read_text()
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMWARDEN_")}
        env.update(re.findall(r"export (\w+)=(\S+)", env_sh))
        listed = subprocess.run([sys.executable, "-m", "memwarden", "review", "list", "--json"], env=env,
                                capture_output=True, text=True)
        assert listed.returncode == 0 and "Europe/Oslo" in listed.stdout, listed.stdout + listed.stderr
        mine = subprocess.run([sys.executable, "-m", "memwarden", "list", "--json"], env=env, capture_output=True,
                              text=True)
        assert mine.returncode == 0 and "User prefers Go" in mine.stdout, mine.stdout + mine.stderr
    finally:
        rest = _stop(proc) if proc.poll() is None else ""
    assert "The data directory is kept" in rest
    assert (tmp_path / "run" / "memwarden.db").is_file() and (tmp_path / "run" / "secret.key").is_file()
    assert (tmp_path / "run" / "secret.key").stat().st_mode & 0o077 == 0


def test_quickstart_refuses_a_directory_that_is_not_empty(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("mine")
    r = subprocess.run([sys.executable, "-m", "memwarden", "quickstart", "--dir", str(tmp_path)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "not an empty directory" in r.stderr + r.stdout
    assert "Traceback" not in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt"]


def test_quickstart_picks_a_free_port_when_the_given_one_is_busy(tmp_path: Path) -> None:
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        proc = subprocess.Popen([sys.executable, "-m", "memwarden", "quickstart", "--port", str(taken),
                                 "--dir", str(tmp_path / "run")], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        try:
            assert proc.stdout is not None
            head = "".join(line for line, _ in zip(proc.stdout, range(6), strict=False))
            assert f"(port {taken} was busy)" in head, head
        finally:
            proc.kill()
            proc.wait()
