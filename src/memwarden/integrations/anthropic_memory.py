"""A backend for the Anthropic SDK's memory tool (``memory_20250818``): Claude's ``/memories`` files kept as
memwarden memories, every write through the write gate.

Needs the ``anthropic`` extra. Give it to the SDK's tool runner like any tool::

    memory = MemwardenMemoryTool(mw.session(Scope("acme", "alice", "claude")))
    client.beta.messages.tool_runner(model=..., messages=..., tools=[memory, ...])

How files map to memories (:mod:`memwarden.items`): ``/memories/projects/notes.md`` is the keyed item
``notes.md`` in the namespace ``("memories", "projects")`` of the session's scope; directories are the namespaces
that hold files (there are no empty directories). So:

* ``create``, ``str_replace`` and ``insert`` write a new memory, or a new version of the file's memory, through
  the one write path: gate → taint → sign → store → audit. What the gate rejects is a tool error naming its
  rules. In a tainted session (the run read a web page, T1) the write is held for review (T2): the file keeps
  its old content, and the result says so.
* ``view`` of a file shows it with line numbers (the read is logged, A2); of a directory, the files and
  directories up to two levels below it. Held, expired and above-clearance memories are not there.
* ``delete`` removes the file's memory from every index (D3), or every file below a directory; ``rename`` writes
  the file under its new path and removes the old one (a file at a time, so a directory rename interrupted
  half-way leaves some files moved).

Paths are checked before anything is read: they must lie under ``/memories``, with no ``.``/``..`` segments,
empty segments, backslashes or control characters; a file's path has no trailing ``/`` and no hidden (``.``)
names. Names that only look like ``..`` (``%2e%2e``, U+2024, fullwidth dots) are ordinary names here: no path is
ever handed to a filesystem, so they reach nothing outside the session's items.
"""

from __future__ import annotations

import unicodedata
from typing import TYPE_CHECKING, Any

from anthropic.lib.tools import BetaAbstractMemoryTool, ToolError
from anthropic.types.beta import (
    BetaMemoryTool20250818CreateCommand,
    BetaMemoryTool20250818DeleteCommand,
    BetaMemoryTool20250818InsertCommand,
    BetaMemoryTool20250818RenameCommand,
    BetaMemoryTool20250818StrReplaceCommand,
    BetaMemoryTool20250818ViewCommand,
)

from memwarden.errors import MemwardenError
from memwarden.items import MAX_DEPTH, Item, ItemRejected, Items, check_key, check_namespace
from memwarden.records import Kind

if TYPE_CHECKING:
    from memwarden.service import WriteResult
    from memwarden.session import Session

__all__ = ["MemwardenMemoryTool"]

ROOT = "/memories"
FIELD = "file"  # an item's value: {"file": text}; stored as the text itself (memwarden.items)
_LIST_LIMIT = 1000


