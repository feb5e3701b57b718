"""The REST API under ``/v1`` (FastAPI): agent routes for sessions and the six memory tools, operator routes for
review, beliefs, deletion, the audit log and read audit, the export (streamed JSON Lines) and the live event stream
(Server-Sent Events, :mod:`memwarden.rest_stream`); and MCP over streamable HTTP at ``/mcp``
(:mod:`memwarden.mcp_http`). ``memwarden serve`` runs it with uvicorn.

Identity comes only from the bearer token (S2): an agent token is bound to one ``(tenant, user, agent)`` and every
agent route acts in exactly that scope; an operator token is bound to a tenant (and perhaps one user) and every
operator route is limited to it. No route takes a tenant, user or agent from the body or the query, and request
bodies refuse unknown fields. Writes reach the store only through :class:`memwarden.session.Session`
(``call_tool``, ``record_turns``) and the review module — the one write path; this module holds no SQL.

Sessions live in this process: the server mints the id, binds it to the token that started it, and forgets it
when it ends, when it has been idle for ``session_idle_seconds``, or when the process stops (they are not shared
between processes or kept across a restart).
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field, replace
from typing import Annotated, Any

from fastapi import Body, Depends, FastAPI, Header, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from fastapi.routing import APIRoute
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ConfigDict, Field, field_validator
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from memwarden import audit, host_ingest, logs, mcp_http, oauth, rest_stream, review, serving, transfer
from memwarden.auth import AGENT, OPERATOR, AuthError, Principal
from memwarden.errors import Forbidden, InvalidInput, MemwardenError, NotFound, RateLimited
from memwarden.ids import new_id
from memwarden.oauth import OAuthConfig
from memwarden.problems import MEDIA_TYPE, from_dict, from_error, problem
from memwarden.records import Record, SourceType
from memwarden.scope import Scope
from memwarden.service import ALL_AGENTS, Checked, Context, MemoryService
from memwarden.session import Session, close_all, close_quietly
from memwarden.tools import TOOL_NAMES, WRITE_TOOL_NAMES

log = logging.getLogger("memwarden.rest")

MAX_BODY_BYTES = 1024 * 1024
WRITE_TOOLS = WRITE_TOOL_NAMES
SESSION_ID = Annotated[str, Path(pattern=r"^[0-9A-Za-z]{1,64}$", description="Session id from POST /v1/sessions.")]
MEMORY_ID = Annotated[str, Path(pattern=r"^[0-9A-Za-z]{1,64}$", description="Memory id.")]
USER = Annotated[str, Path(min_length=1, max_length=128, description="User id within the token's tenant.")]
JSONL = "application/jsonl"
EVENT_NAME = Annotated[str, Query(min_length=1, max_length=64, pattern=r"^[a-z_]+$")]


# --- configuration and state --------------------------------------------------------------------------------

SEQ_MAX = 2**63 - 1  # audit seqs are 64-bit integers (SQLite INTEGER, PostgreSQL bigint): larger is invalid input

@dataclass(frozen=True, slots=True)
class ServerConfig:
    """Limits of one server process. ``write_rate`` writes per ``write_window`` seconds per token (0: no limit)."""

    max_body_bytes: int = MAX_BODY_BYTES
    write_rate: int = 120
    write_window: float = 60.0
    max_sessions: int = 4096
    max_sessions_per_token: int = 64
    session_idle_seconds: float = 3600.0
    host: str = "127.0.0.1"
    port: int = 8750
    public_url: str | None = None  # the base URL clients reach (behind a proxy); default http://<host>:<port>
    oauth: OAuthConfig | None = None  # an external issuer whose JWTs are accepted too (memwarden.oauth)
    memwarden_tokens: bool = True  # False: only the external issuer's tokens
    keep_alive_timeout: int = 5  # seconds an idle keep-alive connection stays open (memwarden.serving)
    body_timeout: float = 30.0  # seconds a request has to deliver its body (408 after that; 0: no limit)
    shutdown_timeout: int = 30  # seconds in-flight requests get to finish on SIGINT/SIGTERM
    stream_heartbeat: float = 15.0  # GET /v1/events: seconds between heartbeats
    stream_poll: float = 1.0  # seconds between reads of the audit log (events of other processes)
    stream_max_seconds: float = 3600.0  # a stream ends after this (the client resumes with Last-Event-ID)
    max_streams_per_token: int = 4
    max_streams: int = 256

    @property
    def base_url(self) -> str:
        if self.public_url:
            return self.public_url.rstrip("/")
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"


@dataclass
class _Held:
    session: Session
    token_id: str
    lock: threading.Lock = field(default_factory=threading.Lock)
    last_used: float = field(default_factory=time.monotonic)


class Sessions:
    """The live sessions of this process, each bound to the token that started it."""

    def __init__(self, config: ServerConfig) -> None:
        self._config = config
        self._lock = threading.Lock()
        self._held: dict[str, _Held] = {}

    def add(self, session: Session, token_id: str) -> None:
        with self._lock:
            self._held[session.id] = _Held(session, token_id)

    def check_room(self, token_id: str) -> None:
        """Close idle sessions, then refuse a new one past the process or per-token limit."""
        idle = time.monotonic() - self._config.session_idle_seconds
        with self._lock:
            stale = [sid for sid, h in self._held.items() if h.last_used < idle and not h.lock.locked()]
            gone = [self._held.pop(sid) for sid in stale]
            total = len(self._held)
            mine = sum(h.token_id == token_id for h in self._held.values())
        for h in gone:
            close_quietly(h.session)
        if total >= self._config.max_sessions or mine >= self._config.max_sessions_per_token:
            raise _Limited("too many live sessions for this token or server; end one (DELETE /v1/sessions/{id}) "
                           "and retry", retry_after=int(self._config.session_idle_seconds))

    @contextmanager
    def use(self, session_id: str, principal: Principal) -> Iterator[Session]:
        """The session, locked for one request; another token's session is unknown here (404)."""
        with self._lock:
            held = self._held.get(session_id)
        if held is None or held.token_id != principal.token_id:
            raise NotFound(f"no live session {session_id} for this token; start one with POST /v1/sessions")
        with held.lock:
            if held.session.closed:  # ended or swept while this request waited for it
                raise NotFound(f"session {session_id} has ended; start one with POST /v1/sessions")
            held.last_used = time.monotonic()
            yield held.session

    def end(self, session_id: str, principal: Principal) -> None:
        with self.use(session_id, principal) as s:
            with self._lock:
                self._held.pop(session_id, None)
            close_quietly(s)

    def close_all(self) -> None:
        close_all(self._lock, self._held)


