"""``memwarden hook``: a host's tool-use hook reports each tool call the model makes (issue 13, T1).

The host (Claude Code: its ``PreToolUse`` and ``PostToolUse`` hooks) runs the command once per tool call with one
JSON object on stdin::

    {"session_id": "…", "transcript_path": "…", "cwd": "/repo", "hook_event_name": "PreToolUse",
     "tool_name": "WebFetch", "tool_input": {"url": "https://…", "prompt": "…"}, "tool_use_id": "toolu_…"}

(``PostToolUse`` adds ``tool_response``). The call is judged by the session taint policy exactly as a session's
ledger judges a recorded tool call (file tools against the workspace roots), and recorded for the identity's scope
(:func:`memwarden.host_ingest.record`): in the store directly, or through a running ``memwarden serve``
(``POST /v1/ingest``). Every memwarden session of that scope — an ``memwarden mcp`` process, the HTTP ``/mcp``
session of its token, a REST session — is tainted before its next write.

Fail closed (T6): input that is not one hook call of a known shape (too large, not UTF-8, not JSON, nested too
deeply, a lone surrogate, wrong types, an unknown event) is reported as unjudged ingest — which taints the scope —
and the command exits 2 with one line on stderr, which makes Claude Code block the tool (``PreToolUse``) or show
the line to the model (``PostToolUse``); so does a store or server it cannot reach (then nothing is recorded, and
the tool does not run when the hook is a PreToolUse hook). Never a stack trace.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from memwarden import host_ingest
from memwarden.taint import MAX_SOURCE_CHARS

if TYPE_CHECKING:
    from memwarden.identity import Identity
    from memwarden.service import MemoryService

EXIT_BLOCK = 2  # Claude Code: a PreToolUse hook that exits 2 blocks the tool call; stderr goes to the model
MAX_INPUT_BYTES = 32 * 1024 * 1024  # a PostToolUse input carries the tool's whole response
MAX_REPORTED_BYTES = 512 * 1024  # the tool input that is judged and reported (a REST body is at most 1 MiB)
MAX_DEPTH = 64  # as REST bodies (rest._require_text)
EVENTS = ("PreToolUse", "PostToolUse")
# Claude Code's tools that write a file and show part of it back: judged by their path alone (the text they write
# is the model's own, not ingest); every other tool's input is judged whole.
WRITE_PATHS = {"Write": "file_path", "Edit": "file_path", "MultiEdit": "file_path", "NotebookEdit": "notebook_path"}
TIMEOUT_SECONDS = 10.0


class HookError(Exception):
    """A problem to report as one line (exit 2)."""


@dataclass(frozen=True, slots=True)
class HookCall:
    """One tool call as the host's hook reported it."""

    event: str
    tool: str
    arguments: dict[str, Any]
    host_session: str
    cwd: str | None


def read_input(stream: IO[bytes], limit: int = MAX_INPUT_BYTES) -> bytes:
    """All of ``stream``, or :class:`HookError` past ``limit`` bytes (read no further than that)."""
    data = stream.read(limit + 1)
    if len(data) > limit:
        raise HookError(f"hook input is larger than {limit // (1024 * 1024)} MiB")
    return data


