"""A model behind an OpenAI-compatible Chat Completions endpoint, as the ``llm`` of fact extraction (T4).

``ChatCompletionsLLM(base_url, model)`` is a callable ``prompt -> text``: it POSTs one user message to
``{base_url}/chat/completions`` and returns the first choice's text. Any server that speaks that API works (OpenAI,
a local vLLM / llama.cpp / Ollama server, a gateway). Use it with :class:`memwarden.extract.Extractor`::

    extractor = Extractor(ChatCompletionsLLM.from_env(), name="gpt")
    session.extract_facts(extractor, turns)  # still off unless Policy(extract_facts=True), trusted sessions only

Where the endpoint comes from: the caller's arguments or the process environment (``MEMWARDEN_EXTRACTOR_URL``,
``MEMWARDEN_EXTRACTOR_MODEL``, ``MEMWARDEN_EXTRACTOR_API_KEY`` or ``OPENAI_API_KEY``) — never the database, so
whoever can edit the store cannot send conversations anywhere (I4). The key is sent only as the bearer token of
that endpoint and is never stored or logged.

Written with ``urllib`` rather than the ``openai`` SDK so the core keeps no HTTP dependency (the embeddings client
does the same); the answer is bounded (``max_response_bytes``) and every failure is an :class:`LLMError`, which the
extraction reports instead of raising into the agent loop.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from urllib.parse import urlsplit

URL_ENV, MODEL_ENV, KEY_ENV = "MEMWARDEN_EXTRACTOR_URL", "MEMWARDEN_EXTRACTOR_MODEL", "MEMWARDEN_EXTRACTOR_API_KEY"


class LLMError(RuntimeError):
    """The endpoint could not be reached, refused the request, or answered something that is not a completion."""


class ChatCompletionsLLM:
    """``llm(prompt) -> str`` over an OpenAI-compatible ``/chat/completions`` endpoint (see the module docstring).
    ``temperature`` 0 by default: extraction should be repeatable."""

    def __init__(self, base_url: str, model: str, *, api_key: str | None = None, timeout: float = 30.0,
                 max_tokens: int = 1024, temperature: float = 0.0, max_response_bytes: int = 1 << 20) -> None:
        parts = urlsplit(base_url.strip() if isinstance(base_url, str) else "")
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"base_url must be an http(s) URL such as https://api.openai.com/v1; got "
                             f"{str(base_url)[:100]!r}")
        if not isinstance(model, str) or not model.strip():
            raise ValueError("name the model the endpoint should run (model=...)")
        if not (isinstance(timeout, (int, float)) and 0 < timeout <= 600):
            raise ValueError("timeout is a number of seconds from 0 to 600")
        self.base_url = base_url.strip().rstrip("/")
        self.model = model.strip()
        self.timeout = float(timeout)
        self.max_tokens = int(max_tokens)
        self.temperature = float(temperature)
        self.max_response_bytes = int(max_response_bytes)
        self._key = api_key

    @classmethod
    def from_env(cls, **kwargs: object) -> ChatCompletionsLLM:
        """From ``$MEMWARDEN_EXTRACTOR_URL`` and ``$MEMWARDEN_EXTRACTOR_MODEL`` (the key from
        ``$MEMWARDEN_EXTRACTOR_API_KEY`` or ``$OPENAI_API_KEY``)."""
        url, model = os.environ.get(URL_ENV), os.environ.get(MODEL_ENV)
        if not url or not model:
            raise ValueError(f"set {URL_ENV} (e.g. https://api.openai.com/v1) and {MODEL_ENV} to use a model for "
                             "fact extraction")
        return cls(url, model, **kwargs)  # type: ignore[arg-type]

    def __repr__(self) -> str:
        return f"ChatCompletionsLLM({self.base_url!r}, {self.model!r})"  # never the key

    def __call__(self, prompt: str) -> str:
        key = self._key or os.environ.get(KEY_ENV) or os.environ.get("OPENAI_API_KEY")
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        body = json.dumps({"model": self.model, "messages": [{"role": "user", "content": prompt}],
                           "temperature": self.temperature, "max_tokens": self.max_tokens}).encode()
        req = urllib.request.Request(f"{self.base_url}/chat/completions", data=body, headers=headers,
                                     method="POST")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                raw = resp.read(self.max_response_bytes + 1)
        except urllib.error.HTTPError as exc:
            raise LLMError(f"{self.base_url} answered HTTP {exc.code}") from None
        except (OSError, ValueError) as exc:
            raise LLMError(f"{self.base_url} could not be reached: {exc}") from None
        if len(raw) > self.max_response_bytes:
            raise LLMError(f"{self.base_url} answered more than {self.max_response_bytes} bytes")
        try:
            text = json.loads(raw)["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise LLMError(f"{self.base_url} did not answer a chat completion") from None
        if not isinstance(text, str):
            raise LLMError(f"{self.base_url} answered a completion without text")
        return text
