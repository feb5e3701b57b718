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
import stat
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from memwarden import repeats
from memwarden.errors import InvalidInput

MAX_SOURCES = 32  # kept per session (and so per memory); the rest are counted
MAX_SOURCE_CHARS = 200
MAX_VALUES_SCANNED = 64  # argument values looked at per call, for URLs and paths (a file tool with more taints)
MAX_RECALLED = 256  # untrusted memories whose text a session remembers (T7); one more taints
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


def _walk(values: Iterable[Any], budget: int) -> tuple[list[str], bool]:
    """The strings inside JSON-like values (and the keys of nested objects), depth-first, without recursion, so
    no nesting depth can make judging fail (T6). Looks at most ``budget`` values; ``False`` when some were left
    unseen."""
    out: list[str] = []
    stack: list[Any] = list(values)
    if len(stack) > budget:
        return out, False
    seen = 0
    while stack:
        v = stack.pop()
        seen += 1
        if seen > budget:
            return out, False
        if type(v) is str:
            out.append(v)
        elif isinstance(v, dict):
            if len(v) * 2 + len(stack) + seen > budget:
                return out, False
            for k, x in v.items():
                stack.append(k)
                stack.append(x)
        elif isinstance(v, (list, tuple)):
            if len(v) + len(stack) + seen > budget:
                return out, False
            stack.extend(v)
    return out, True


