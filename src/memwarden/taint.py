"""Session taint (T1, T2): a ledger of what a session ingested, judged by a configurable policy.

A session starts trusted. Every tool call the application records (:meth:`Ledger.record_tool_call`) and every
piece of content that did not come through a tool (:meth:`Ledger.record_ingest`: pasted text, attachments,
retrieved documents) is judged by the :class:`TaintPolicy`. Once anything taints the session it stays tainted
(monotonic), and every memory it writes is untrusted: held for review, never recalled, until a person promotes
it. What the session saw — tool names, URLs (without query strings or credentials) and resolved paths — is kept
as the ``sources`` of every memory it writes (R2).

Judgement order for a tool name (case-insensitive shell-style globs): ``never`` → MCP (``server__tool``) →
``always`` → path tools (taint when any path argument's real path leaves the workspace roots, symlinks and
``..`` resolved) → anything else taints (fail closed), as do arguments that are not a JSON object.

The ledger is in memory and costs a few microseconds per call (``benchmarks/bench_taint.py``); the session's
taint is written to the audit log with every memory it holds, and with the session's end.
"""

from __future__ import annotations

import fnmatch
import functools
import json
import os
import re
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from memwarden.errors import InvalidInput

MAX_SOURCES = 32  # kept per session (and so per memory); the rest are counted
MAX_SOURCE_CHARS = 200
MAX_VALUES_SCANNED = 64  # argument values looked at per call, for URLs and paths
MAX_RESOLVED = 256  # real paths cached per session
MAX_MEMO = 4096  # tool names whose category a policy remembers
_URL = re.compile(r"\b(?:https?|ftp|wss?)://[^\s\"'<>]+", re.IGNORECASE)


def _globs(patterns: Iterable[str], what: str) -> re.Pattern[str] | None:
    pats = list(patterns)
    for p in pats:
        if not isinstance(p, str) or not p:
            raise InvalidInput(f"taint policy: every entry of {what} must be a non-empty string, got {p!r}")
    if not pats:
        return None
    return re.compile("|".join(f"(?:{fnmatch.translate(p.casefold())})" for p in pats))


@dataclass(frozen=True, slots=True)
class TaintPolicy:
    """Which tools and ingested content taint a session (T1). Load one with :meth:`load`; the defaults are the
    packaged ``taint_policy.toml``."""

    always: tuple[str, ...]
    never: tuple[str, ...]
    path_tools: tuple[str, ...]
    path_arguments: tuple[str, ...]
    trusted_ingest: tuple[str, ...] = ("user",)
    mcp: bool = True
    path_argument_set: frozenset[str] = field(init=False, repr=False, compare=False)
    _memo: dict[str, str] = field(init=False, repr=False, compare=False)  # tool name → category (bounded)
    _always_rx: re.Pattern[str] | None = field(init=False, repr=False, compare=False)
    _never_rx: re.Pattern[str] | None = field(init=False, repr=False, compare=False)
    _path_rx: re.Pattern[str] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "path_argument_set", frozenset(self.path_arguments))
        object.__setattr__(self, "_memo", {})
        object.__setattr__(self, "_always_rx", _globs(self.always, "always"))
        object.__setattr__(self, "_never_rx", _globs(self.never, "never"))
        object.__setattr__(self, "_path_rx", _globs(self.path_tools, "path_tools"))

    @classmethod
    def from_toml(cls, text: str, *, origin: str = "taint policy") -> TaintPolicy:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise InvalidInput(f"{origin}: not valid TOML: {exc}") from None
        table = data.get("taint")
        if not isinstance(table, dict):
            raise InvalidInput(f"{origin}: needs a [taint] table")
        unknown = set(table) - {"always", "never", "path_tools", "path_arguments", "trusted_ingest", "mcp"}
        if unknown:
            raise InvalidInput(f"{origin}: unknown setting(s) {', '.join(sorted(unknown))}")

        def strings(key: str) -> tuple[str, ...]:
            value = table.get(key, [])
            if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
                raise InvalidInput(f"{origin}: {key} must be a list of non-empty strings")
            return tuple(value)

        mcp = table.get("mcp", True)
        if not isinstance(mcp, bool):
            raise InvalidInput(f"{origin}: mcp must be true or false")
        return cls(always=strings("always"), never=strings("never"), path_tools=strings("path_tools"),
                   path_arguments=strings("path_arguments"),
                   trusted_ingest=strings("trusted_ingest") if "trusted_ingest" in table else ("user",), mcp=mcp)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> TaintPolicy:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise InvalidInput(f"cannot read taint policy {os.fspath(path)}: {exc.strerror or exc}") from None
        return cls.from_toml(text, origin=os.fspath(path))

    @classmethod
    def default(cls) -> TaintPolicy:
        """The packaged ``taint_policy.toml`` (parsed once per process)."""
        return _default_policy()

    @classmethod
    def from_env(cls) -> TaintPolicy:
        """``$MEMWARDEN_TAINT_POLICY`` (a TOML file) if set, else the defaults."""
        path = os.environ.get("MEMWARDEN_TAINT_POLICY")
        return cls.load(path) if path else cls.default()

    def category(self, tool: str) -> str:
        """``never`` | ``mcp`` | ``always`` | ``path`` | ``unknown`` for a tool name (memoised)."""
        known = self._memo.get(tool)
        if known is None:
            known = self._category(tool)
            if len(self._memo) < MAX_MEMO:
                self._memo[tool] = known
        return known

    def _category(self, tool: str) -> str:
        name = tool.casefold()
        if self._never_rx is not None and self._never_rx.match(name):
            return "never"
        if self.mcp and "__" in name.strip("_"):
            return "mcp"
        if self._always_rx is not None and self._always_rx.match(name):
            return "always"
        if self._path_rx is not None and self._path_rx.match(name):
            return "path"
        return "unknown"


