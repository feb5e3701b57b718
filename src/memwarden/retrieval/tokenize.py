"""Terms for the lexical index: the same function turns stored text and queries into terms (issue 5, Q1).

``terms(text)``: NFKC + case folding, accents stripped, split into letter/digit runs (so ``billing-api``,
``snake_case``, ``a.b/c`` and ``camelCase`` identifiers become their words), English stop words dropped, each
word stemmed with the Snowball English stemmer (plurals and inflections meet: ``researching`` → ``research``).
Stems are memoised, so a save costs a dictionary lookup per word once the vocabulary is warm.

The index never stores words: :class:`TermHasher` turns each term into a keyed hash (BLAKE2b keyed with a key
derived from the store's signing key) prefixed with the record's *scope tag* (a keyed hash of
tenant/user/agent). So (1) one scope's terms are their own FTS5 entries: a search reads only its scope's postings
(at 1M records, a common word of other tenants costs nothing) and document frequencies are per scope; and (2)
the FTS5 shadow tables hold no plaintext: the terms a deleted record leaves in index segments until the next
merge are unreadable without the key (D3). The tag is not a security boundary (scope is still filtered in SQL,
S3); it partitions the index.
"""

from __future__ import annotations

import base64
import hashlib
import re
import unicodedata
from collections.abc import Iterable

import snowballstemmer  # type: ignore[import-untyped]

TOKENIZER_VERSION = "mw-terms-4"  # bump when terms() or the indexed text changes: the FTS index is rebuilt on open
MAX_QUERY_TERMS = 32
TAG_LEN = 8  # base32 characters of the scope tag (40 bits)
TERM_LEN = 13  # base32 characters of a hashed term (65 bits)

# English function words: they match most turns and decide nothing (LoCoMo: recall@5 0.49 -> 0.55 without).
STOPWORDS = frozenset("""
a about above after again against all am an and any are aren arent as at be because been before being below
between both but by can cannot could couldn couldnt d did didn didnt do does doesn doesnt doing don dont down
during each few for from further had hadn hadnt has hasn hasnt have haven havent having he hed hell her here
heres hers herself hes him himself his how hows i id if ill im in into is isn isnt it its itself ive just ll
let lets m me more most mustn mustnt my myself no nor not now of off on once only or other ought our ours
ourselves out over own re s same shan shant she shed shell shes should shouldn shouldnt so some such t than
that thats the their theirs them themselves then there theres these they theyd theyll theyre theyve this those
through to too under until up ve very was wasn wasnt we wed well were weren werent weve what whats when whens
where wheres which while who whom whos why whys will with won wont would wouldn wouldnt y you youd youll your
youre yours yourself yourselves youve
""".split())

_RUN = re.compile(r"[^\W_]+")  # letters and digits; underscores, hyphens, dots, slashes separate words
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+|[^\W\d_]+")
_STEMMER = snowballstemmer.stemmer("english")
_STEMS: dict[str, str] = {}
_MAX_MEMO = 200_000


def _fold(word: str) -> str:
    if word.isascii():
        return word.lower()
    decomposed = unicodedata.normalize("NFKD", word.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def _stem(word: str) -> str:
    s = _STEMS.get(word)
    if s is None:
        if len(_STEMS) >= _MAX_MEMO:
            _STEMS.clear()
        s = _STEMS[word] = _STEMMER.stemWord(word) if word.isascii() and word.isalpha() else word
    return s


def _words(text: str) -> Iterable[str]:
    for run in _RUN.findall(text):
        if run.islower() or run.isdigit() or not run.isascii():
            yield run
        else:  # camelCase, HTTPServer, v2Api: split where the case or digits change
            yield from _CAMEL.findall(run)


_RAW: dict[str, tuple[str, ...]] = {}  # raw letter/digit run -> its terms without stop words (memoised)


def _run_terms(run: str) -> tuple[str, ...]:
    got = _RAW.get(run)
    if got is None:
        if len(_RAW) >= _MAX_MEMO:
            _RAW.clear()
        parts = [run] if run.islower() or run.isdigit() or not run.isascii() else _CAMEL.findall(run)
        got = _RAW[run] = tuple(_stem(f) for f in map(_fold, parts) if f and f not in STOPWORDS)
    return got


def terms(text: str, *, keep_stopwords: bool = False) -> list[str]:
    """Stemmed terms of ``text`` in order (duplicates kept: they are term frequency)."""
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)
    if keep_stopwords:
        return [_stem(f) for f in map(_fold, _words(text)) if f]
    out: list[str] = []
    for run in _RUN.findall(text):
        out.extend(_run_terms(run))
    return out


