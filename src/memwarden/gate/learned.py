"""The learned layer of the write gate (issue 11, item 5): a small linear model over hashed character n-grams.

Rules are precise where someone wrote them and blind everywhere else: a paraphrase, a language nobody wrote a
pattern for, a directive in an unusual register. This layer scores how much a candidate reads like an
instruction aimed at an AI model rather than a memory, in any script, from character n-grams (1–5 characters
of the de-obfuscated, case-folded text; digits read as ``0``; addresses as ``url``/``email``/``host``), hashed
into ``2**BITS`` buckets. Its call is never
a rejection on its own: above the model's threshold the candidate is ``review`` on the strict tiers (held for an
operator, G6), and the episode tier does not run it at all (:mod:`.tiers`).

Scoring is per chunk, so an instruction buried in a long benign note is not diluted by it: the text is cut into
sentence-sized chunks (at most ``CHUNK`` characters), each chunk's n-gram weights are summed with cumulative sums
and divided by the square root of its n-gram count, and the candidate's score is the highest chunk's. Everything is
numpy on one array of code points: a 10 KB candidate scores in well under a millisecond.

Why not a library: the layer must be pure numpy at inference (no scikit-learn, no model runtime), so hashing and
scoring are written here; :mod:`training/train_gate_model.py <training.train_gate_model>` trains it with the
same feature function. The shipped weights are package data (``gate/data/injection_model.npz``), trained only on
text the project may redistribute; ``docs/gate.md`` lists the data and the command.
"""

from __future__ import annotations

import functools
import re
import threading
from dataclasses import dataclass
from importlib import resources

import numpy as np

BITS = 18
NGRAMS = (1, 2, 3, 4, 5)
CHUNK = 320  # characters per scored chunk at most
_P = np.uint64(1_000_003)
_SALTS = {n: np.uint64(0x9E3779B97F4A7C15 * (n + 1) & 0xFFFFFFFFFFFFFFFF) for n in NGRAMS}
_SALT_COL = np.array([_SALTS.get(n, np.uint64(0)) for n in range(1, max(NGRAMS) + 1)],
                     dtype=np.uint64).reshape(-1, 1)
_SHIFT = np.uint64(64 - BITS)
_DIGITS = re.compile(r"\d")
_BREAK = re.compile(r"[.!?。！？؟।\n;]+\s*")
MODEL_FILE = "injection_model.npz"


_URL = re.compile(r"(?:https?|ftp|file|wss?)://\S{1,500}|\bwww\.\S{1,500}")
_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63}){0,6}")
_TLD = re.compile(r"\.(?:com|net|org|io|dev|app|cloud|cc|cn|ru|xyz|shop|site|top|co|me|ly|biz|info|sh|tech|link|live|"
                  r"online|store|ai|gg|tv|us|uk|de|fr|jp|example)\b")
_HOST_RUN = re.compile(r"[\w.-]{1,200}")  # matched on the reversed text: a host name's run, leftwards
_BLOB = re.compile(r"[A-Za-z0-9+/=_-]{24,}")
_RUN = re.compile(r"(.)\1{3,}")
MIN_FEATURES = 24  # a chunk with fewer distinct features says too little to score


def _hosts(text: str) -> str:
    """Host names ("pkgs.example.io") read as ``host``: found from their top-level domain, leftwards."""
    out: list[str] = []
    pos = 0
    rev = ""
    for m in _TLD.finditer(text):
        if m.start() < pos:
            continue
        if not rev:
            rev = text[::-1]
        a = _host_start(text, rev, max(pos, m.start() - 200), m.start())
        if a == m.start():
            continue
        out.append(text[pos:a])
        out.append(" host ")
        pos = m.end()
    out.append(text[pos:])
    return "".join(out)


def _host_start(text: str, rev: str, lo: int, end: int) -> int:
    """Where ``re.compile(r"[\\w.-]{1,200}$").search(text, lo, end)`` starts (``end`` when it does not match), in
    time linear in the run instead of trying every start of the window: that search finds the leftmost ``a`` in
    ``[lo, end)`` from which the text up to ``end`` is all ``[\\w.-]``, or up to a newline at ``end - 1`` (``$``
    also matches before a final newline), which is the longest such run ending there, matched greedily on the
    reversed text ``rev``. The window is at most 200 characters long, so the bound of the repeat never binds."""
    last = end - 1 if end > lo and text[end - 1] == "\n" else end
    size = len(text)
    run = _HOST_RUN.match(rev, size - last, size - lo)
    return last - (run.end() - run.start()) if run is not None else end


