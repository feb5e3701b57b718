"""Conversation turns as episodes (SPEC R2, G8, T1): the shapes applications already hold, read into plain parts.

``Session.record_turns(messages)`` takes the message lists of the common chat APIs as they are:

* ``{"role": "user" | "assistant" | "tool", "content": "…"}`` (every API);
* ``content`` as a list of blocks: ``{"type": "text", "text": …}`` (OpenAI, Anthropic), ``{"type": "tool_use",
  "name": …, "input": …}`` (an Anthropic assistant's tool call), ``{"type": "tool_result", "content": …}`` (a
  tool's output, which Anthropic sends in a user message);
* an OpenAI assistant message's ``tool_calls`` (``{"function": {"name", "arguments"}}``), and ``role: "tool"`` /
  ``"function"`` messages for what the tools returned.

:func:`read_turns` validates the whole list before anything is stored (a bad message is named by its index and
nothing is written), and returns the parts in order: text spoken by a role, or a tool call to put in the taint
ledger. System and developer messages are the application's own instructions, not conversation: they are skipped
and reported. Images and other non-text blocks are skipped and reported too. A text longer than the record size
limit is cut into parts at paragraph, line or sentence ends (:func:`split_text`), so a long turn is kept whole,
never refused for its size.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from memwarden.errors import InvalidInput

ROLES = {"user": "user", "assistant": "model", "tool": "tool", "function": "tool"}
SKIPPED_ROLES = frozenset({"system", "developer"})
MAX_TURNS = 10_000  # messages per call


@dataclass(frozen=True, slots=True)
class TextPart:
    index: int  # the message's position in the list
    role: str  # user | assistant | tool
    text: str
    name: str | None = None  # the tool's name, for tool output


@dataclass(frozen=True, slots=True)
class ToolCall:
    index: int
    name: str
    arguments: Any


@dataclass(slots=True)
class Turns:
    parts: list[TextPart | ToolCall] = field(default_factory=list)
    skipped: list[tuple[int, str]] = field(default_factory=list)  # (message index, why)


def _field(msg: Any, key: str) -> Any:
    if isinstance(msg, Mapping):
        return msg.get(key)
    return getattr(msg, key, None)


def _blocks(index: int, role: str, content: Any, out: Turns, name: str | None) -> None:
    if content is None:
        return
    if isinstance(content, str):
        if content.strip():
            out.parts.append(TextPart(index, role, content, name))
        return
    if not isinstance(content, (list, tuple)):
        raise InvalidInput(f"message {index}: content must be text or a list of content blocks, "
                           f"got {type(content).__name__}")
    for block in content:
        kind = _field(block, "type")
        if isinstance(block, str):
            _blocks(index, role, block, out, name)
        elif kind in ("text", "input_text", "output_text"):
            text = _field(block, "text")
            if not isinstance(text, str):
                raise InvalidInput(f"message {index}: a text block needs a string 'text'")
            _blocks(index, role, text, out, name)
        elif kind == "tool_use":
            tool = _field(block, "name")
            if not isinstance(tool, str) or not tool:
                raise InvalidInput(f"message {index}: a tool_use block needs a 'name'")
            out.parts.append(ToolCall(index, tool, _field(block, "input")))
        elif kind == "tool_result":
            _blocks(index, "tool", _field(block, "content"), out, _field(block, "name") or name)
        elif isinstance(kind, str):
            out.skipped.append((index, f"{kind} block (not text)"))
        else:
            raise InvalidInput(f"message {index}: content blocks need a 'type'")


def read_turns(messages: Iterable[Any]) -> Turns:
    """Validate ``messages`` and return their parts in order (see the module docstring)."""
    if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Iterable):
        raise InvalidInput("record_turns takes a list of messages, e.g. [{'role': 'user', 'content': '…'}]")
    out = Turns()
    for index, msg in enumerate(messages):
        if index >= MAX_TURNS:
            raise InvalidInput(f"record_turns takes at most {MAX_TURNS:,} messages per call")
        role = _field(msg, "role")
        if not isinstance(role, str):
            raise InvalidInput(f"message {index}: needs a 'role' (user, assistant or tool)")
        if role in SKIPPED_ROLES:
            out.skipped.append((index, f"{role} message (the application's instructions, not conversation)"))
            continue
        if role not in ROLES:
            raise InvalidInput(f"message {index}: role {role[:40]!r} is not one of user, assistant, tool "
                               "(system and developer messages are skipped)")
        norm = "tool" if role == "function" else role
        name = _field(msg, "name")
        before = len(out.parts) + len(out.skipped)
        _blocks(index, norm, _field(msg, "content"), out, name if isinstance(name, str) else None)
        for call in _field(msg, "tool_calls") or ():
            fn = _field(call, "function") or call
            tool, args = _field(fn, "name"), _field(fn, "arguments")
            if not isinstance(tool, str) or not tool:
                raise InvalidInput(f"message {index}: a tool call needs a function name")
            # JSON text is passed on as it is: the ledger parses it, and taints on text it cannot judge —
            # unparseable, too deep, or naming a key twice (T1)
            out.parts.append(ToolCall(index, tool, args))
        if len(out.parts) + len(out.skipped) == before:  # nothing stored and nothing said: say it (never silent)
            out.skipped.append((index, f"{norm} message without text or tool calls (nothing to store)"))
    return out


_BREAKS = (re.compile(r"\n\s*\n"), re.compile(r"\n"), re.compile(r"(?<=[.!?。！？])\s+"), re.compile(r"\s+"))


def split_text(text: str, max_bytes: int) -> list[str]:
    """``text`` in parts of at most ``max_bytes`` UTF-8 bytes, cut at the latest paragraph break, else line break,
    else sentence end, else space, else character boundary that fits."""
    if len(text.encode("utf-8")) <= max_bytes:
        return [text]
    parts: list[str] = []
    rest = text
    while len(rest.encode("utf-8")) > max_bytes:
        window = rest.encode("utf-8")[:max_bytes].decode("utf-8", "ignore")
        cut = 0
        for rx in _BREAKS:
            ends = [m.end() for m in rx.finditer(window) if m.start() > len(window) // 3]
            if ends:
                cut = ends[-1]
                break
        if cut <= 0:
            cut = len(window)
        piece = rest[:cut].rstrip()
        if piece:
            parts.append(piece)
        rest = rest[cut:].lstrip()
    if rest.strip():
        parts.append(rest)
    return parts