class _Limited(RateLimited):
    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = max(1, retry_after)


class WriteLimiter:
    """A token bucket per token: ``rate`` writes per ``window`` seconds, refilled continuously."""

    def __init__(self, rate: int, window: float) -> None:
        self.rate, self.window = rate, window
        self._lock = threading.Lock()
        self._buckets: dict[str, tuple[float, float]] = {}

    def take(self, token_id: str) -> None:
        if self.rate <= 0:
            return
        per_second = self.rate / self.window
        now = time.monotonic()
        with self._lock:
            level, at = self._buckets.get(token_id, (float(self.rate), now))
            level = min(float(self.rate), level + (now - at) * per_second)
            if level < 1.0:
                self._buckets[token_id] = (level, now)
                wait = int((1.0 - level) / per_second) + 1
                raise _Limited(f"write rate limit reached ({self.rate} writes per {self.window:g} s for this "
                               f"token); retry in {wait} s", retry_after=wait)
            self._buckets[token_id] = (level - 1.0, now)


# --- request bodies (no identity fields: unknown fields are refused, S2) --------------------------------------


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StartBody(_Body):
    workspace: Annotated[list[Annotated[str, Field(min_length=1, max_length=4096)]], Field(
        max_length=16, description="The host's workspace roots (absolute paths on the server's machine): file "
                                   "reads outside them taint the session (T1)."
    )] = []

    @field_validator("workspace")
    @classmethod
    def _paths(cls, roots: list[str]) -> list[str]:
        return _workspace_roots(roots)


def _workspace_roots(roots: list[str]) -> list[str]:
    for root in roots:
        if "\x00" in root or not root.startswith("/") or not _utf8(root):
            raise ValueError("a workspace root is an absolute path without NUL characters")
    return roots


def _require_text(value: Any, where: str, depth: int = 0) -> None:
    """JSON may carry lone surrogates (``"\\ud800"``), which are not text: refuse them where a body holds free-form
    JSON (tool arguments, messages), before they reach the store."""
    if depth > 64:
        raise InvalidInput(f"{where} is nested too deeply")
    if isinstance(value, str):
        if not _utf8(value):
            raise InvalidInput(f"{where} holds a lone surrogate (\\ud800-\\udfff), which is not text")
    elif isinstance(value, dict):
        for k, v in value.items():
            _require_text(k, where, depth + 1)
            _require_text(v, where, depth + 1)
    elif isinstance(value, list):
        for v in value:
            _require_text(v, where, depth + 1)


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from a JSON \u escape
        return False
    return True


class ToolCallIn(_Body):
    name: Annotated[str, Field(min_length=1, max_length=200, description="The tool the agent called.")]
    arguments: Annotated[dict[str, Any] | str | None, Field(description="Its arguments (object or JSON text).")
                         ] = None
    result_meta: Annotated[dict[str, Any] | None, Field(
        description="Where the result came from (url, path) or {\"untrusted\": true}.")] = None


class DocumentIn(_Body):
    source: Annotated[str, Field(min_length=1, max_length=2000, description="Where it came from.")]
    kind: Annotated[str, Field(min_length=1, max_length=64,
                               description="user (the user's own words), paste, attachment, document, email, …")]