def prepare(text: str) -> str:
    """The text the model reads: already normalised by the gate; URLs, e-mail addresses and host names read as
    ``url``/``email``/``host`` (what an address is matters, its name is noise the model would learn as a
    shortcut), long blobs removed (decoding them is the encodings layer's job), runs of one character cut to
    three, digits folded to ``0``; padded with spaces. Each replacement runs only when its marker is present."""
    if "://" in text or "www." in text:
        text = _URL.sub(" url ", text)
    if "@" in text:
        text = _EMAIL.sub(" email ", text)
    if "." in text:
        text = _hosts(text)
    text = _BLOB.sub(" ", text)
    text = _RUN.sub(r"\1\1\1", text)
    return " " + _DIGITS.sub("0", text) + " "


def ngram_buckets(prepared: str) -> tuple[np.ndarray, np.ndarray]:
    """(bucket per feature, start position per feature) of a :func:`prepare`-d text, all groups together."""
    groups = ngram_groups(prepared)
    if not groups:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate([b for b, _ in groups]), np.concatenate([s for _, s in groups])


def ngram_matrix(prepared: str) -> np.ndarray:
    """Bucket of the character n-gram starting at each position of a :func:`prepare`-d text, one row per n of
    ``NGRAMS`` (row n-1 for n; its last n-1 cells run past the end and hold no n-gram). All n at once on one
    (n × length) matrix of code points: a handful of numpy operations whatever the length (integer arithmetic
    wraps modulo 2**64 by design)."""
    cps = np.frombuffer(prepared.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    length = len(cps)
    top = max(NGRAMS)
    padded = np.concatenate((cps, np.zeros(top - 1, dtype=np.uint64)))
    hashes = np.empty((top, length), dtype=np.uint64)
    h = hashes[0] = cps
    for k in range(1, top):  # Horner: h_(k+1)[i] = h_k[i] * P + cps[i + k]
        h = hashes[k] = h * _P + padded[k:k + length]
    return (((hashes + _SALT_COL) * _MIX) >> _SHIFT).astype(np.int64)


def ngram_groups(prepared: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per n in ``NGRAMS``, (bucket per character n-gram, start position per n-gram) of a :func:`prepare`-d text,
    in position order."""
    if not prepared:
        return []
    buckets = ngram_matrix(prepared)
    length = buckets.shape[1]
    out = []
    for n in NGRAMS:
        count = length - n + 1
        if count > 0:
            out.append((buckets[n - 1, :count], _positions(count)))
    return out


def _positions(count: int) -> np.ndarray:
    return _ARANGE[:count] if count <= len(_ARANGE) else np.arange(count, dtype=np.int64)


def chunk_bounds(prepared: str) -> list[tuple[int, int]]:
    """Sentence-sized chunks of a :func:`prepare`-d text as (start, end) offsets; long sentences are cut at
    ``CHUNK``, short ones are merged until they have 40 characters."""
    padded_len = len(prepared)
    cuts = [0] + [m.end() for m in _BREAK.finditer(prepared)] + [padded_len]
    out: list[tuple[int, int]] = []
    a = 0
    for b in cuts[1:]:
        if b - a < 40 and b != padded_len:
            continue
        while b - a > CHUNK:
            out.append((a, a + CHUNK))
            a += CHUNK // 2  # overlapping halves: an instruction across a cut is still inside one chunk
        if b > a:
            out.append((a, b))
        a = b
    return out or [(0, padded_len)]


_LOCAL = threading.local()
_MIX = np.uint64(0xBF58476D1CE4E5B9)
_ARANGE = np.arange(1 << 16, dtype=np.int64)
def _scratch() -> np.ndarray:
    """A per-thread array of one int32 per bucket, reused between calls (a fresh 1 MB array per call would cost
    a page fault per touched page; its old contents never matter, every read slot is written first)."""
    buf = getattr(_LOCAL, "buf", None)
    if buf is None:
        buf = _LOCAL.buf = np.zeros(1 << BITS, dtype=np.int32)
    return buf


@dataclass(frozen=True, slots=True)
class Model:
    weights: np.ndarray  # float32, 2**BITS
    bias: float
    threshold: float  # score above which a candidate is held for review
    version: str

    def score(self, text: str) -> float:
        """Probability-like score (logistic) of the most instruction-like chunk of ``text``."""
        prepared = prepare(text)
        if len(prepared) <= CHUNK:  # one chunk: the sum of its distinct features' weights
            groups = ngram_groups(prepared)
            if not groups:
                return 0.0
            allb = np.concatenate([b for b, _ in groups])
            order = _positions(len(allb)).astype(np.int32)
            first = _scratch()
            first[allb] = order  # the last write wins: one index per distinct bucket
            distinct = allb[first[allb] == order]
            if len(distinct) < MIN_FEATURES:
                return 0.0
            z = float(self.weights[distinct].sum()) / float(np.sqrt(len(distinct))) + self.bias
            return float(1.0 / (1.0 + np.exp(-z)))
        return self._score_chunks(prepared)

    def _score_chunks(self, prepared: str) -> float:
        """:meth:`score` of a text longer than one chunk, on the (n × position) matrix of n-gram buckets at once:
        each distinct feature counts once, where it first occurs (repeating a phrase does not raise the score),
        and a chunk's sum is a difference of one cumulative sum over positions (an n-gram belongs to the chunk it
        starts in)."""
        matrix = ngram_matrix(prepared)
        top, length = matrix.shape
        valid = np.arange(length) <= length - _NS[:, None]
        flat = matrix[valid]  # row-major: all 1-grams in position order, then all 2-grams, … (ngram_groups' order)
        order = np.arange(len(flat), dtype=np.int32)
        first = _scratch()
        first[flat[::-1]] = order[::-1]  # written in reverse, every bucket ends up holding its first occurrence
        keep = np.zeros((top, length), dtype=bool)
        keep[valid] = first[flat] == order
        per_pos = np.where(keep, self.weights[matrix], np.float32(0.0)).sum(axis=0, dtype=np.float64)
        cs = np.concatenate(([0.0], np.cumsum(per_pos)))
        cn = np.concatenate(([0], np.cumsum(keep.sum(axis=0))))
        bounds = np.minimum(np.asarray(chunk_bounds(prepared), dtype=np.int64), length)
        sums = cs[bounds[:, 1]] - cs[bounds[:, 0]]
        counts = cn[bounds[:, 1]] - cn[bounds[:, 0]]
        ok = counts >= MIN_FEATURES
        if not ok.any():
            return 0.0
        z = float(np.max(sums[ok] / np.sqrt(counts[ok]))) + self.bias
        return float(1.0 / (1.0 + np.exp(-z)))


_NS = np.array(NGRAMS, dtype=np.int64)
assert tuple(range(1, max(NGRAMS) + 1)) == NGRAMS, "the n-gram matrix has one row per n from 1"


def doc_features(chunk: str) -> tuple[np.ndarray, np.ndarray]:
    """Training form of one chunk of a :func:`prepare`-d text: its distinct buckets, each valued
    1/sqrt(number of distinct buckets) (the normalisation :meth:`Model.score` applies to a chunk)."""
    buckets, _ = ngram_buckets(" " + chunk.strip() + " ")
    uniq = np.unique(buckets)
    return uniq, np.full(len(uniq), 1.0 / np.sqrt(max(len(uniq), 1)), dtype=np.float32)


@functools.cache
def load() -> Model | None:
    """The shipped model, or None when the package was built without it (the layer is then skipped)."""
    try:
        ref = resources.files("memwarden.gate").joinpath("data", MODEL_FILE)
        with resources.as_file(ref) as path, np.load(path, allow_pickle=False) as z:
            weights = z["weights"].astype(np.float32)
            if weights.shape != (1 << BITS,):
                return None
            return Model(weights, float(z["bias"]), float(z["threshold"]), str(z["version"]))
    except (FileNotFoundError, OSError, KeyError, ValueError):
        return None
