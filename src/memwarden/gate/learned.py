"""The learned layer of the write gate (issue 11, item 5): a small linear model over hashed character n-grams.

Rules are precise where someone wrote them and blind everywhere else: a paraphrase, a language nobody wrote a
pattern for, a directive in an unusual register. This layer scores how much a candidate reads like an
instruction aimed at an AI model rather than a memory, in any script, from character n-grams (1–5 characters
of the de-obfuscated, case-folded text; digits read as ``0``), hashed into ``2**BITS`` buckets. Its call is never
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
from dataclasses import dataclass
from importlib import resources

import numpy as np

BITS = 18
NGRAMS = (1, 2, 3, 4, 5)
CHUNK = 320  # characters per scored chunk at most
_P = np.uint64(1_000_003)
_SALTS = {n: np.uint64(0x9E3779B97F4A7C15 * (n + 1) & 0xFFFFFFFFFFFFFFFF) for n in NGRAMS}
_SHIFT = np.uint64(64 - BITS)
_P_INV = np.uint64(pow(1_000_003, -1, 1 << 64))
_WORD_SALT, _PAIR_SALT = np.uint64(0x2545F4914F6CDD1D), np.uint64(0x94D049BB133111EB)
_DIGITS = re.compile(r"\d")
_BREAK = re.compile(r"[.!?。！？؟।\n;]+\s*")
MODEL_FILE = "injection_model.npz"


_URL = re.compile(r"(?:https?|ftp|file|wss?)://\S{1,500}|\bwww\.\S{1,500}")
_EMAIL = re.compile(r"[\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63})+")
_HOST = re.compile(r"\b[\w-]{1,63}(?:\.[\w-]{1,63})*\.(?:com|net|org|io|dev|app|cloud|cc|cn|ru|xyz|shop|site|top|co|me|"
                   r"ly|biz|info|sh|tech|link|live|online|store|ai|gg|tv|us|uk|de|fr|jp|example)\b")
MIN_FEATURES = 24  # a chunk with fewer distinct features says too little to score
_BLOB = re.compile(r"[A-Za-z0-9+/=_-]{24,}")
_RUN = re.compile(r"(.)\1{3,}")


def prepare(text: str) -> str:
    """The text the model reads: already normalised by the gate; URLs, e-mail addresses and host names read as
    ``url``/``email``/``host`` (what an address is matters, its name is noise the model would learn as a
    shortcut), long blobs removed (decoding them is the encodings layer's job), runs of one character cut to
    three, digits folded to ``0``; padded with spaces."""
    text = _URL.sub(" url ", text)
    text = _EMAIL.sub(" email ", text)
    text = _HOST.sub(" host ", text)
    text = _BLOB.sub(" ", text)
    text = _RUN.sub(r"\1\1\1", text)
    return " " + _DIGITS.sub("0", text) + " "


def ngram_buckets(prepared: str) -> tuple[np.ndarray, np.ndarray]:
    """(bucket per feature, start position per feature) of a :func:`prepare`-d text: character n-grams for every
    n in ``NGRAMS``, and word unigrams and bigrams (words: runs between spaces)."""
    cps = np.frombuffer(prepared.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    buckets: list[np.ndarray] = []
    starts: list[np.ndarray] = []
    length = len(cps)
    mix = np.uint64(0xBF58476D1CE4E5B9)
    with np.errstate(over="ignore"):
        for n in NGRAMS:
            if length < n:
                continue
            h = np.zeros(length - n + 1, dtype=np.uint64)
            for k in range(n):
                h = h * _P + cps[k:length - n + 1 + k]
            buckets.append(((h + _SALTS[n]) * mix) >> _SHIFT)
            starts.append(np.arange(length - n + 1, dtype=np.int64))
        spaces = np.flatnonzero(cps == 32)
        if len(spaces) >= 2:
            # hash(cps[a:b]) = (S[b] - S[a]) * P**-a with S the prefix sums of cps[i] * P**i: P is odd, so it has
            # an inverse modulo 2**64 and every word hashes independently of where it stands
            ones = np.ones(length, dtype=np.uint64)
            pw = np.cumprod(np.concatenate(([np.uint64(1)], ones[:-1] * _P)))
            inv = np.cumprod(np.concatenate(([np.uint64(1)], ones[:-1] * _P_INV)))
            pref = np.concatenate(([np.uint64(0)], np.cumsum(cps * pw, dtype=np.uint64)))
            a, b = spaces[:-1] + 1, spaces[1:]
            keep = b > a
            a, b = a[keep], b[keep]
            if len(a):
                words = (pref[b] - pref[a]) * inv[a]
                buckets.append(((words + _WORD_SALT) * mix) >> _SHIFT)
                starts.append(a.astype(np.int64))
                if len(a) >= 2:
                    pairs = (pref[b[1:]] - pref[a[:-1]]) * inv[a[:-1]]
                    buckets.append(((pairs + _PAIR_SALT) * mix) >> _SHIFT)
                    starts.append(a[:-1].astype(np.int64))
    if not buckets:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate(buckets).astype(np.int64), np.concatenate(starts)


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


@dataclass(frozen=True, slots=True)
class Model:
    weights: np.ndarray  # float32, 2**BITS
    bias: float
    threshold: float  # score above which a candidate is held for review
    version: str

    def score(self, text: str) -> float:
        """Probability-like score (logistic) of the most instruction-like chunk of ``text``."""
        prepared = prepare(text)
        buckets, starts = ngram_buckets(prepared)
        if not len(buckets):
            return 0.0
        # each distinct feature counts once, where it first occurs (repeating a phrase does not raise the score)
        _, first = np.unique(buckets, return_index=True)
        buckets, starts = buckets[first], starts[first]
        contrib = self.weights[buckets]
        order = np.argsort(starts, kind="stable")
        pos = starts[order]
        csum = np.concatenate(([0.0], np.cumsum(contrib[order], dtype=np.float64)))
        best = -np.inf
        for a, b in chunk_bounds(prepared):
            lo = int(np.searchsorted(pos, a, "left"))
            hi = int(np.searchsorted(pos, b, "left"))
            if hi - lo < MIN_FEATURES:
                continue
            z = (csum[hi] - csum[lo]) / np.sqrt(hi - lo) + self.bias
            best = max(best, z)
        return float(1.0 / (1.0 + np.exp(-best))) if best != -np.inf else 0.0


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
