"""A scripted, offline stand-in for an OpenAI-compatible and an Anthropic-compatible model server (loopback only).

The examples run against it in CI (no network, no key). It speaks ``POST /v1/chat/completions`` (OpenAI Chat
Completions), ``POST /v1/responses`` (OpenAI Responses) and ``POST /v1/messages`` (Anthropic
Messages), both also streamed, and "decides" from the last user message, the way a real model would be asked to:

* a URL in the message and no ``web_fetch`` result yet → it calls ``web_fetch`` with that URL;
* ``remember: <text>`` and no ``memory_save`` result yet → it calls ``memory_save`` with ``<text>`` (in OpenAI
  strict-mode form: every optional argument sent as null);
* both, with ``in one go`` in the message → both calls in one reply (a parallel tool call);
* otherwise → a final text answer naming the last tool result.

Every request body is kept in :attr:`FakeLLM.requests`, so a test can look at the system prompt a framework sent.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_URL = re.compile(r"https?://\S+")
_REMEMBER = re.compile(r"remember:\s*(.+)", re.IGNORECASE | re.DOTALL)
_SAVE_NULLS = {"kind": "preference", "ttl_days": None, "due": None, "sensitivity": None, "confidence": None}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(b.get("text", "")) for b in content if isinstance(b, dict) and "text" in b)
    return ""


def decide(user_text: str, done: dict[str, str]) -> list[tuple[str, dict[str, Any]]] | str:
    """The script: the next tool calls ``[(name, arguments), …]``, or the final answer text. ``done`` maps the
    tool names already answered since the user's message to their last output."""
    calls: list[tuple[str, dict[str, Any]]] = []
    url = _URL.search(user_text)
    if url and "web_fetch" not in done:
        calls.append(("web_fetch", {"url": url.group(0).rstrip(".,)")}))
    wanted = _REMEMBER.search(user_text)
    if wanted and "memory_save" not in done and (not calls or "in one go" in user_text):
        calls.append(("memory_save", {"content": wanted.group(1).replace("in one go", "").strip(" ."),
                                      **_SAVE_NULLS}))
    if calls:
        return calls
    if done:
        last = list(done)[-1]
        return f"Done. {last} said: {done[last]}"
    return "Hello! Nothing to do."