class _DuplicateKey(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook``: an object that names a key twice is ambiguous — Python keeps the last value, a tool's
    parser may read the first."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        key = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        raise _DuplicateKey(key)
    return out


def _parse(arguments: Any) -> tuple[Any, str]:
    """Arguments as given, or parsed from JSON text; and what makes them unjudgeable ("" when nothing)."""
    if arguments is None:
        return {}, ""
    if isinstance(arguments, (str, bytes)):
        try:
            if not arguments.strip():
                arguments = {}
            elif ("," in arguments) if isinstance(arguments, str) else (b"," in arguments):
                arguments = json.loads(arguments, object_pairs_hook=_no_duplicates)
            else:  # no comma: no object has two keys, so none names one twice
                arguments = json.loads(arguments)
        except _DuplicateKey as exc:
            return None, f"arguments name the key {str(exc)[:40]!r} twice (ambiguous: a tool may read either value)"
        except (ValueError, UnicodeDecodeError, RecursionError):
            return None, "arguments are not a JSON object (unparseable)"
    if not isinstance(arguments, dict):
        return None, "arguments are not a JSON object (unparseable)"
    return arguments, ""


_REASONS = {"mcp": "{name}: result of an MCP tool",
            "always": "{name}: a tool whose results are outside content",
            "unknown": "{name}: a tool the taint policy does not know (fail closed)"}


def _path_values(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else [value]


_PROC_FD = "/proc/self/fd/"
_O_PATH = getattr(os, "O_PATH", 0)
_GLOB_MAGIC = re.compile(r"[*?\[{]")


def _hard_linked(st: os.stat_result) -> bool:
    """A regular file with more than one name: another of its names may be outside the workspace."""
    return stat.S_ISREG(st.st_mode) and st.st_nlink > 1


def _resolve(path: str, *, child: bool = False) -> tuple[str, bool]:
    """(real path, whether it is a hard-linked file). Asks the kernel when it can: ``open(O_PATH)`` resolves
    symlinks and ``..`` exactly as a read would, ``/proc/self/fd`` names the result and ``fstat`` gives its link
    count. A path that does not exist (or a system without ``/proc``) takes ``os.path.realpath`` — except a
    ``child`` (a plain name joined to a resolved root) that does not exist: nothing can be read through it."""
    if _O_PATH:
        try:
            fd = os.open(path, _O_PATH | os.O_CLOEXEC)
        except (FileNotFoundError, NotADirectoryError):
            return (path, False) if child else (os.path.realpath(path), False)
        except OSError:
            return os.path.realpath(path), False
        try:
            real = os.readlink(_PROC_FD + str(fd))
            linked = _hard_linked(os.fstat(fd))
        except OSError:
            real, linked = "", False
        finally:
            os.close(fd)
        if real.startswith("/") and not real.endswith(" (deleted)"):
            return real, linked
    real = os.path.realpath(path)
    try:
        return real, _hard_linked(os.stat(real))
    except OSError:
        return real, False


def _glob_base(pattern: str) -> str | None:
    """The directory a glob pattern starts from (its components before the first wildcard), or ``None`` when the
    pattern could leave it: ``..`` after a wildcard, or a brace group spanning a ``/``."""
    parts = pattern.split("/")
    i = next((j for j, part in enumerate(parts) if _GLOB_MAGIC.search(part)), None)
    if i is None:
        return pattern
    for part in parts[i:]:
        if ".." in part or part.count("{") != part.count("}"):
            return None
    base = "/".join(parts[:i])
    return base or ("/" if pattern.startswith("/") else ".")


def _clip(value: str) -> str:
    return repr(value[:80])


class Ledger:
    """What one session ingested (T1, T7): monotonic taint, its reasons, the sources seen, and the untrusted
    memories recalled into it."""

    __slots__ = ("_cache", "_calls", "_extra_sources", "_recalled", "_roots", "_sources", "changes", "policy",
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
        self._recalled: dict[str, repeats.Text] = {}  # untrusted, served memory id → its words (T7)
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
        """Judge one tool call the agent made (before or after it ran); see the module docstring. Never raises:
        whatever goes wrong while judging a call taints the session (T6)."""
        self._calls += 1
        try:
            return self._judge_call(name, arguments, result_meta)
        except Exception as exc:  # T6: any failure while judging an ingest taints
            label = name[:MAX_SOURCE_CHARS] if isinstance(name, str) and name.strip() else "a tool call"
            reason = f"{label}: the call could not be judged ({type(exc).__name__}; fail closed)"
            self._taint(reason)
            return TaintDecision(True, reason)

    def _judge_call(self, name: Any, arguments: Any, result_meta: Any) -> TaintDecision:
        if type(name) is not str or not name or name != name.strip() or len(name) > MAX_SOURCE_CHARS:
            if not isinstance(name, str) or not name.strip():
                self._taint("a tool call without a valid name")
                return TaintDecision(True, "a tool call without a valid name")
            name = name.strip()[:MAX_SOURCE_CHARS]
        self._source("tool:" + name)
        category, reason, plain = self._judge_name(name)
        arguments, problem = _parse(arguments)
        if problem:
            reason = f"{name}: {problem}"
        seen: list[str] = []
        if arguments is not None:
            values = arguments.values()
            if not all(type(x) is str for x in values):  # the common case: flat string arguments
                values, _complete = _walk(values, MAX_VALUES_SCANNED)
            for x in values:
                if "://" in x:
                    seen += [clean_url(m.group()) for m in _URL.finditer(x)]
        meta_paths: list[str] = []
        if isinstance(result_meta, dict):
            for key in ("url", "urls", "source", "sources", "path", "paths"):
                for v in _path_values(result_meta.get(key)):
                    if isinstance(v, str) and v:
                        if "://" in v:
                            seen.append(clean_url(v))
                        else:
                            meta_paths.append(v)
            if result_meta.get("untrusted") is True and not reason:
                reason = f"{name}: its result was marked untrusted by the application"
        if category == "path" and not reason and arguments is not None:
            reason, paths = self._judge_paths(name, arguments, meta_paths)
            seen += paths
        else:
            seen += meta_paths
        for x in seen:
            self._source(x)
        if reason:
            self._taint(reason)
        if plain is not None and not seen and reason == plain.reason * plain.tainted:
            return plain  # the common case: one immutable decision per tool name
        return TaintDecision(bool(reason), reason or f"{name}: trusted ({category})", tuple(seen))

    def _judge_paths(self, name: str, arguments: dict[str, Any], meta_paths: list[str]) -> tuple[str, list[str]]:
        """T1 for a file tool: every argument is judged, every time (nothing is cached: a path may become a
        symlink between two calls). The values of the policy's path arguments must be paths (or lists of them),
        every other string inside the arguments is judged as a path too, and a path the application names in
        ``result_meta`` as well."""
        path_args = self.policy.path_argument_set
        named: list[str] = []
        other: list[Any] = []
        for key, value in arguments.items():
            if key not in path_args:
                other.append(value)
                continue
            for v in _path_values(value):
                if type(v) is not str or not v or "\x00" in v:
                    return f"{name}: {str(key)[:40]} is not a usable path (fail closed)", []
                named.append(v)
        if not named:
            return f"{name}: no path argument to check against the workspace (fail closed)", []
        strings: list[str] = []
        if other:
            strings, complete = _walk(other, MAX_VALUES_SCANNED - len(named))
            if not complete:
                return f"{name}: more argument values than can be judged ({MAX_VALUES_SCANNED}; fail closed)", []
        resolved: list[str] = []
        kept = len(named) + len(meta_paths)  # the real paths of these are sources; of other strings only if bad
        for i, value in enumerate(named + meta_paths + strings if meta_paths or strings else named):
            if not value or "\x00" in value:
                continue  # only other strings can be empty or hold NUL: the named ones were checked above
            why, real = self._judge_path(value)
            if real and (i < kept or why):
                resolved.append(real)
            if why:
                return f"{name}: {why}", resolved
        return "", resolved

    def _judge_path(self, value: str) -> tuple[str, str]:
        """(why it taints or "", its real path or "") for one path-like value: a path, a glob pattern (its base
        directory is judged, and the literal path too), a ``file:`` URI or ``!``-negated pattern."""
        v = value[1:] if value[:1] == "!" else value
        if v[:1] in "fF" and v[:5].lower() == "file:":
            try:
                parts = urlsplit(v)
            except ValueError:
                return f"{_clip(value)} is not a usable file URI (fail closed)", ""
            if parts.netloc.lower() not in ("", "localhost"):
                return f"{_clip(value)} names a file on another host (fail closed)", ""
            v = unquote(parts.path)
            if not v or "\x00" in v:
                return f"{_clip(value)} is not a usable file URI (fail closed)", ""
        elif "://" in v:
            return f"{_clip(value)} is a URL, not a path in the workspace (fail closed)", ""
        targets = [v]
        if _GLOB_MAGIC.search(v):
            base = _glob_base(v)
            if base is None:
                return f"{_clip(value)} is a pattern that can match outside its base directory (fail closed)", ""
            targets.insert(0, base)
        real = ""
        for target in targets:
            real, linked = self._real(target)
            if not any(real == root or real.startswith(prefix) for root, prefix in self._roots):
                where = "outside the workspace" if self._roots else "not in a workspace (none was set)"
                return f"{real} is {where}", real
            if linked:
                return f"{real} is a hard-linked file (another of its names may be outside the workspace; " \
                       "fail closed)", real
        return "", real

    def _real(self, value: str) -> tuple[str, bool]:
        """(real path, hard-linked file?) of a path argument: symlinks and ``..`` resolved as the kernel resolves
        them, a relative path against the first workspace root. Never cached."""
        p = os.path.expanduser(value) if value[:1] == "~" else value
        if p[:1] != "/":
            root = self._roots[0][0] if self._roots else os.getcwd()
            return _resolve(os.path.join(root, p), child="/" not in p and p not in (".", ".."))
        return _resolve(p)

    def record_ingest(self, source: Any, kind: Any) -> TaintDecision:
        """Content that did not come through a tool call: ``kind`` says what it is (``user`` for the user's own
        words; ``paste``, ``attachment``, ``document``, ``email``, … taint unless the policy trusts them)."""
        self._calls += 1
        try:
            src = source if isinstance(source, str) and source else "(unnamed)"
            src = clean_url(src) if "://" in src else src[:MAX_SOURCE_CHARS]
            kind_s = kind if isinstance(kind, str) and kind else "(no kind)"
            self._source(f"{kind_s}:{src}")
            if kind_s in self.policy.trusted_ingest:
                return TaintDecision(False, f"ingested {kind_s} content: trusted", (src,))
            reason = f"ingested {kind_s} content from {src}"
        except Exception as exc:  # T6: any failure while judging an ingest taints
            reason = f"ingested content that could not be judged ({type(exc).__name__}; fail closed)"
            src = "(unnamed)"
        self._taint(reason)
        return TaintDecision(True, reason, (src,))

    def record_host_report(self, reason: str, sources: Sequence[str]) -> None:
        """A report the host made in another process (``memwarden hook``, ``POST /v1/ingest``) that this
        session's scope ingested untrusted content (:mod:`memwarden.host_ingest`): it taints, with its reason."""
        self._calls += 1
        for src in sources[:MAX_SOURCES]:
            if isinstance(src, str) and src:
                self._source(src)
        self._taint(reason[:MAX_SOURCE_CHARS * 2] if isinstance(reason, str) and reason else
                    "a host ingest report without a reason (fail closed)")

    # --- T7: recalled memory is ingested content -------------------------------------------------------------

    def record_recall(self, memory_id: str, trust: str, approval: str, content: str, via: str) -> None:
        """A memory reached the session (block, search, view). A trusted one changes nothing. An untrusted one
        that is served anyway is ingest: approved automatically (``auto``, or anything but an operator), it taints
        the session; approved by an operator, it does not, but its text is remembered so that a save repeating
        it is untrusted too (:meth:`repeats`). Never raises: a failure taints."""
        if trust != "untrusted":
            return
        try:
            if not (isinstance(approval, str) and approval.startswith("operator:")):
                self._taint(f"recalled the automatically approved memory {memory_id} ({via})")
                self._source(f"memory:{memory_id}")
                return
            if memory_id in self._recalled:
                return
            if len(self._recalled) >= MAX_RECALLED:
                self._taint(f"recalled more than {MAX_RECALLED} untrusted memories (too many to track; fail closed)")
                return
            self._recalled[memory_id] = repeats.text(content)
        except Exception as exc:  # T6
            self._taint(f"a recalled memory could not be judged ({type(exc).__name__}; fail closed)")

    @property
    def recalled(self) -> bool:
        """Whether any untrusted (operator-approved) memory reached this session."""
        return bool(self._recalled)

    def repeats(self, content: Any) -> tuple[str, ...]:
        """The ids of untrusted memories recalled into this session whose text ``content`` repeats, in whole or in
        part (:func:`memwarden.repeats.overlaps`)."""
        if not self._recalled or not isinstance(content, str):
            return ()
        new = repeats.text(content)
        return tuple(mid for mid, served in self._recalled.items() if repeats.overlaps(new, served))