def _check_values(value: Any) -> None:
    """Depth and text of a JSON value, without recursion: nested at most :data:`MAX_DEPTH`, no lone surrogates."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        v, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise HookError(f"hook input is nested deeper than {MAX_DEPTH} levels")
        if isinstance(v, str):
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                raise HookError("hook input holds a lone surrogate (\\ud800-\\udfff), which is not text") from None
        elif isinstance(v, dict):
            stack.extend((x, depth + 1) for kv in v.items() for x in kv)
        elif isinstance(v, list):
            stack.extend((x, depth + 1) for x in v)


def _text(data: dict[str, Any], key: str, *, required: bool = False, limit: int = 4096) -> str | None:
    value = data.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip() or len(value) > limit:
        raise HookError(f"hook input: {key} must be a non-empty string of at most {limit} characters"
                        + ("" if value is None else f", got {type(value).__name__}"))
    return value


def parse(raw: bytes) -> HookCall:
    """One hook call from the bytes of its JSON, or :class:`HookError` saying what is wrong with them."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise HookError(f"hook input is not valid UTF-8 (byte {exc.start})") from None
    if not text.strip():
        raise HookError("no hook input on stdin (expected the tool-use hook's JSON object)")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise HookError(f"hook input is not JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    except RecursionError:
        raise HookError(f"hook input is nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:  # an integer of more than 4,300 digits
        raise HookError(f"hook input is not usable JSON: {exc}"[:200]) from None
    if not isinstance(data, dict):
        raise HookError(f"hook input must be a JSON object, got {type(data).__name__}")
    _check_values(data)
    event = _text(data, "hook_event_name", required=True, limit=64)
    if event not in EVENTS:
        raise HookError(f"hook input: hook_event_name {str(event)[:40]!r} is not a tool-use hook "
                        f"({' or '.join(EVENTS)}); configure memwarden hook for those events only")
    tool = _text(data, "tool_name", required=True, limit=MAX_SOURCE_CHARS)
    arguments = data.get("tool_input")
    if not isinstance(arguments, dict):
        raise HookError(f"hook input: tool_input must be a JSON object, got {type(arguments).__name__}")
    return HookCall(str(event), str(tool), arguments, _text(data, "session_id", limit=200) or "",
                    _text(data, "cwd"))


def reported_arguments(call: HookCall) -> dict[str, Any]:
    """The arguments judged for ``call``: a file-writing tool's path alone, else all of them (at most
    :data:`MAX_REPORTED_BYTES` as JSON, else :class:`HookError`)."""
    key = WRITE_PATHS.get(call.tool)
    arguments = {key: call.arguments.get(key)} if key is not None else call.arguments
    size = len(json.dumps(arguments, ensure_ascii=False).encode("utf-8"))
    if size > MAX_REPORTED_BYTES:
        raise HookError(f"hook input: the tool_input of {call.tool} is {size} bytes, more than the "
                        f"{MAX_REPORTED_BYTES} that are judged")
    return arguments


def workspace_roots(given: Sequence[str], call: HookCall | None) -> list[str]:
    """The roots file reads are judged against: ``--workspace``, else ``$CLAUDE_PROJECT_DIR`` (the project the host
    runs in), else the hook input's ``cwd``; absolute paths only (none: every file read taints)."""
    roots = [r for r in given if r]
    if not roots and os.environ.get("CLAUDE_PROJECT_DIR"):
        roots = [os.environ["CLAUDE_PROJECT_DIR"]]
    if not roots and call is not None and call.cwd:
        roots = [call.cwd]
    bad = [r for r in roots if not r.startswith("/") or "\x00" in r]
    if bad:
        raise HookError(f"workspace root {bad[0][:80]!r} is not an absolute path")
    return [str(Path(r).resolve()) for r in roots]


def _unjudged(problem: str) -> tuple[str, str]:
    return f"memwarden hook input ({problem[:160]})", host_ingest.UNJUDGED_INGEST_KIND


def report_local(service: MemoryService, identity: Identity, call: HookCall | None, problem: str | None,
                 roots: Sequence[str]) -> list[dict[str, Any]]:
    """Judge and record the call (or, for input that could not be read, unjudged ingest) in the store."""
    if call is None:
        judged = host_ingest.judge(service.policy.taint, roots, documents=[_unjudged(problem or "unreadable")])
        return host_ingest.record(service, identity.scope, judged, actor=identity.actor)
    judged = host_ingest.judge(service.policy.taint, roots, [(call.tool, reported_arguments(call), None)])
    return host_ingest.record(service, identity.scope, judged, actor=identity.actor, host_session=call.host_session,
                              event=call.event)


def report_remote(server: str, token: str, call: HookCall | None, problem: str | None, roots: Sequence[str],
                  timeout: float = TIMEOUT_SECONDS) -> dict[str, Any]:
    """The same through a running ``memwarden serve`` (``POST <server>/v1/ingest``, the token's own scope). A call
    the server refuses as invalid is reported again as unjudged ingest (which taints), then :class:`HookError`."""
    url = server.rstrip("/") + "/v1/ingest"
    if not url.startswith(("http://", "https://")):
        raise HookError(f"--server must be an http:// or https:// URL, got {server[:80]!r}")
    if call is None:
        source, kind = _unjudged(problem or "unreadable")
        return _post(url, token, {"documents": [{"source": source, "kind": kind}]}, timeout)
    body = {"tool_calls": [{"name": call.tool, "arguments": reported_arguments(call)}], "workspace": list(roots),
            "host_session": call.host_session or None, "event": call.event}
    try:
        return _post(url, token, body, timeout)
    except _Refused as exc:
        if exc.status not in (400, 413, 422):
            raise
        source, kind = _unjudged(f"{call.tool}: refused by the server")
        _post(url, token, {"documents": [{"source": source, "kind": kind}]}, timeout)
        raise HookError(f"{exc}; recorded as unjudged ingest: this scope's sessions are untrusted") from None


class _Refused(HookError):
    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def _post(url: str, token: str, body: dict[str, Any], timeout: float) -> dict[str, Any]:
    req = urllib.request.Request(url, data=json.dumps(body).encode("utf-8"), method="POST", headers={
        "Authorization": f"Bearer {token}", "Content-Type": "application/json", "Accept": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            answer = json.loads(resp.read(1024 * 1024).decode("utf-8"))
    except urllib.error.HTTPError as exc:
        raise _Refused(f"{url} refused the report: {exc.code} {_detail(exc)}", exc.code) from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise HookError(f"cannot reach {url}: {reason}") from None
    except ValueError:
        raise HookError(f"{url} answered with something that is not JSON") from None
    if not isinstance(answer, dict):
        raise HookError(f"{url} answered with something that is not a report")
    return answer


def _detail(exc: urllib.error.HTTPError) -> str:
    try:
        body = json.loads(exc.read(64 * 1024).decode("utf-8"))
        return str(body.get("detail") or body.get("code") or exc.reason)[:300]
    except (ValueError, AttributeError, OSError):
        return str(exc.reason)[:300]