@functools.cache
def _default_policy() -> TaintPolicy:
    text = resources.files("memwarden").joinpath("taint_policy.toml").read_text(encoding="utf-8")
    return TaintPolicy.from_toml(text, origin="memwarden/taint_policy.toml")


@dataclass(frozen=True, slots=True)
class TaintDecision:
    """What recording one tool call or ingest did: whether it tainted the session, and why."""

    tainted: bool
    reason: str
    sources: tuple[str, ...] = ()


def clean_url(url: str) -> str:
    """A URL as a source: scheme, host and path — never credentials, query strings or fragments (which may
    carry tokens)."""
    bare = url.split("?", 1)[0].split("#", 1)[0][:MAX_SOURCE_CHARS]
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return bare
    if not parts.scheme or not host:
        return bare
    return f"{parts.scheme.lower()}://{host}{port}{parts.path}"[:MAX_SOURCE_CHARS]


def _strings(value: Any, budget: list[int]) -> Iterable[str]:
    """String values inside a JSON-like value (bounded), for URL scanning."""
    if budget[0] <= 0:
        return
    budget[0] -= 1
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v, budget)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v, budget)


_REASONS = {"mcp": "{name}: result of an MCP tool",
            "always": "{name}: a tool whose results are outside content",
            "unknown": "{name}: a tool the taint policy does not know (fail closed)"}