class IngestBody(_Body):
    tool_calls: Annotated[list[ToolCallIn], Field(max_length=100)] = []
    documents: Annotated[list[DocumentIn], Field(max_length=100)] = []


class HostIngestBody(IngestBody):
    workspace: Annotated[list[Annotated[str, Field(min_length=1, max_length=4096)]], Field(
        max_length=16, description="The host's workspace roots (absolute paths on the server's machine): a reported "
                                   "file read outside them taints (T1).")] = []
    host_session: Annotated[str | None, Field(max_length=200, description="The host's own session id (kept in the "
                                                                          "audit log).")] = None
    event: Annotated[str | None, Field(max_length=64, description="The host's hook event (PreToolUse, …).")] = None

    @field_validator("workspace")
    @classmethod
    def _paths(cls, roots: list[str]) -> list[str]:
        return _workspace_roots(roots)


class TurnsBody(_Body):
    messages: Annotated[list[Any], Field(max_length=1000, description="A chat API's message list as it is.")]
    ttl_days: Annotated[int | None, Field(ge=1, le=365)] = None
    sensitivity: Annotated[str | None, Field(max_length=32)] = None


class PromoteBody(_Body):
    note: Annotated[str | None, Field(max_length=1000)] = None
    replace_current: bool = False


class RejectBody(_Body):
    reason: Annotated[str | None, Field(max_length=1000)] = None


_PROBLEM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["type", "title", "status", "detail", "code"],
    "properties": {"type": {"type": "string"}, "title": {"type": "string"}, "status": {"type": "integer"},
                   "detail": {"type": "string"}, "code": {"type": "string"}},
}


def _problem_doc(description: str) -> dict[str, Any]:
    return {"description": description, "content": {MEDIA_TYPE: {"schema": _PROBLEM_SCHEMA}}}


_COMMON = {400: _problem_doc("Invalid input"), 401: _problem_doc("Missing or refused token"),
           403: _problem_doc("The token may not do this"), 404: _problem_doc("Not found"),
           413: _problem_doc("Request body too large"), 422: _problem_doc("Rejected by the write gate"),
           409: _problem_doc("Version conflict or capacity exceeded"), 429: _problem_doc("Rate limited"),
           500: _problem_doc("Internal error (no details)"), 503: _problem_doc("Not ready / integrity")}


# --- auth (module level: FastAPI resolves these annotations from the module) --------------------------------

_bearer = HTTPBearer(auto_error=False, description="A memwarden token (`memwarden token create`), or an access "
                                                   "token of the configured OAuth issuer.")


Bearer = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]


def _principal(request: Request, creds: Bearer) -> Principal:
    if creds is None:
        raise AuthError("this route needs `Authorization: Bearer <memwarden token>` "
                        "(create one with `memwarden token create`)")
    return request.app.state.authenticator.authenticate(creds.credentials)  # type: ignore[no-any-return]


def _require_agent(who: Principal) -> Principal:
    if who.role != AGENT:
        raise Forbidden("agent routes need an agent token (bound to tenant/user/agent); this is an "
                        f"{who.role} token")
    return who


async def _agent(who: Annotated[Principal, Depends(_principal)]) -> Principal:
    # async: a check of the principal, no I/O — a sync dependency would cost a worker-thread hop of its own
    return _require_agent(who)


def _operator(who: Annotated[Principal, Depends(_principal)], request: Request) -> Principal:
    if who.role != OPERATOR:  # T3: a refused attempt is a security event
        service: MemoryService = request.app.state.service
        ctx = Context(Scope(who.tenant, who.user or "*", who.agent), session_id=new_id(),
                      source_type=SourceType.OPERATOR, actor=who.actor)
        service.refuse(ctx, "operator_route_refused", request.path_params.get("memory_id"), via="rest",
                       why=f"{request.method} {request.url.path} needs an operator token; "
                           f"{who.role} tokens cannot call operator routes (T3)")
    return who


Agent = Annotated[Principal, Depends(_agent)]
Operator = Annotated[Principal, Depends(_operator)]


# --- the app ------------------------------------------------------------------------------------------------