def words(text: str) -> list[str]:
    """The words of ``text`` as :func:`terms` reads them (NFKC, case folded, accents stripped, identifiers split),
    neither stemmed nor with stop words dropped: texts with the same words say the same thing in the same order.
    Equal words imply equal terms, so such texts share their near-duplicate key."""
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)
    return [f for f in map(_fold, _words(text)) if f]


def query_terms(text: str) -> list[str]:
    """Distinct terms of a query, at most ``MAX_QUERY_TERMS``; stop words only if nothing else is left."""
    found = list(dict.fromkeys(terms(text)))
    if not found:
        found = list(dict.fromkeys(terms(text, keep_stopwords=True)))
    return found[:MAX_QUERY_TERMS]


class TermHasher:
    """Keyed, memoised term → index-token mapping (see the module docstring)."""

    def __init__(self, key: bytes) -> None:
        self._key = hashlib.blake2b(key, digest_size=32, person=b"mw-fts-terms").digest()
        self._memo: dict[str, str] = {}
        self._tags: dict[tuple[str, str, str], str] = {}
        self._last: tuple[str, list[str]] = ("", [])  # the last text's terms: a save asks twice (dedup, index)
        self._dups: dict[tuple[str, str], int] = {}  # (tag, text) -> key

    def _h(self, data: str, size: int) -> str:
        digest = hashlib.blake2b(data.encode("utf-8", "surrogatepass"), key=self._key, digest_size=10).digest()
        return base64.b32encode(digest).decode("ascii")[:size].lower()

    def token(self, term: str) -> str:
        t = self._memo.get(term)
        if t is None:
            if len(self._memo) >= _MAX_MEMO:
                self._memo.clear()
            t = self._memo[term] = self._h("t\x00" + term, TERM_LEN)
        return t

    def tag(self, tenant: str, user: str, agent: str) -> str:
        """The index prefix of one scope (memoised)."""
        key = (tenant, user, agent)
        t = self._tags.get(key)
        if t is None:
            if len(self._tags) >= _MAX_MEMO:
                self._tags.clear()
            t = self._tags[key] = self._h(f"s\x00{tenant}\x00{user}\x00{agent}", TAG_LEN)
        return t

    def terms_of(self, text: str) -> list[str]:
        """``terms(text)``, remembering the last text (the same save needs them twice)."""
        last = self._last
        if last[0] == text and last[0]:
            return last[1]
        found = terms(text)
        self._last = (text, found)
        return found

    def tokens(self, tag: str, text: str) -> list[str]:
        """The index tokens of ``text`` in order: tag + hashed term."""
        tok = self.token
        return [tag + tok(t) for t in self.terms_of(text)]

    def index_text(self, tag: str, text: str) -> str:
        """What the FTS5 row stores for a record: its tokens, in order, separated by single spaces."""
        tok = self.token
        return " ".join([tag + tok(t) for t in self.terms_of(text)])

    def dup_key(self, tag: str, text: str) -> int:
        """The near-duplicate key of a text in a scope (a signed 64-bit integer, ``memory_dupkeys.dup``): its
        set of distinct terms, keyed-hashed with the scope's tag. Texts that differ only in case, punctuation,
        stop words, inflection or word order share it (consolidate.py then compares their term pairs); one
        changed content word gives another key."""
        memo = self._dups
        got = memo.get((tag, text))
        if got is None:
            if len(memo) >= 64:  # only the last few texts: a save asks for its key twice (dedup, index)
                memo.clear()
            key = " ".join(sorted(set(self.terms_of(text))))
            digest = hashlib.blake2b(f"d\x00{tag}\x00{key}".encode("utf-8", "surrogatepass"), key=self._key,
                                     digest_size=8).digest()
            got = memo[(tag, text)] = int.from_bytes(digest, "big", signed=True)
        return got

    def query_tokens(self, tag: str, text: str) -> list[str]:
        return [tag + self.token(t) for t in query_terms(text)]