class MemwardenMemoryTool(BetaAbstractMemoryTool):
    """The memory tool's six commands over one memwarden session (see the module docstring)."""

    def __init__(self, session: Session, *, kind: str = Kind.FACT, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.items = Items(session, kind=kind)

    # --- commands ----------------------------------------------------------------------------------------------

    def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        ns, name = _path(command.path, allow_root=True)
        item = None if name is None else self._guard(lambda: self.items.get(ns, name))
        if item is not None:
            lines = _text(item).split("\n")
            start = 1
            rng = command.view_range
            if rng is not None and (not isinstance(rng, list) or len(rng) != 2
                                    or not all(isinstance(x, int) and not isinstance(x, bool) for x in rng)):
                raise ToolError("view_range is two line numbers, [start, end] (end -1: to the last line)")
            if rng:
                start = max(1, int(rng[0]))
                end = len(lines) if int(rng[1]) == -1 else int(rng[1])
                lines = lines[start - 1:end]
            body = "\n".join(f"{i:>6}\t{line}" for i, line in enumerate(lines, start=start))
            return f"Here's the content of {command.path} with line numbers:\n{body}"
        if name is not None:
            ns = (*ns, name)
        entries = self._below(ns)
        if not entries and ns != ("memories",):
            raise ToolError(f"The path {command.path} does not exist. Please provide a valid path.")
        shown = sorted({e for e in entries if e.count("/") <= 1 or (e.count("/") == 2 and e.endswith("/"))})
        base = command.path.rstrip("/")
        return (f"Here're the files and directories up to 2 levels deep in {base}, excluding hidden items:\n"
                + "\n".join([base, *(f"{base}/{e}" for e in shown)]))

    def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        ns, name = _file_path(command.path)
        if self.items.get(ns, name) is not None:
            raise ToolError(f"File {command.path} already exists")
        res = self._put(ns, name, _text_arg(command.file_text, "file_text"), command.path)
        return _said(res, f"File created successfully at: {command.path}")

    def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        ns, name = _file_path(command.path)
        old_str, new_str = _text_arg(command.old_str, "old_str"), _text_arg(command.new_str, "new_str")
        text = _text(self._file(ns, name, command.path))
        count = text.count(old_str) if old_str else 0
        if count == 0:
            raise ToolError(f"No replacement was performed, old_str `{command.old_str}` did not appear verbatim "
                            f"in {command.path}.")
        if count > 1:
            raise ToolError(f"No replacement was performed. Multiple occurrences of old_str `{command.old_str}` "
                            f"in {command.path}. Please ensure it is unique")
        res = self._put(ns, name, text.replace(old_str, new_str), command.path)
        return _said(res, f"The memory file {command.path} has been edited.")

    def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        ns, name = _file_path(command.path)
        lines = _text(self._file(ns, name, command.path)).split("\n")
        at = command.insert_line
        if isinstance(at, bool) or not isinstance(at, int) or not 0 <= at <= len(lines):
            raise ToolError(f"Invalid `insert_line` parameter: {at}. It should be within the range "
                            f"[0, {len(lines)}].")
        lines.insert(at, _text_arg(command.insert_text, "insert_text").rstrip("\n"))
        res = self._put(ns, name, "\n".join(lines), command.path)
        return _said(res, f"The file {command.path} has been edited.")

    def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        ns, name = _path(command.path, allow_root=True)
        if name is None and ns == ("memories",):
            raise ToolError("Cannot delete the /memories directory itself")
        if name is not None and self.items.get(ns, name) is not None:
            self._guard(lambda: self.items.delete(ns, name))
            return f"Successfully deleted {command.path}"
        # a directory: every file below it (its namespace and the ones under it)
        files = self._guard(lambda: self.items.list(ns + ((name,) if name else ()), limit=_LIST_LIMIT))
        if not files:
            raise ToolError(f"The path {command.path} does not exist")
        for f in files:
            self._guard(lambda f=f: self.items.delete(f.namespace, f.key))
        return f"Successfully deleted {command.path}"

    def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        old_ns, old_name = _file_path(command.old_path)
        new_ns, new_name = _file_path(command.new_path)
        if self.items.get(new_ns, new_name) is not None or self._guard(
                lambda: self.items.list((*new_ns, new_name), limit=1)):
            raise ToolError(f"The destination {command.new_path} already exists")
        item = self.items.get(old_ns, old_name)
        if item is not None:
            moves = [(item, new_ns, new_name)]
        else:  # a directory: each file keeps its place below the new path
            below = self._guard(lambda: self.items.list((*old_ns, old_name), limit=_LIST_LIMIT))
            if not below:
                raise ToolError(f"The path {command.old_path} does not exist")
            cut = len(old_ns) + 1
            moves = [(f, (*new_ns, new_name, *f.namespace[cut:]), f.key) for f in below]
        for f, ns, name in moves:
            res = self._put(ns, name, _text(f), command.new_path)
            if res.status != "accepted":
                return _said(res, "")
            self._guard(lambda f=f: self.items.delete(f.namespace, f.key))
        return f"Successfully renamed {command.old_path} to {command.new_path}"

    def clear_all_memory(self) -> str:
        """Delete every file under /memories of this session's scope."""
        for f in self._guard(lambda: self.items.list(("memories",), limit=_LIST_LIMIT)):
            self._guard(lambda f=f: self.items.delete(f.namespace, f.key))
        return "All memory cleared"

    # --- helpers -----------------------------------------------------------------------------------------------

    def _file(self, ns: tuple[str, ...], name: str, path: str) -> Item:
        item = self._guard(lambda: self.items.get(ns, name))
        if item is None:
            if self._guard(lambda: self.items.list((*ns, name), limit=1)):
                raise ToolError(f"The path {path} is not a file.")
            raise ToolError(f"The path {path} does not exist. Please provide a valid path.")
        return item

    def _below(self, ns: tuple[str, ...]) -> set[str]:
        """Entries below directory ``ns``: ``name`` for a file, ``dir/`` for a directory, one and two levels."""
        out: set[str] = set()
        for f in self._guard(lambda: self.items.list(ns, limit=_LIST_LIMIT)):
            rest = f.namespace[len(ns):]
            for depth in range(1, len(rest) + 1):
                out.add("/".join(rest[:depth]) + "/")
            out.add("/".join((*rest, f.key)))
        return out

    def _put(self, ns: tuple[str, ...], name: str, text: str, path: str) -> WriteResult:
        try:
            return self.items.put(ns, name, {FIELD: text})
        except ItemRejected as exc:
            why = exc.result.verdict.reason() if exc.result is not None else str(exc)
            raise ToolError(f"Not saved: memwarden's write gate refused the content of {path} ({why}).") from None
        except MemwardenError as exc:
            raise ToolError(f"Not saved: {exc}") from None

    @staticmethod
    def _guard(fn: Any) -> Any:
        try:
            return fn()
        except MemwardenError as exc:
            raise ToolError(str(exc)) from None


def _said(res: WriteResult, done: str) -> str:
    if res.status == "review":
        return (f"Not stored as a memory yet: {res.message}. The file keeps its previous content until then.")
    return done


def _text(item: Item) -> str:
    value = item.value.get(FIELD)
    return value if isinstance(value, str) else str(item.value.get("content", ""))


def _path(path: Any, *, allow_root: bool = False) -> tuple[tuple[str, ...], str | None]:
    """``/memories/a/b/c`` → (("memories", "a", "b"), "c"); ``/memories`` → (("memories",), None)."""
    if not isinstance(path, str) or not path.startswith(ROOT) or path[len(ROOT):len(ROOT) + 1] not in ("", "/"):
        raise ToolError(f"Path must start with {ROOT}, got: {str(path)[:200]}")
    if "\\" in path or any(unicodedata.category(ch).startswith("C") for ch in path):
        raise ToolError(f"Path {path[:200]!r} has a backslash or a control character")
    parts = path[1:].rstrip("/").split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise ToolError(f"Path {path[:200]} has an empty, '.' or '..' segment")
    if len(parts) > MAX_DEPTH + 1:
        raise ToolError(f"Path {path[:200]} is nested more than {MAX_DEPTH} directories deep")
    if len(parts) == 1:
        if not allow_root:
            raise ToolError(f"{ROOT} is a directory, not a file")
        return ("memories",), None
    try:
        return check_namespace(tuple(parts[:-1])), check_key(parts[-1])
    except MemwardenError as exc:
        raise ToolError(f"Path {path[:200]}: {exc}") from None


def _file_path(path: Any) -> tuple[tuple[str, ...], str]:
    """A file's path: no trailing slash (that names a directory), no hidden (dot) names, which view never lists."""
    ns, name = _path(path)
    assert name is not None
    if path.endswith("/"):
        raise ToolError(f"{path[:200]} ends with '/': that names a directory, not a file")
    if any(p.startswith(".") for p in (*ns, name)):
        raise ToolError(f"Path {path[:200]}: names starting with '.' are hidden; memory files cannot use them")
    return ns, name


def _text_arg(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise ToolError(f"{what} must be text, got {type(value).__name__}")
    return value