def create_app(service: MemoryService, config: ServerConfig | None = None, *, close_service: bool = False
               ) -> FastAPI:
    """The REST app over ``service``. With ``close_service`` the app closes the store when it shuts down."""
    config = config or ServerConfig()
    sessions = Sessions(config)
    limiter = WriteLimiter(config.write_rate, config.write_window)
    authenticator = oauth.authenticator_for(service, config.oauth, memwarden_tokens=config.memwarden_tokens,
                                            resource_url=mcp_http.resource_url_of(config.base_url))
    streams = rest_stream.EventStreams(service, rest_stream.StreamLimits(
        heartbeat=config.stream_heartbeat, poll=config.stream_poll, max_seconds=config.stream_max_seconds,
        per_token=config.max_streams_per_token, total=config.max_streams), authenticate=authenticator.authenticate)
    mcp = mcp_http.build(service, public_url=config.base_url, host=config.host,
                         idle_seconds=config.session_idle_seconds, max_body_bytes=config.max_body_bytes,
                         take_write=limiter.take, authenticator=authenticator)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> Any:
        async with mcp.manager.run():
            yield
        streams.close()
        mcp.sessions.close_all()
        sessions.close_all()
        if close_service:
            service.close()

    app = FastAPI(title="memwarden", version=_version(), lifespan=lifespan, responses=_COMMON,
                  description="Persistent memory for LLM agents; every write crosses the write gate. "
                              "Errors are RFC 9457 problem details with a stable `code`.")
    app.state.sessions = sessions
    app.state.service = service
    app.state.mcp = mcp
    app.state.authenticator = authenticator
    app.state.streams = streams  # serve() ends them when a shutdown signal arrives
    app.router.routes.extend(mcp.routes)  # MCP over streamable HTTP at /mcp and its RFC 9728 metadata

    # -- errors --

    @app.exception_handler(MemwardenError)
    async def _memwarden_error(_req: Request, exc: MemwardenError) -> JSONResponse:
        response = _problem_response(from_error(exc), exc)
        if isinstance(exc, AuthError):  # RFC 6750 §3 with the RFC 9728 metadata URL, as /mcp answers
            response.headers["WWW-Authenticate"] = oauth.challenge(str(exc), mcp.metadata_url)
        return response

    @app.exception_handler(RequestValidationError)
    async def _invalid(_req: Request, exc: RequestValidationError) -> JSONResponse:
        parts = []
        for e in exc.errors()[:10]:
            where = ".".join(str(p) for p in e.get("loc", ()))
            parts.append(f"{where}: {e.get('msg', 'invalid')}"[:200])
        return _problem_response(problem("invalid_input", "; ".join(parts) or "invalid request"))

    @app.exception_handler(StarletteHTTPException)
    async def _http(_req: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed", 401: "unauthorized", 403: "forbidden"}.get(
            exc.status_code, "invalid_input")
        body = problem(code, str(exc.detail))
        body["status"] = exc.status_code
        return JSONResponse(body, status_code=exc.status_code, media_type=MEDIA_TYPE,
                            headers=getattr(exc, "headers", None))

    # -- health --

    @app.get("/healthz", tags=["health"], summary="The process is up")
    async def healthz() -> dict[str, str]:  # no I/O: answered on the event loop, no worker-thread hop
        return {"status": "ok"}

    @app.get("/readyz", tags=["health"], summary="The store opens, the audit chain verifies, it is at its anchor")
    def readyz() -> JSONResponse:
        problems = [f"audit seq {p.seq}: {p.problem}" for p in audit.verify(service.backend, service.signer)]
        if service.rollback is not None:
            problems.append("the store is behind its anchor (I5)")
        if problems:
            log.error("not ready: %s", "; ".join(problems)[:2000])
            return _problem_response(problem("integrity", f"not ready: {len(problems)} integrity problem(s); "
                                                          "run `memwarden doctor`"))
        return JSONResponse({"status": "ready"})

    # -- agent routes --

    @app.post("/v1/sessions", tags=["agent"], status_code=201, summary="Start a session (frozen block, P1)")
    def start_session(who: Agent, body: Annotated[StartBody | None, Body()] = None) -> dict[str, Any]:
        sessions.check_room(who.token_id)
        scope = Scope(who.tenant, who.user or "", who.agent)
        s = host_ingest.start_session(service, scope, reports_ingest=who.host_reports_ingest, transport="REST",
                                      via=f"token {who.name}", workspace=(body.workspace if body else []))
        sessions.add(s, who.token_id)
        return {"session_id": s.id, "block": s.system_block(), "sha256": s.snapshot_sha256,
                "tools": list(TOOL_NAMES), "host_reports_ingest": who.host_reports_ingest, "tainted": s.tainted,
                "reasons": list(s.ledger.reasons)}

    @app.get("/v1/sessions/{session_id}/block", tags=["agent"], summary="The frozen memory block (P1)")
    def get_block(session_id: SESSION_ID, who: Agent) -> dict[str, Any]:
        with sessions.use(session_id, who) as s:
            return {"session_id": s.id, "block": s.system_block(), "sha256": s.snapshot_sha256}

    @app.post("/v1/sessions/{session_id}/ingest", tags=["agent"], summary="Report what the session ingested (T1)")
    def ingest(session_id: SESSION_ID, who: Agent, body: IngestBody) -> dict[str, Any]:
        for c in body.tool_calls:
            _require_text([c.arguments, c.result_meta], "tool_calls")
        with sessions.use(session_id, who) as s:
            decisions = [s.record_tool_call(c.name, c.arguments, c.result_meta) for c in body.tool_calls]
            decisions += [s.record_ingest(d.source, d.kind) for d in body.documents]
            return {"tainted": s.tainted, "reasons": list(s.ledger.reasons),
                    "decisions": [{"tainted": d.tainted, "reason": d.reason, "sources": list(d.sources)}
                                  for d in decisions]}

    @app.post("/v1/ingest", tags=["agent"], summary="Report what the host ingested, for every session of the scope")
    def host_ingest_report(who: Agent, body: HostIngestBody) -> dict[str, Any]:
        """What ``memwarden hook --server`` sends: judged by the taint policy (T1) against ``workspace``; a call
        that taints becomes a host ingest report of the token's own scope, which every session of that scope
        (in any process sharing the store) applies before its next write. Each call is an audit event."""
        for c in body.tool_calls:
            _require_text([c.name, c.arguments, c.result_meta], "tool_calls")
        _require_text([[d.source, d.kind] for d in body.documents], "documents")
        _require_text([body.host_session, body.event], "host_session and event")
        scope = Scope(who.tenant, who.user or "", who.agent)
        judged = host_ingest.judge(service.policy.taint, body.workspace,
                                   [(c.name, c.arguments, c.result_meta) for c in body.tool_calls],
                                   [(d.source, d.kind) for d in body.documents])
        reported = host_ingest.record(service, scope, judged, actor=who.actor, host_session=body.host_session or "",
                                      event=body.event or "")
        return {"tainted": any(r["tainted"] for r in reported), "reports": reported}

    @app.post("/v1/sessions/{session_id}/tools/{name}", tags=["agent"], summary="Call one memory tool")
    async def call_tool(session_id: SESSION_ID, request: Request, creds: Bearer,
                        name: Annotated[str, Path(min_length=1, max_length=100, description=", ".join(TOOL_NAMES))],
                        arguments: Annotated[dict[str, Any] | None, Body()] = None) -> JSONResponse:
        # The hot route: the token check (a store read) and the call run in one worker-thread hop instead of one
        # per sync dependency and one for the route (each hop is two thread wake-ups, ~0.1-0.2 ms; docs/
        # benchmarks.md). Same checks, same order as the ``Agent`` dependency of the other agent routes.
        def run() -> dict[str, Any]:
            who = _require_agent(_principal(request, creds))
            _require_text(arguments, "arguments")
            if name in WRITE_TOOLS:
                limiter.take(who.token_id)
            with sessions.use(session_id, who) as s:
                return s.call_tool(name, arguments or {})

        result = await run_in_threadpool(run)
        if "error" in result:
            return _problem_response(from_dict(result))
        if result.get("status") == "rejected":
            return _problem_response(problem("gate_rejected", str(result.get("message", "rejected")),
                                             result=result))
        return JSONResponse({"tool": name, "result": result})

    @app.post("/v1/sessions/{session_id}/turns", tags=["agent"], summary="Record conversation turns as episodes")
    def record_turns(session_id: SESSION_ID, who: Agent, body: TurnsBody) -> dict[str, Any]:
        _require_text(body.messages, "messages")
        limiter.take(who.token_id)
        with sessions.use(session_id, who) as s:
            recorded = s.record_turns(body.messages, ttl_days=body.ttl_days, sensitivity=body.sensitivity)
            skipped = [{"index": i, "why": why} for i, why in s.skipped_turns]
        out = []
        for t in recorded:
            item: dict[str, Any] = {"index": t.index, "role": t.role, "part": t.part, "parts": t.parts,
                                    "status": t.status}
            res = t.result
            item["result"] = from_error(res) if isinstance(res, MemwardenError) else res.to_dict()
            out.append(item)
        return {"turns": out, "skipped": skipped}

    @app.delete("/v1/sessions/{session_id}", tags=["agent"], status_code=204, summary="End the session")
    def end_session(session_id: SESSION_ID, who: Agent) -> None:
        sessions.end(session_id, who)

    # -- operator routes --

    def _user_scope(who: Principal, user: str) -> Scope:
        scope = Scope(who.tenant, user)
        if not who.may_review(scope.tenant, scope.user):
            raise Forbidden(f"this operator token covers {who.scope_text}, not user {user}")
        return scope

    def _record_of(who: Principal, memory_id: str) -> Checked:
        checked = service.operator_check(memory_id)
        rec = checked.record
        if rec is None or not who.may_review(rec.provenance.tenant, rec.provenance.user):
            raise NotFound(f"no memory {memory_id} this token may see")  # another tenant's ids are not confirmed
        return checked

    def _ctx(who: Principal, scope: Scope) -> Context:
        return Context(scope, session_id=new_id(), source_type=SourceType.OPERATOR, actor=who.actor,
                       sources=("rest",), clearance=review.OPERATOR_CLEARANCE)

    @app.get("/v1/users/{user}/memories", tags=["operator"], summary="A user's memories, every agent")
    def list_memories(user: USER, who: Operator,
                      agent: Annotated[str | None, Query(max_length=128, description="Only this agent.")] = None,
                      kind: Annotated[str | None, Query(max_length=32)] = None,
                      include_held: bool = False) -> dict[str, Any]:
        scope = _user_scope(who, user)
        which: Any = ALL_AGENTS if agent is None else (agent or None)
        if kind is not None and kind not in ("preference", "fact", "episode", "procedure", "reminder",
                                             "task_state"):
            raise InvalidInput(f"unknown kind {kind!r}")
        found = service.operator_rows(scope.tenant, scope.user, which, include_held=include_held, kind=kind)
        return {"tenant": scope.tenant, "user": scope.user, "count": len(found),
                "memories": [_checked(c) for c in found]}

    @app.get("/v1/users/{user}/beliefs", tags=["operator"], summary="Everything held about a user (A4)")
    def beliefs(user: USER, who: Operator) -> dict[str, Any]:
        scope = _user_scope(who, user)
        found = service.beliefs(scope.tenant, scope.user)
        return {"tenant": scope.tenant, "user": scope.user, "count": len(found),
                "memories": [_checked(c) for c in found]}

    @app.get("/v1/memories/{memory_id}", tags=["operator"], summary="One memory with history and reads")
    def get_memory(memory_id: MEMORY_ID, who: Operator) -> dict[str, Any]:
        checked = _record_of(who, memory_id)
        reads = sum(1 for _ in audit.reads_of(service.backend, memory_id))
        return {**_checked(checked), "history": service.history(memory_id) if checked.ok else [], "reads": reads}

    @app.delete("/v1/memories/{memory_id}", tags=["operator"], summary="Delete a memory everywhere (D3)")
    def delete_memory(memory_id: MEMORY_ID, who: Operator) -> dict[str, Any]:
        limiter.take(who.token_id)
        rec = _record_of(who, memory_id).record
        assert rec is not None
        p = rec.provenance
        removed = service.remove(_ctx(who, Scope(p.tenant, p.user, p.agent or None)), memory_id, include_held=True)
        return {"removed": removed}

    @app.get("/v1/review", tags=["operator"], summary="The review queue (T2)")
    def review_list(who: Operator, user: Annotated[str | None, Query(min_length=1, max_length=128)] = None,
                    limit: Annotated[int, Query(ge=1, le=1000)] = 200) -> dict[str, Any]:
        items = review.queue(service, who, user=user, limit=limit)
        return {"count": len(items), "items": [_held(i) for i in items]}

    @app.get("/v1/review/{memory_id}", tags=["operator"], summary="One held memory and why it was held")
    def review_show(memory_id: MEMORY_ID, who: Operator) -> dict[str, Any]:
        return _held(review.show(service, who, memory_id))

    @app.post("/v1/review/{memory_id}/promote", tags=["operator"], summary="Promote a held memory (T3)")
    def review_promote(memory_id: MEMORY_ID, who: Operator,
                       body: Annotated[PromoteBody | None, Body()] = None) -> dict[str, Any]:
        limiter.take(who.token_id)
        body = body or PromoteBody()
        return review.promote(service, who, memory_id, note=body.note,
                              replace_current=body.replace_current).to_dict()

    @app.post("/v1/review/{memory_id}/reject", tags=["operator"], summary="Reject (delete) a held memory")
    def review_reject(memory_id: MEMORY_ID, who: Operator,
                      body: Annotated[RejectBody | None, Body()] = None) -> dict[str, Any]:
        limiter.take(who.token_id)
        return {"removed": review.reject(service, who, memory_id, reason=(body.reason if body else None))}

    @app.get("/v1/audit/log", tags=["operator"], summary="The audit log of the token's tenant (A1)")
    def audit_log(who: Operator, limit: Annotated[int, Query(ge=1, le=10_000)] = 50,
                  event: Annotated[str | None, Query(min_length=1, max_length=64)] = None,
                  memory: Annotated[str | None, Query(min_length=1, max_length=64)] = None) -> dict[str, Any]:
        rows = audit.log_rows(service.backend, limit=limit, event=event, memory_id=memory, tenant=who.tenant,
                              user=who.user)
        if not rows and event is not None and event not in (known := audit.event_names(service.backend)):
            raise InvalidInput(f"unknown event {event!r}: events are {', '.join(known)}")
        return {"events": rows}

    @app.get("/v1/audit/verify", tags=["operator"], summary="Verify the hash-chained audit log and the anchor")
    def audit_verify(who: Operator) -> dict[str, Any]:
        problems = [{"seq": p.seq, "problem": p.problem} for p in audit.verify(service.backend, service.signer)]
        if service.rollback is not None:
            problems.append({"seq": None, "problem": service.rollback})
        head_seq, _ = audit_head(service)
        return {"ok": not problems, "last_seq": head_seq, "problems": problems}

    @app.get("/v1/audit/reads", tags=["operator"], summary="Which sessions read which memories (A2)")
    def audit_reads(who: Operator,
                    memory: Annotated[str | None, Query(min_length=1, max_length=64, pattern=r"^[0-9A-Za-z]+$",
                                                        description="Only the reads that reached this memory."
                                                        )] = None,
                    user: Annotated[str | None, Query(min_length=1, max_length=128,
                                                      description="Only this user's sessions.")] = None,
                    after: Annotated[int, Query(ge=0, le=SEQ_MAX,
                                                description="Audit seq: rows after it (paging).")] = 0,
                    limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> dict[str, Any]:
        if user is not None:
            _user_scope(who, user)
        user = user or who.user
        rows = audit.reads(service.backend, tenant=who.tenant, user=user, memory_id=memory, after=after,
                           limit=limit)
        if (not rows and memory is not None and after == 0
                and not audit.names_memory(service.backend, memory, tenant=who.tenant, user=user)):
            raise NotFound(f"no memory {memory} this token may see")  # another tenant's ids are not confirmed
        return {"reads": rows, "next_after": rows[-1]["seq"] if len(rows) == limit else None}

    @app.get("/v1/export", tags=["operator"], summary="Export live memories as signed JSON Lines (streamed)",
             response_class=StreamingResponse,
             responses={200: {"description": "One signed record per line (`memwarden import` restores it)",
                              "content": {JSONL: {"schema": {"type": "string"}}}}})
    def export(who: Operator,
               user: Annotated[str | None, Query(min_length=1, max_length=128,
                                                 description="Only this user (default: every user the token "
                                                             "covers).")] = None,
               agent: Annotated[str | None, Query(max_length=128, description="Only this agent's memories; "
                                                  "empty: the user's shared ones (default: every agent).")] = None,
               include_held: bool = False) -> StreamingResponse:
        if user is not None:
            _user_scope(who, user)
        which: transfer.AgentSelector = transfer.ALL_AGENTS if agent is None else (agent or None)
        if agent:
            Scope(who.tenant, user or who.user or "-", agent)  # a valid agent id, else 400
        lines = transfer.export_jsonl_pages(service, who.tenant, user or who.user, which, include_held,
                                            actor=who.actor, via="rest")
        first = next(lines, None)  # the first page is read here: its errors are still a problem document
        body = itertools.chain(() if first is None else (first,), lines)
        return StreamingResponse((line + "\n" for line in body), media_type=JSONL,
                                 headers={"Cache-Control": "no-store",
                                          "Content-Disposition": 'attachment; filename="memwarden-export.jsonl"'})

    @app.get("/v1/events", tags=["operator"], summary="Live audit events of the token's tenant (SSE, A3)",
             response_class=StreamingResponse,
             responses={200: {"description": "Server-Sent Events: one per audit row (`id` = its seq)",
                              "content": {rest_stream.MEDIA_TYPE: {"schema": rest_stream.EVENT_SCHEMA}}}})
    def events(who: Operator, creds: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
               event: Annotated[list[EVENT_NAME] | None, Query(max_length=32,
                                                               description="Only these events (repeat it).")
                                ] = None,
               after: Annotated[int | None, Query(ge=0, le=SEQ_MAX, description="Replay from after this audit seq "
                                                  "(default: only new events).")] = None,
               last_event_id: Annotated[str | None, Header(alias="Last-Event-ID", max_length=20,
                                                           description="Resume after this event id (sent by "
                                                                       "SSE clients when they reconnect).")
                                        ] = None) -> StreamingResponse:
        assert creds is not None  # _principal refused the request otherwise
        if event and (unknown := sorted(set(event) - set(known := audit.event_names(service.backend)))):
            # a mistyped name would otherwise open a stream that stays silent forever
            raise InvalidInput(f"unknown event {', '.join(map(repr, unknown))}: events are {', '.join(known)}")
        head = audit.newest_seq(service.backend)
        start = after if last_event_id is None else _event_id(last_event_id)
        if start is not None and start > head:
            raise InvalidInput(f"event id {start} is past the newest audit event ({head}); this is not the store "
                               "it came from, or the store was restored from an older copy")
        streams.acquire(who.token_id)
        return streams.response(who, creds.credentials, head if start is None else start, event or ())

    app.add_middleware(_BodyLimit, max_bytes=config.max_body_bytes)
    app.add_middleware(serving.BodyDeadline, seconds=config.body_timeout)  # 408 for a body that does not arrive
    app.add_middleware(_CatchAll)
    app.add_middleware(logs.AccessLog)  # one log line per request, never a body or a token (memwarden.logs)
    return app


def _event_id(text: str) -> int:
    """A ``Last-Event-ID``: the audit seq of the last event the client received."""
    text = text.strip()
    if not (text.isascii() and text.isdigit()):
        raise InvalidInput("Last-Event-ID must be the id of an event of this stream (an audit seq number)")
    return int(text)


def audit_head(service: MemoryService) -> tuple[int, str]:
    with service.backend.read() as conn:
        return audit.head(conn)


def _version() -> str:
    from memwarden import __version__

    return __version__


def _problem_response(body: dict[str, Any], exc: BaseException | None = None) -> JSONResponse:
    headers: dict[str, str] = {}
    if body["code"] == "unauthorized":
        headers["WWW-Authenticate"] = 'Bearer realm="memwarden", error="invalid_token"'
    retry = getattr(exc, "retry_after", None)
    if body["code"] == "rate_limited" and isinstance(retry, int):
        # a wait that helps (the write rate, a full session table); a session's own bound (too many rejected
        # writes) is not lifted by waiting, so it gets no Retry-After: its detail says to start a new session
        headers["Retry-After"] = str(retry)
    if body["status"] >= 500:
        log.error("request failed: %s", body["code"])
    return JSONResponse(body, status_code=int(body["status"]), media_type=MEDIA_TYPE, headers=headers)


def _record(rec: Record | None, ok: bool) -> dict[str, Any]:
    if rec is None:
        return {}
    d = rec.to_dict()
    if not ok:
        d["content"] = None  # never served: it failed verification
    return d


def _checked(c: Checked) -> dict[str, Any]:
    return {"id": c.id, "verified": c.ok, "refused": c.refused, "memory": _record(c.record, c.ok)}


def _held(item: review.HeldItem) -> dict[str, Any]:
    d = item.to_dict()
    if not item.checked.ok and isinstance(d.get("memory"), dict):
        d["memory"]["content"] = None
    return d


# --- ASGI middleware: body size limit, and no stack trace ever ---------------------------------------------

Scope_ = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope_, Receive, Send], Awaitable[None]]