def _anthropic_events(message: dict[str, Any]) -> list[dict[str, Any]]:
    """A Messages response as the stream of events the API sends for it."""
    events: list[dict[str, Any]] = [{"type": "message_start", "message": {
        **message, "content": [], "stop_reason": None, "usage": {"input_tokens": 1, "output_tokens": 0}}}]
    for i, block in enumerate(message["content"]):
        if block["type"] == "text":
            events += [{"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}},
                       {"type": "content_block_delta", "index": i,
                        "delta": {"type": "text_delta", "text": block["text"]}}]
        else:
            events += [{"type": "content_block_start", "index": i, "content_block": {**block, "input": {}}},
                       {"type": "content_block_delta", "index": i,
                        "delta": {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}}]
        events.append({"type": "content_block_stop", "index": i})
    return [*events, {"type": "message_delta", "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                      "usage": {"output_tokens": 1}}, {"type": "message_stop"}]


class FakeLLM:
    """``with FakeLLM() as llm:`` serves on ``llm.base_url`` (127.0.0.1, a free port) until the block ends."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self._threads: dict[str, list[dict[str, Any]]] = {}  # Anthropic reply id -> the conversation up to it
        self._calls = 0
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _sse(self, events: list[dict[str, Any]]) -> None:
                data = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
                with fake._lock:
                    fake.requests.append({"path": self.path, "body": body})
                    fake._calls += 1
                    n = fake._calls
                path = self.path.split("?", 1)[0]  # the Anthropic beta API adds ?beta=true
                if path.endswith("/chat/completions"):
                    out = fake._chat(body, n)
                elif path.endswith("/responses"):
                    out = fake._responses(body, n)
                    if body.get("stream"):  # server-sent events: created, then completed with the whole response
                        self._sse([{"type": "response.created", "sequence_number": 0,
                                    "response": {**out, "status": "in_progress", "output": []}},
                                   {"type": "response.completed", "sequence_number": 1, "response": out}])
                        return
                elif path.endswith("/messages"):
                    out = fake._anthropic(body, n)
                    if body.get("stream"):
                        self._sse(_anthropic_events(out))
                        return
                else:
                    self.send_error(404)
                    return
                data = json.dumps(out).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakeLLM:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    # --- OpenAI Chat Completions -------------------------------------------------------------------------------

    def _chat(self, body: dict[str, Any], n: int) -> dict[str, Any]:
        messages = body.get("messages") or []
        last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
        names = {}
        for m in messages[last_user + 1:]:
            for c in m.get("tool_calls") or ():
                names[c.get("id")] = c["function"]["name"]
        done = {names.get(m.get("tool_call_id"), "tool"): _text(m.get("content"))[:300]
                for m in messages[last_user + 1:] if m.get("role") == "tool"}
        step = decide(_text(messages[last_user].get("content")) if last_user >= 0 else "", done)
        if isinstance(step, str):
            message: dict[str, Any] = {"role": "assistant", "content": step}
            finish = "stop"
        else:
            message = {"role": "assistant", "content": None, "tool_calls": [{
                "id": f"call_{n}_{i}", "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)}} for i, (name, args) in enumerate(step)]}
            finish = "tool_calls"
        return {"id": f"chatcmpl-{n}", "object": "chat.completion", "created": 0, "model": body.get("model", "fake"),
                "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}

    # --- OpenAI Responses --------------------------------------------------------------------------------------

    def _responses(self, body: dict[str, Any], n: int) -> dict[str, Any]:
        items = body.get("input") or []
        if isinstance(items, str):
            items = [{"role": "user", "content": items}]
        last_user = max((i for i, it in enumerate(items) if it.get("role") == "user"), default=-1)
        names = {it.get("call_id"): it.get("name") for it in items[last_user + 1:]
                 if it.get("type") == "function_call"}
        done = {str(names.get(it.get("call_id"), "tool")): _text(it.get("output"))[:300]
                for it in items[last_user + 1:] if it.get("type") == "function_call_output"}
        step = decide(_text(items[last_user].get("content")) if last_user >= 0 else "", done)
        if isinstance(step, str):
            output: list[dict[str, Any]] = [{"type": "message", "id": f"msg_{n}", "role": "assistant",
                                             "status": "completed",
                                             "content": [{"type": "output_text", "text": step, "annotations": []}]}]
        else:
            output = [{"type": "function_call", "id": f"fc_{n}_{i}", "call_id": f"call_{n}_{i}", "name": name,
                       "arguments": json.dumps(args), "status": "completed"} for i, (name, args) in enumerate(step)]
        return {"id": f"resp_{n}", "object": "response", "created_at": 0, "model": body.get("model", "fake"),
                "output": output, "status": "completed", "parallel_tool_calls": True, "tool_choice": "auto",
                "tools": [], "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2,
                                       "input_tokens_details": {"cached_tokens": 0},
                                       "output_tokens_details": {"reasoning_tokens": 0}}}

    # --- Anthropic Messages ------------------------------------------------------------------------------------

    def _anthropic(self, body: dict[str, Any], n: int) -> dict[str, Any]:
        # message threads (newer SDKs): a turn that continues a thread sends only its new messages after the
        # stored reply it names; keep each reply's whole conversation to put the history back in front
        thread = body.get("thread") if isinstance(body.get("thread"), dict) else {}
        earlier = self._threads.get(str(thread.get("previous_message_id")), []) if thread.get("type") == "continue" \
            else []
        messages = [*earlier, *(body.get("messages") or [])]

        def is_results(m: dict[str, Any]) -> bool:
            c = m.get("content")
            return isinstance(c, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in c)

        last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user" and not is_results(m)),
                        default=-1)
        names: dict[str, str] = {}
        done: dict[str, str] = {}
        for m in messages[last_user + 1:]:
            for b in m.get("content") if isinstance(m.get("content"), list) else ():
                if b.get("type") == "tool_use":
                    names[b["id"]] = b["name"]
                elif b.get("type") == "tool_result":
                    done[names.get(b.get("tool_use_id"), "tool")] = _text(b.get("content"))[:300]
        step = decide(_text(messages[last_user].get("content")) if last_user >= 0 else "", done)
        if isinstance(step, str):
            content: list[dict[str, Any]] = [{"type": "text", "text": step}]
            stop = "end_turn"
        else:
            content = [{"type": "tool_use", "id": f"toolu_{n}_{i}", "name": name,  # no strict mode: no nulls
                        "input": {k: v for k, v in args.items() if v is not None}}
                       for i, (name, args) in enumerate(step)]
            stop = "tool_use"
        with self._lock:
            self._threads[f"msg_{n}"] = [*messages, {"role": "assistant", "content": content}]
        return {"id": f"msg_{n}", "type": "message", "role": "assistant", "model": body.get("model", "fake"),
                "content": content, "stop_reason": stop, "stop_sequence": None,
                "usage": {"input_tokens": 1, "output_tokens": 1}}
