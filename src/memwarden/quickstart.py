"""``memwarden quickstart`` (what ``make run`` runs): ``memwarden serve`` on a fresh data directory, ready to call.

It makes a new directory holding the store, its own signing key and anchor, mints an operator token and an agent
token there, prints what a user needs to call the server at once (a ``curl`` line, the MCP URL, client
configuration for stdio and HTTP, an ``env.sh`` for the CLI) and serves until Ctrl-C. The directory is kept
afterwards so the user can look at what was written; nothing outside it is touched (the user's own store and key
are not read).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from memwarden.errors import InvalidInput

TENANT, USER, AGENT = "demo", "u-1", "assistant"
DB_NAME, KEY_NAME, ANCHOR_NAME, ENV_NAME = "memwarden.db", "secret.key", "anchors", "env.sh"


@dataclass(frozen=True, slots=True)
class Quickstart:
    """A prepared data directory: where everything is and the two tokens minted in it (shown once)."""

    directory: Path
    operator_token: str
    agent_token: str  # for an application that reports what its agent read (host-reports-ingest profile)
    mcp_token: str  # for MCP clients, which do not report it: their saves are held for review
    host: str
    port: int

    @property
    def env(self) -> dict[str, str]:
        """The variables that point the CLI and ``memwarden mcp`` at this directory's store, key and anchor."""
        d = self.directory
        return {"MEMWARDEN_URL": str(d / DB_NAME), "MEMWARDEN_KEY_FILE": str(d / KEY_NAME),
                "MEMWARDEN_ANCHOR_DIR": str(d / ANCHOR_NAME)}

    @property
    def base_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def curl(self) -> str:
        """One line that starts a session with the agent token (returns the frozen block and a session id)."""
        return (f"curl -s -X POST -H 'Authorization: Bearer {self.agent_token}' "
                f"{self.base_url}/v1/sessions")

    def curl_save(self) -> str:
        """A save in the session the first line started (``SID``: its ``session_id``)."""
        return (f"curl -s -X POST -H 'Authorization: Bearer {self.agent_token}' -H 'Content-Type: application/json' "
                f"-d '{{\"content\": \"User prefers Go for services\", \"kind\": \"preference\"}}' "
                f"{self.base_url}/v1/sessions/$SID/tools/memory_save")

    def mcp_http_config(self) -> dict[str, object]:
        return {"mcpServers": {"memwarden": {"type": "http", "url": f"{self.base_url}/mcp",
                                             "headers": {"Authorization": f"Bearer {self.mcp_token}"}}}}

    def mcp_stdio_config(self) -> dict[str, object]:
        command = shutil.which("memwarden") or str(Path(sys.executable).with_name("memwarden"))
        return {"mcpServers": {"memwarden": {"command": command, "args": ["mcp"],
                                             "env": {"MEMWARDEN_TOKEN": self.mcp_token, **self.env}}}}


def free_port(host: str, preferred: int) -> int:
    """``preferred`` if nothing listens there, else a free port the OS picks (said in the output); the same check
    as ``memwarden serve`` (:func:`memwarden.serving.check_port`)."""
    from memwarden.serving import check_port

    try:
        return check_port(host, preferred)
    except InvalidInput:
        return check_port(host, 0)


def new_directory(directory: str | os.PathLike[str] | None) -> Path:
    """A fresh directory (mode 0700): the given one if it is empty or absent, else a new temporary one."""
    if directory is None:
        return Path(tempfile.mkdtemp(prefix="memwarden-run-"))
    path = Path(directory).expanduser().resolve()
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise InvalidInput(f"{path} is not an empty directory: quickstart only writes to a fresh one "
                           "(leave --dir out for a new temporary directory)")
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


def prepare(directory: str | os.PathLike[str] | None, host: str, port: int) -> Quickstart:
    """Make the directory, point this process's environment at it (so every store opened from now on, and every
    child, uses its store, key and anchor), and mint the two tokens through :func:`memwarden.auth.create_token`."""
    from memwarden import auth
    from memwarden.service import open_store

    path = new_directory(directory)
    qs_env = Quickstart(path, "", "", "", host, port).env
    os.environ.update(qs_env)
    for var in ("MEMWARDEN_KEY", "MEMWARDEN_TOKEN"):  # a key or token from the caller's shell would be used instead
        os.environ.pop(var, None)
    service = open_store(qs_env["MEMWARDEN_URL"])
    try:
        operator, _ = auth.create_token(service, auth.OPERATOR, TENANT, name="quickstart-operator",
                                        actor="operator:quickstart")
        agent, _ = auth.create_token(service, auth.AGENT, TENANT, user=USER, agent=AGENT,
                                     name="quickstart-app", actor="operator:quickstart", host_reports_ingest=True)
        mcp, _ = auth.create_token(service, auth.AGENT, TENANT, user=USER, agent=AGENT,
                                   name="quickstart-mcp", actor="operator:quickstart")
    finally:
        service.close()
    qs = Quickstart(path, operator, agent, mcp, host, port)
    env_file = path / ENV_NAME
    cli_env = {**qs.env, "MEMWARDEN_TENANT": TENANT, "MEMWARDEN_USER": USER, "MEMWARDEN_AGENT": AGENT,
               "MEMWARDEN_TOKEN": operator}  # the CLI is the operator's tool: review, audit, export
    # the `memwarden` command of this install first on PATH: the printed CLI line works without activating .venv
    scripts = shlex.quote(str(Path(sys.executable).parent))
    env_file.write_text("".join(f"export {k}={shlex.quote(v)}\n" for k, v in cli_env.items())
                        + f'export PATH={scripts}:"$PATH"\n', encoding="utf-8")
    env_file.chmod(0o600)
    return qs


def summary(qs: Quickstart, moved_from: int | None = None) -> list[tuple[str, str]]:
    """(heading, text) pairs printed before serving; plain text so it can be copied from any terminal."""
    def block(obj: Mapping[str, object]) -> str:
        return json.dumps(obj, indent=2)

    port_note = f" (port {moved_from} was busy)" if moved_from is not None else ""
    return [
        ("Data directory", f"{qs.directory}  (store, its own signing key and anchor; kept after Ctrl-C)"),
        ("Server", f"{qs.base_url}{port_note}  ·  REST under /v1, OpenAPI docs at {qs.base_url}/docs"),
        ("Operator token (tenant demo: review, audit, delete)", qs.operator_token),
        ("Agent token for your application (scope demo/u-1/assistant; it reports what the agent read, "
         "POST /v1/sessions/{id}/ingest)", qs.agent_token),
        ("Try it: start a session", qs.curl()),
        ("then save a memory in it (SID=<the session_id above>)", qs.curl_save()),
        ("Agent token for MCP clients (same scope; MCP hosts report nothing, so their saves are held for review)",
         qs.mcp_token),
        ("MCP over HTTP", f"{qs.base_url}/mcp  ·  client configuration:\n{block(qs.mcp_http_config())}"),
        ("MCP over stdio (client configuration)", block(qs.mcp_stdio_config())),
        ("CLI against this store (the operator token and the scope above)",
         f". {qs.directory / ENV_NAME}  &&  memwarden list  &&  memwarden review list"),
        ("Note", "MCP clients do not report what else the model read, so their saves are held for review "
                 "(`memwarden review list`); a host that reports it (Claude Code with `memwarden hook`) gets a "
                 "token with --host-reports-ingest: docs/server.md, \"Taint over the wire\"."),
    ]