def _path_values(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else [value]


_PROC_FD = "/proc/self/fd/"
_O_PATH = getattr(os, "O_PATH", 0)


def _realpath(path: str) -> str:
    """``os.path.realpath``, asking the kernel when it can: ``open(O_PATH)`` resolves symlinks and ``..`` exactly
    as a later read would, and ``/proc/self/fd`` names the result — two system calls instead of an ``lstat`` per
    component. A path that does not exist (or a system without ``/proc``) takes ``os.path.realpath``."""
    if _O_PATH:
        try:
            fd = os.open(path, _O_PATH | os.O_CLOEXEC)
        except OSError:
            return os.path.realpath(path)
        try:
            real = os.readlink(_PROC_FD + str(fd))
        except OSError:
            real = ""
        finally:
            os.close(fd)
        if real.startswith("/") and not real.endswith(" (deleted)"):
            return real
    return os.path.realpath(path)


class Ledger:
    """What one session ingested (T1): monotonic taint, its reasons and the sources seen."""

    __slots__ = ("_cache", "_calls", "_extra_sources", "_resolved", "_roots", "_sources", "changes", "policy",
                 "reasons", "tainted")

    def __init__(self, policy: TaintPolicy, workspace: Sequence[str]) -> None:
        self.policy = policy
        # (root, root + "/"), already resolved by the session; "/" contains every path
        self._roots = tuple((w, w if w.endswith("/") else w + "/") for w in map(str, workspace))
        self.tainted = False
        self.reasons: list[str] = []
        self._sources: dict[str, None] = {}  # ordered set
        self._extra_sources = 0
        self._calls = 0
        self._cache: dict[str, tuple[str, str, TaintDecision | None]] = {}  # tool name → judgement
        self._resolved: dict[str, str] = {}  # path argument → real path
        self.changes = 0  # bumped whenever taint or sources change (the session rebuilds its context then)

    @property
    def sources(self) -> tuple[str, ...]:
        out = tuple(self._sources)
        return (*out, f"(+{self._extra_sources} more)") if self._extra_sources else out

    @property
    def calls(self) -> int:
        return self._calls

    def _source(self, value: str) -> None:
        value = value[:MAX_SOURCE_CHARS]
        if value in self._sources:
            return
        if len(self._sources) >= MAX_SOURCES:
            self._extra_sources += 1
        else:
            self._sources[value] = None
        self.changes += 1  # the (+N more) count is part of the sources too

    def _taint(self, reason: str) -> None:
        if not self.tainted:
            self.changes += 1
        self.tainted = True
        if len(self.reasons) < MAX_SOURCES and reason not in self.reasons:
            self.reasons.append(reason)
            self.changes += 1

    def _judge_name(self, name: str) -> tuple[str, str, TaintDecision | None]:
        """(category, taint reason or "", the decision to return when nothing else is seen), per tool name."""
        known = self._cache.get(name)
        if known is None:
            category = self.policy.category(name)
            reason = _REASONS.get(category, "")
            reason = reason.format(name=name) if reason else ""
            plain = None if category == "path" else TaintDecision(bool(reason), reason or f"{name}: trusted "
                                                                                            f"({category})")
            known = self._cache[name] = (category, reason, plain)
        return known

    def record_tool_call(self, name: Any, arguments: Any = None, result_meta: Any = None) -> TaintDecision:
        """Judge one tool call the agent made (before or after it ran); see the module docstring."""
        self._calls += 1
        if type(name) is not str or not name or name != name.strip() or len(name) > MAX_SOURCE_CHARS:
            if not isinstance(name, str) or not name.strip():
                self._taint("a tool call without a valid name")
                return TaintDecision(True, "a tool call without a valid name")
            name = name.strip()[:MAX_SOURCE_CHARS]
        self._source("tool:" + name)
        category, reason, plain = self._judge_name(name)
        if arguments is None:
            arguments = {}
        elif isinstance(arguments, (str, bytes)):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except (ValueError, UnicodeDecodeError):
                arguments = None
        seen: list[str] = []
        if type(arguments) is dict:
            for v in arguments.values():
                if type(v) is str:
                    if "://" in v:
                        seen += [clean_url(m.group()) for m in _URL.finditer(v)]
                elif isinstance(v, (dict, list, tuple)):
                    seen += [clean_url(m.group()) for x in _strings(v, [MAX_VALUES_SCANNED]) if "://" in x
                             for m in _URL.finditer(x)]
        elif not isinstance(arguments, dict):
            reason = f"{name}: arguments are not a JSON object (unparseable)"
        if isinstance(result_meta, dict):
            for key in ("url", "urls", "source", "sources", "path", "paths"):
                for v in _path_values(result_meta.get(key)):
                    if isinstance(v, str) and v:
                        seen.append(clean_url(v) if "://" in v else v)
            if result_meta.get("untrusted") is True and not reason:
                reason = f"{name}: its result was marked untrusted by the application"
        if category == "path" and not reason and isinstance(arguments, dict):
            reason, paths = self._judge_paths(name, arguments)
            seen += paths
        for x in seen:
            self._source(x)
        if reason:
            self._taint(reason)
        if plain is not None and not seen and reason == plain.reason * plain.tainted:
            return plain  # the common case: one immutable decision per tool name
        return TaintDecision(bool(reason), reason or f"{name}: trusted ({category})", tuple(seen))

    def _judge_paths(self, name: str, arguments: dict[str, Any]) -> tuple[str, list[str]]:
        path_args = self.policy.path_argument_set
        keys = [k for k in arguments if k in path_args]
        if not keys:
            return f"{name}: no path argument to check against the workspace (fail closed)", []
        resolved: list[str] = []
        for key in keys:
            for value in _path_values(arguments[key]):
                if not isinstance(value, str) or not value or "\x00" in value:
                    return f"{name}: {key} is not a usable path (fail closed)", resolved
                real = self._real(value)
                resolved.append(real)
                if not any(real == root or real.startswith(prefix) for root, prefix in self._roots):
                    where = "no workspace roots are set" if not self._roots else "outside the workspace"
                    return f"{name}: {real} is {where}", resolved
        return "", resolved

    def _real(self, value: str) -> str:
        """The real path (symlinks and ``..`` resolved as the kernel resolves them), cached per ledger."""
        real = self._resolved.get(value)
        if real is None:
            p = os.path.expanduser(value)
            if not os.path.isabs(p):
                p = os.path.join(self._roots[0][0] if self._roots else os.getcwd(), p)
            real = self._resolved[value] = _realpath(p)
            if len(self._resolved) > MAX_RESOLVED:
                self._resolved.pop(next(iter(self._resolved)))
        return real

    def record_ingest(self, source: Any, kind: Any) -> TaintDecision:
        """Content that did not come through a tool call: ``kind`` says what it is (``user`` for the user's own
        words; ``paste``, ``attachment``, ``document``, ``email``, … taint unless the policy trusts them)."""
        self._calls += 1
        src = source if isinstance(source, str) and source else "(unnamed)"
        src = clean_url(src) if "://" in src else src[:MAX_SOURCE_CHARS]
        kind_s = kind if isinstance(kind, str) and kind else "(no kind)"
        self._source(f"{kind_s}:{src}")
        if kind_s in self.policy.trusted_ingest:
            return TaintDecision(False, f"ingested {kind_s} content: trusted", (src,))
        reason = f"ingested {kind_s} content from {src}"
        self._taint(reason)
        return TaintDecision(True, reason, (src,))