async def _send_problem(send: Send, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
    import json

    raw = json.dumps(body).encode("utf-8")
    hdrs = [(b"content-type", MEDIA_TYPE.encode()), (b"content-length", str(len(raw)).encode())]
    hdrs += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": body["status"], "headers": hdrs})
    await send({"type": "http.response.body", "body": raw})


class _BodyLimit:
    """Refuse a request body over ``max_bytes`` with 413, whether it declares its length or streams it."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope: Scope_, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        too_big = problem("payload_too_large", f"the request body is larger than {self.max_bytes} bytes")
        for k, v in scope.get("headers", ()):
            if k == b"content-length":
                try:
                    declared = int(v)
                except ValueError:
                    declared = -1
                if declared > self.max_bytes or declared < 0:
                    await _send_problem(send, too_big if declared > 0 else
                                        problem("invalid_input", "bad Content-Length"))
                    return
        body = bytearray()
        while True:
            msg = await receive()
            if msg["type"] != "http.request":
                return  # the client went away
            body += msg.get("body", b"")
            if len(body) > self.max_bytes:
                await _send_problem(send, too_big)
                return
            if not msg.get("more_body", False):
                break
        sent = False

        async def replay() -> MutableMapping[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


class _CatchAll:
    """Any exception the handlers did not turn into a problem: logged with its traceback for the operator, and a
    500 problem without details for the caller."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope_, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def watch(msg: MutableMapping[str, Any]) -> None:
            nonlocal started
            if msg["type"] == "http.response.start":
                started = True
            await send(msg)

        try:
            await self.app(scope, receive, watch)
        except Exception:
            log.exception("unhandled error in %s %s", scope.get("method"), scope.get("path"))
            if not started:
                await _send_problem(send, problem("internal", "internal error; an operator can find the details "
                                                              "in the memwarden log"))


def routes(app: FastAPI) -> list[APIRoute]:
    """Every API route of ``app`` (for documentation and the authorization tests)."""
    return [r for r in app.routes if isinstance(r, APIRoute)]


def serve(service: MemoryService, host: str, port: int, *, config: ServerConfig | None = None,
          log_format: str | None = None, access_log: bool = True) -> None:
    """Serve the API over ``service`` until SIGINT/SIGTERM (:func:`memwarden.serving.run`): the open event streams
    end at once, in-flight requests finish within ``config.shutdown_timeout``, then the live sessions are ended.
    The caller closes the store.

    uvicorn picks its fastest HTTP parser and event loop when installed (``httptools``, ``uvloop``: the server
    extra depends on both where they exist) and falls back to ``h11`` and asyncio. ``access_log``: the
    ``memwarden.access`` line per request (:mod:`memwarden.logs`; never a body or a token); off, it is not
    written (about 0.1 ms a request, docs/benchmarks.md)."""
    config = replace(config or ServerConfig(), host=host, port=port)
    fmt = logs.configure(log_format)  # before the app: its start-up warnings go to the same log
    logs.ACCESS.setLevel(logging.INFO if access_log else logging.WARNING)
    app = create_app(service, config)
    serving.run(app, config, log_format=fmt, describe={"auth": app.state.authenticator.describe()},
                on_signal=app.state.streams.close)  # open event streams end now, not at the shutdown timeout
