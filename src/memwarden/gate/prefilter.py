"""Prefilters for the gate's rule regexes: the same matches, without running the patterns that cannot match.

A rule is a few dozen alternative patterns, and CPython's ``re`` tries every alternative at every position of
the candidate (checking ``\\b`` by Unicode class lookups each time). Searching all of them costs ~100 µs on a
150-character memory even when nothing matches, and ordinary memories full of trigger words ("approved",
"account", "api") activate the large rules often: regex matching was a third of a save's instructions.

From each pattern's parse tree, :func:`requirements` derives what every match must contain:

* a literal run (``"signed off"``) must occur verbatim, and where the pattern puts a word boundary around one of
  its words (``\\bapproved\\b``, ``you can``), that word must be one of the candidate's tokens (``\\w+`` runs);
* a required group of alternatives needs one of its alternatives' requirements.

Token requirements are set lookups, so a pattern costs a few hundred nanoseconds to rule out. A pattern whose
requirements hold is searched as before. This is exact, not a heuristic: :meth:`RuleMatcher.search` returns the
match that ``(?:p1)|(?:p2)|…`` would (the leftmost, and at equal starts the earliest pattern's); the tests compare
both on the attack corpus, the hard negatives and generated text.

Why not a library: Hyperscan or Aho-Corasick bindings would add a compiled dependency to every write for what
a parse-tree walk and ``set.isdisjoint`` already give; ``re`` has no literal prefilter for alternations.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import product
from re import _compiler as sre_compiler  # type: ignore[attr-defined]
from re import _constants as sre_c  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any

MAX_ALTERNATIVES = 96  # a larger "one of" set would cost more to test than it saves
_WORD = re.compile(r"\w")
_REPEATS = {sre_c.MAX_REPEAT, sre_c.MIN_REPEAT, getattr(sre_c, "POSSESSIVE_REPEAT", sre_c.MAX_REPEAT)}
_ATOMIC = getattr(sre_c, "ATOMIC_GROUP", None)
_START_ANCHORS = {sre_c.AT_BOUNDARY, sre_c.AT_BEGINNING, sre_c.AT_BEGINNING_STRING, sre_c.AT_BEGINNING_LINE}
_END_ANCHORS = {sre_c.AT_BOUNDARY, sre_c.AT_END, sre_c.AT_END_STRING, sre_c.AT_END_LINE}
_FLAGS = sre_c.SRE_FLAG_IGNORECASE | sre_c.SRE_FLAG_ASCII | sre_c.SRE_FLAG_LOCALE  # change what literals match
_NONWORD_CATEGORIES = {sre_c.CATEGORY_SPACE, sre_c.CATEGORY_NOT_WORD, sre_c.CATEGORY_LINEBREAK}


@dataclass(frozen=True, slots=True)
class Need:
    """One of ``tokens`` is a token of the text, or one of ``substrings`` occurs in it."""

    tokens: frozenset[str] = frozenset()
    substrings: frozenset[str] = frozenset()

    @property
    def cheap(self) -> bool:
        return not self.substrings

    @property
    def size(self) -> int:
        return len(self.tokens) + len(self.substrings)

    def __or__(self, other: Need) -> Need:
        return Need(self.tokens | other.tokens, self.substrings | other.substrings)


def _is_word(ch: str) -> bool:
    return _WORD.match(ch) is not None


def _nonword_class(items: Any) -> bool:
    """An ``[...]`` item list that matches only non-word characters."""
    for op, av in items:
        if op is sre_c.LITERAL and not _is_word(chr(av)):
            continue
        if op is sre_c.CATEGORY and av in _NONWORD_CATEGORIES:
            continue
        return False
    return True


def _bounds(item: tuple[Any, Any] | None, outer: bool, *, after: bool) -> bool:
    """Whether ``item`` — the element just before a literal run, or just after it with ``after`` — guarantees a
    token boundary there (the run starts a token / its last word ends one); ``outer`` is the answer at the
    pattern's own edge."""
    if item is None:
        return outer
    op, av = item
    if op is sre_c.AT:
        return av in (_END_ANCHORS if after else _START_ANCHORS)
    if op is sre_c.IN:
        return _nonword_class(av)
    if op in _REPEATS and av[0] >= 1 and len(av[2]) >= 1:
        body = list(av[2])  # the copy of the body next to the run: its first item after it, its last before it
        return _bounds(body[0] if after else body[-1], False, after=after)
    return False


MAX_EXPANSION = 96  # strings a literal chunk may expand to before it is analysed item by item instead
MAX_CLASS = 8  # a character class of at most this many literals ([sz], [oa]) is expanded
MAX_COPIES = 3  # a repeat of at most this many copies (``s?``, ``x{2}``) is expanded


class _Expander:
    """Every string parsed items can match, if they are made of literals, small classes, small bounded repeats
    and alternations of those (and the set stays small); else ``None``. Memoised per item (patterns share
    their large alternations between chunks)."""

    def __init__(self) -> None:
        self._memo: dict[int, frozenset[str] | None] = {}
        self._keep: list[object] = []  # keeps memoised items alive so their ids stay theirs

    def item(self, item: tuple[Any, Any]) -> frozenset[str] | None:
        key = id(item)
        if key not in self._memo:
            self._keep.append(item)
            self._memo[key] = self._item(*item)
        return self._memo[key]

    def _item(self, op: Any, av: Any) -> frozenset[str] | None:
        if op is sre_c.LITERAL:
            return frozenset((chr(av),))
        if op is sre_c.IN and len(av) <= MAX_CLASS and all(o is sre_c.LITERAL for o, _ in av):
            return frozenset(chr(c) for _, c in av)
        if op is sre_c.BRANCH:
            alts = [self.seq(alt) for alt in av[1]]
            if any(a is None for a in alts) or sum(len(a) for a in alts) > MAX_EXPANSION:  # type: ignore[arg-type]
                return None
            return frozenset().union(*alts)  # type: ignore[arg-type]
        if op is sre_c.SUBPATTERN and not av[1] & _FLAGS:
            return self.seq(av[3])
        if op in _REPEATS and av[1] <= MAX_COPIES:
            one = self.seq(av[2])
            if one is None or len(one) ** av[1] > MAX_EXPANSION:
                return None
            return frozenset("".join(combo) for n in range(av[0], av[1] + 1) for combo in product(one, repeat=n))
        return None

    def seq(self, items: Sequence[tuple[Any, Any]]) -> frozenset[str] | None:
        out = frozenset(("",))
        for item in items:
            part = self.item(item)
            if part is None or len(out) * len(part) > MAX_EXPANSION:
                return None
            out = frozenset(a + b for a in out for b in part)
        return out


def _string_need(text: str, starts: bool, ends: bool) -> Need:
    """What one possible text of a chunk requires: its longest word with a token boundary on both sides (a
    token of the candidate), else the text itself as a substring."""
    segments = re.findall(r"\w+|\W+", text)
    words = [seg for i, seg in enumerate(segments) if _is_word(seg[0])
             and (starts if i == 0 else True) and (ends if i == len(segments) - 1 else True)]
    if words:
        return Need(tokens=frozenset((max(words, key=len),)))
    return Need(substrings=frozenset((text,)))


def _chunk_need(strings: frozenset[str], starts: bool, ends: bool) -> Need | None:
    if "" in strings:
        return None  # the chunk can match nothing: it requires nothing
    need = Need()
    for text in strings:
        need = need | _string_need(text, starts, ends)
    return need


def _best(needs: Iterable[Need]) -> Need | None:
    # token checks first; a substring shorter than 3 characters (" ", "a ") rules almost nothing out
    ranked = sorted((n for n in needs if n.size <= MAX_ALTERNATIVES),
                    key=lambda n: (not n.cheap, min((len(s) for s in n.substrings), default=9) < 3, n.size))
    return ranked[0] if ranked else None


def _size(n: Need) -> int:
    return n.size


def _union(alts: Iterable[Need | None]) -> Need | None:
    """What a match of one of the alternatives requires: one of their needs' words or strings (None when an
    alternative requires nothing, or there are no alternatives)."""
    union: Need | None = None
    for a in alts:
        if a is None:
            return None
        union = a if union is None else union | a
    return union


MAX_CLASS_STRINGS = 16  # a chunk needing more strings than this is also analysed item by item


def _needs(seq: Sequence[tuple[Any, Any]], start: bool, end: bool, ex: _Expander) -> list[Need]:
    """Everything a match of the parsed sequence requires (each ``Need`` must hold). ``start``/``end``: whether
    the context around the sequence puts a token boundary at its start/end.

    The sequence is cut into maximal chunks of expandable items (literals, small classes and repeats,
    alternations of those); each chunk needs one of its possible texts. Other items are analysed inside."""
    items = list(seq)
    out: list[Need] = []
    i = 0
    while i < len(items):
        j = i
        while j < len(items) and ex.item(items[j]) is not None:
            j += 1
        if j > i:  # items[i:j] is a chunk of expandable items
            before = _bounds(items[i - 1] if i else None, start, after=False)
            after = _bounds(items[j] if j < len(items) else None, end, after=True)
            strings = ex.seq(items[i:j])
            need = _chunk_need(strings, before, after) if strings is not None else None
            if need is not None:
                out.append(need)
            if strings is None or (need is not None and not need.tokens and need.size > MAX_CLASS_STRINGS):
                # too many combinations together (or a large set of strings, costly to test): each item on its
                # own as well; a match of the chunk holds a match of each item, so each item's need is implied
                for k in range(i, j):
                    need = _chunk_need(ex.item(items[k]) or frozenset(("",)),
                                       before if k == i else False, after if k == j - 1 else False)
                    if need is not None:
                        out.append(need)
            i = j
            continue
        op, av = items[i]
        before = _bounds(items[i - 1] if i else None, start, after=False)
        after = _bounds(items[i + 1] if i + 1 < len(items) else None, end, after=True)
        if op is sre_c.SUBPATTERN:
            if not av[1] & _FLAGS:
                out += _needs(av[3], before, after, ex)
        elif op is sre_c.BRANCH:
            per_alt = [_needs(alt, before, after, ex) for alt in av[1]]
            union = _union(_best(ns) for ns in per_alt)
            if union is not None and union.size > MAX_ALTERNATIVES:  # the smallest need of each, then
                union = _union(min((n for n in ns if n.size <= MAX_ALTERNATIVES), key=_size, default=None)
                               for ns in per_alt)
            if union is not None:
                out.append(union)
        elif op in _REPEATS and av[0] >= 1:
            once = av[1] == 1
            out += _needs(av[2], before if once else False, after if once else False, ex)
        elif op is _ATOMIC:
            out += _needs(av, before, after, ex)
        # classes, ANY, anchors, lookarounds and back-references require nothing literal
        i += 1
    return out


def _requirements(parsed: Any) -> tuple[Need, ...]:
    if parsed.state.flags & _FLAGS:
        return ()
    needs = [n for n in _needs(parsed, False, False, _Expander()) if n.size <= MAX_ALTERNATIVES]
    cheap = tuple(dict.fromkeys(n for n in needs if n.cheap))
    if cheap:
        return cheap
    best = _best(needs)
    return (best,) if best is not None else ()


# --- every word of one alternative ----------------------------------------------------------------------------
# ``Need`` keeps one word per alternative ("from now on" needs the token "from"), which common words satisfy
# often: most rule searches on ordinary text then fail after scanning it. ``Terms`` keeps all of them: a pattern
# can match only if, for one of its alternatives, *every* word that alternative spells out with token boundaries
# is a token of the text ({"from", "now", "on"} ⊆ tokens). A set lookup per term, exact for the same reason a
# ``Need`` is (each such word is a whole ``\w+`` run of any match); anything it cannot analyse weakens it to "no
# requirement", never the other way.
MAX_TERMS = 512  # alternatives kept; more (a product of many optional parts) weakens the requirement
Terms = tuple[frozenset[str], ...] | None  # one set of words must all be tokens; None: nothing required


def _string_words(text: str, starts: bool, ends: bool) -> frozenset[str]:
    """The words of one possible text of a chunk that are whole tokens of any text it occurs in."""
    segments = re.findall(r"\w+|\W+", text)
    return frozenset(seg for i, seg in enumerate(segments) if _is_word(seg[0])
                     and (starts if i == 0 else True) and (ends if i == len(segments) - 1 else True))


def _chunk_terms(strings: frozenset[str], starts: bool, ends: bool) -> Terms:
    """One of the chunk's possible texts occurs: its words (nothing, when one of the texts has none)."""
    if "" in strings:
        return None
    words = [_string_words(t, starts, ends) for t in strings]
    return _or([(w,) for w in words]) if all(words) else None


def _and(a: Terms, b: Terms) -> Terms:
    if a is None:
        return b
    if b is None:
        return a
    both = tuple(dict.fromkeys(x | y for x in a for y in b))
    if len(both) > MAX_TERMS:  # keep one side only: weaker, still implied by every match
        return a if sum(map(len, a)) / len(a) >= sum(map(len, b)) / len(b) else b
    return both


def _or(alts: Sequence[Terms]) -> Terms:
    if any(t is None for t in alts):
        return None  # one alternative requires nothing
    out = tuple(dict.fromkeys(x for t in alts for x in t))  # type: ignore[union-attr]
    if len(out) > MAX_TERMS:  # too many: each alternative keeps its longest word only (weaker, still implied)
        out = tuple(dict.fromkeys(frozenset((max(sorted(x), key=len),)) for x in out))
    return out if len(out) <= MAX_TERMS else None


def _edge_nonword(seq: Sequence[tuple[Any, Any]], *, last: bool) -> bool:
    """Whether every match of the parsed sequence ends (``last``) or starts with a non-word character."""
    if not seq:
        return False
    op, av = seq[-1] if last else seq[0]
    if op is sre_c.LITERAL:
        return not _is_word(chr(av))
    if op is sre_c.IN:
        return _nonword_class(av)
    if op is sre_c.BRANCH:
        return all(_edge_nonword(alt, last=last) for alt in av[1])
    if op is sre_c.SUBPATTERN:
        return not av[1] & _FLAGS and _edge_nonword(av[3], last=last)
    if op in _REPEATS and av[0] >= 1:
        return _edge_nonword(av[2], last=last)
    return False


def _bound_at(items: Sequence[tuple[Any, Any]], k: int, outer: bool, *, after: bool) -> bool:
    """Whether a token boundary is certain just before ``items[k]`` (or, with ``after``, just before ``items[k]``
    seen from the left, i.e. after ``items[k - 1]``): the neighbour ends (starts) with a non-word character, or
    is optional and both it and what lies beyond it do; else :func:`_bounds`."""
    at = k if after else k - 1
    if not 0 <= at < len(items):
        return outer
    item = items[at]
    if _edge_nonword([item], last=not after):
        return True
    op, av = item
    if op in _REPEATS and av[0] == 0:
        return _edge_nonword(av[2], last=not after) and _bound_at(items, at + 1 if after else at, outer,
                                                                  after=after)
    return _bounds(item, outer, after=after)


def _terms(seq: Sequence[tuple[Any, Any]], start: bool, end: bool, ex: _Expander) -> Terms:
    """:data:`Terms` of a parsed sequence; chunks as in :func:`_needs`, with boundaries also read from literal
    neighbours (so an item analysed on its own still knows the spaces around it)."""
    items = list(seq)
    out: Terms = None
    i = 0
    while i < len(items):
        j = i
        while j < len(items) and ex.item(items[j]) is not None:
            j += 1
        if j > i:
            strings = ex.seq(items[i:j])
            if strings is not None:
                out = _and(out, _chunk_terms(strings, _bound_at(items, i, start, after=False),
                                             _bound_at(items, j, end, after=True)))
            else:  # too many combinations together: each item on its own
                for k in range(i, j):
                    out = _and(out, _chunk_terms(ex.item(items[k]) or frozenset(("",)),
                                                 _bound_at(items, k, start, after=False),
                                                 _bound_at(items, k + 1, end, after=True)))
            i = j
            continue
        op, av = items[i]
        before = _bound_at(items, i, start, after=False)
        after = _bound_at(items, i + 1, end, after=True)
        if op is sre_c.SUBPATTERN:
            if not av[1] & _FLAGS:
                out = _and(out, _terms(av[3], before, after, ex))
        elif op is sre_c.BRANCH:
            out = _and(out, _or([_terms(alt, before, after, ex) for alt in av[1]]))
        elif op in _REPEATS and av[0] >= 1:
            once = av[1] == 1
            out = _and(out, _terms(av[2], before if once else False, after if once else False, ex))
        elif op is _ATOMIC:
            out = _and(out, _terms(av, before, after, ex))
        i += 1
    return out


def _word_terms(parsed: Any) -> Terms:
    if parsed.state.flags & _FLAGS:
        return None
    terms = _terms(parsed, False, False, _Expander())
    if terms is None or any(not t for t in terms):
        return None
    # a term holding another is implied by it: keep the smaller ones
    kept: list[frozenset[str]] = []
    for t in sorted(terms, key=len):
        if not any(k <= t for k in kept):
            kept.append(t)
    return tuple(kept)


def word_terms(pattern: str) -> Terms:
    """The sets of words of which one must be wholly among a text's tokens for ``pattern`` to match (None:
    no such requirement found)."""
    return _word_terms(sre_parse.parse(pattern))


def requirements(pattern: str) -> tuple[Need, ...]:
    """The checks :class:`RuleMatcher` makes before searching ``pattern``: every cheap (token) requirement, or
    the best substring requirement when there is none. Empty: the pattern is always searched."""
    return _requirements(sre_parse.parse(pattern))


_Checks = tuple[tuple[frozenset[str], ...], tuple[tuple[frozenset[str], tuple[str, ...]], ...]]


@dataclass(frozen=True, slots=True)
class _Index:
    regexes: tuple[re.Pattern[str], ...]
    by_token: dict[str, tuple[int, ...]]
    keys: frozenset[str]
    always: tuple[int, ...]
    checks: tuple[_Checks, ...]
    anchors: tuple[tuple[tuple[frozenset[str], frozenset[str]], ...], ...]  # per pattern, each requirement as
    # (words, strings): one of the words (a token of the text) or strings is inside every match
    widths: tuple[Width | None, ...]  # per pattern: how far a match (with its look-arounds) reaches, or None
    terms: tuple[_TermIndex | None, ...]  # per pattern: word sets of which one must all be tokens (or None)
    # per pattern, what a search reads, in one tuple (fewer lookups per visited pattern): the token sets every
    # one of which must meet the tokens, the (words, strings) requirements, the term index, the width, the
    # anchors and the regex
    plans: tuple[tuple[Any, ...], ...] = ()
    # ``always`` without the patterns that cannot match ASCII text: a requirement of theirs names only non-ASCII
    # words and strings, and a match in ASCII text holds only ASCII ones (Cyrillic, Chinese, accented patterns)
    always_ascii: tuple[int, ...] = ()


# How many characters a match can reach at most, as (a, b, c): a + b × the longest ``\\w`` run + c × the longest
# run of non-space characters of the searched text. None: no bound (``.*``, a repeated group, a back-reference).
Width = tuple[int, int, int]
_UNBOUNDED = sre_c.MAXREPEAT


def _class_has_space(item: tuple[Any, Any]) -> bool | None:
    """Whether a one-character item can match a space (None: it is not a one-character item)."""
    op, _ = item
    if op in (sre_c.LITERAL, sre_c.NOT_LITERAL, sre_c.IN, sre_c.ANY, sre_c.CATEGORY):
        return sre_compiler.compile(sre_parse.SubPattern(sre_parse.State(), [item])).match(" ") is not None
    return None


def _only_space(item: tuple[Any, Any]) -> bool:
    op, av = item
    return (op is sre_c.IN and all(o is sre_c.CATEGORY and a is sre_c.CATEGORY_SPACE for o, a in av)) \
        or (op is sre_c.LITERAL and av == 32)


_WORD_RANGES = ((48, 57), (65, 90), (97, 122))


def _word_class(item: tuple[Any, Any]) -> bool:
    """Whether a one-character item matches only ``\\w`` characters (``\\w``, ``\\d``, ``[a-z0-9_]``)."""
    op, av = item
    if op is not sre_c.IN:
        return op is sre_c.LITERAL and _is_word(chr(av))
    for o, a in av:
        if o is sre_c.CATEGORY and a in (sre_c.CATEGORY_WORD, sre_c.CATEGORY_DIGIT):
            continue
        if o is sre_c.LITERAL and _is_word(chr(a)):
            continue
        if o is sre_c.RANGE and any(lo <= a[0] and a[1] <= hi for lo, hi in _WORD_RANGES):
            continue
        return False
    return True


def _add(x: Width, y: Width, times: int = 1) -> Width:
    return x[0] + times * y[0], x[1] + times * y[1], x[2] + times * y[2]


def _width(seq: Sequence[tuple[Any, Any]]) -> Width | None:
    """:data:`Width` of a parsed sequence on a text whose only whitespace is single spaces: an unbounded repeat
    of a class without the space stays inside one run of non-space characters (of ``\\w`` characters, for a
    class of them), one of ``\\s`` matches one space at most; look-arounds count as if consumed (a window must
    hold what they look at)."""
    total: Width = (0, 0, 0)
    for item in seq:
        op, av = item
        if op is sre_c.AT:
            continue
        if op in (sre_c.LITERAL, sre_c.NOT_LITERAL, sre_c.IN, sre_c.ANY, sre_c.CATEGORY):
            total = _add(total, (1, 0, 0))
            continue
        if op is sre_c.SUBPATTERN:
            inner = [_width(av[3])]
        elif op is sre_c.BRANCH:
            inner = [_width(alt) for alt in av[1]]
        elif op in (sre_c.ASSERT, sre_c.ASSERT_NOT):
            inner = [_width(av[1])]
        elif op is _ATOMIC:
            inner = [_width(av)]
        elif op in _REPEATS:
            _lo, hi, body = av
            w = _width(body)
            if w is None:
                return None
            if hi != _UNBOUNDED:
                total = _add(total, w, hi)
                continue
            one = list(body)
            if len(one) != 1:
                return None
            if _only_space(one[0]):
                total = _add(total, (1, 0, 0))
            elif _word_class(one[0]):
                total = _add(total, (0, 1, 0))
            elif _class_has_space(one[0]) is False:
                total = _add(total, (0, 0, 1))
            else:
                return None
            continue
        else:  # back-references, conditionals: no bound
            return None
        if any(w is None for w in inner):
            return None
        total = _add(total, (max(w[0] for w in inner), max(w[1] for w in inner),  # type: ignore[index]
                             max(w[2] for w in inner)))  # type: ignore[index]
    return total


WINDOWED_MIN_CHARS = 1024  # below this a whole-text search is as cheap as finding where to search
WINDOWED_MAX_SHARE = 0.5  # windows covering more than this share of the text: search the whole text
MAX_WINDOWS = 64  # more occurrences of a pattern's rarest anchor than this: search the whole text


class Layout:
    """What a windowed search needs to know about one searched text, computed once and shared by every pattern
    searched on it: whether its only whitespace is single spaces (normalised views are), the longest run of
    non-space characters, and where each anchor word occurs (found on first use)."""

    __slots__ = ("_found", "longest", "longest_word", "text")

    def __init__(self, text: str, longest: int, longest_word: int) -> None:
        self.text = text
        self.longest = longest
        self.longest_word = longest_word
        self._found: dict[str, list[int] | None] = {}

    @classmethod
    def of(cls, text: str, words: Iterable[str]) -> Layout | None:
        """A layout for ``text`` (``words``: a superset of its ``\\w+`` runs), or None when windows cannot help
        (short text, or other whitespace than single spaces, which :func:`_width` does not bound)."""
        if len(text) < WINDOWED_MIN_CHARS or _LOOSE_SPACE.search(text) is not None:
            return None
        return cls(text, max(map(len, text.split(" "))), max(map(len, words), default=0))

    def reach(self, width: Width) -> int:
        return width[0] + width[1] * self.longest_word + width[2] * self.longest

    def rarest(self, needs: Sequence[tuple[frozenset[str], frozenset[str]]], tokens: set[str] | frozenset[str]
               ) -> list[str] | None:
        """Of the requirements of a pattern (every match holds one word or string of each), the one with the
        fewest occurrences in the text: its words and strings, to put windows around. None when each occurs
        more than ``MAX_WINDOWS`` times (a whole-text search is cheaper)."""
        best: list[str] | None = None
        fewest = MAX_WINDOWS + 1
        for words, strings in needs:
            found = [*words.intersection(tokens), *strings]
            count = 0
            for w in found:
                at = self.positions(w)
                count += MAX_WINDOWS + 1 if at is None else len(at)
                if count > MAX_WINDOWS:
                    break
            if count < fewest:
                best, fewest = found, count
                if not count:
                    break
        return best

    def count(self, words: Iterable[str]) -> int:
        """Occurrences of ``words`` in all (``MAX_WINDOWS + 1`` for any word past the cap)."""
        total = 0
        for w in words:
            at = self.positions(w)
            total += MAX_WINDOWS + 1 if at is None else len(at)
        return total

    def term_anchors(self, index: _TermIndex, tokens: set[str] | frozenset[str]) -> tuple[list[str], int] | None:
        """Anchors from a pattern's word terms: of each term whose words are all tokens, its word with the fewest
        occurrences here (a match holds every word of one such term, so it holds that term's chosen word), with
        their total count; None when a term has no word under the cap or the total passes it. Where the
        requirements name only common words ("from" of "from now on"), a term's rarer word ("now") makes
        windows possible."""
        keys, rest = index
        chosen: list[str] = []
        total = 0
        for k in keys.intersection(tokens):
            for r in rest[k]:
                if not r <= tokens:
                    continue
                best, fewest = None, MAX_WINDOWS + 1
                for w in (k, *sorted(r)):
                    at = self.positions(w)
                    if at is not None and len(at) < fewest:
                        best, fewest = w, len(at)
                if best is None:
                    return None
                chosen.append(best)
                total += fewest
                if total > MAX_WINDOWS:
                    return None
        return chosen, total

    def positions(self, word: str) -> list[int] | None:
        """Where ``word`` occurs (as a substring), or None past ``MAX_WINDOWS`` occurrences."""
        if word in self._found:
            return self._found[word]
        found: list[int] | None = []
        find, i = self.text.find, self.text.find(word)
        while i >= 0:
            if len(found) >= MAX_WINDOWS:  # type: ignore[arg-type]
                found = None
                break
            found.append(i)  # type: ignore[union-attr]
            i = find(word, i + 1)
        self._found[word] = found
        return found


_LOOSE_SPACE = re.compile(r"\s\s|[^\S ]")


def _windows(layout: Layout, anchors: Iterable[str], width: int) -> list[tuple[int, int]] | None:
    """Merged (start, end) windows that hold every match containing one of ``anchors``: each occurrence widened
    by ``width`` on both sides. None when they would cover too much of the text to be worth it."""
    spans = sorted((max(0, i - width), i + len(w) + width) for w in anchors for i in layout.positions(w) or ())
    budget = WINDOWED_MAX_SHARE * len(layout.text)
    out: list[tuple[int, int]] = []
    covered = 0
    for a, b in spans:
        if out and a <= out[-1][1]:
            if b > out[-1][1]:
                covered += b - out[-1][1]
                out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
            covered += b - a
        if covered > budget:
            return None
    return out


def _search_windows(rx: re.Pattern[str], text: str, windows: list[tuple[int, int]]) -> re.Match[str] | None:
    """``rx.search(text)`` by searching only ``windows`` (which hold every match, look-arounds included: a match
    holds an anchor occurrence and reaches at most the pattern's width from it). A window's end cuts the text
    short, which could only add a false match ending at the cut; none can, by the same width argument, but each
    match found is still confirmed by matching again at its start on the whole text, as a backstop."""
    for a, b in windows:
        pos = a
        while pos <= b:
            m = rx.search(text, pos, b)
            if m is None:
                break
            full = rx.match(text, m.start())
            if full is not None:
                return full
            pos = m.start() + 1
    return None


# per pattern: the terms keyed by one word of each (its longest), so a check visits only the terms whose key
# word is a token: (key words, key word → the rest of each term keyed by it)
_TermIndex = tuple[frozenset[str], dict[str, tuple[frozenset[str], ...]]]


def _term_index(terms: Terms, reqs: Sequence[Need]) -> _TermIndex | None:
    """``terms`` keyed for :meth:`RuleMatcher.search`, or None when the token checks already made imply them
    (every term a single word that a cheap requirement names): checking would cost without ruling out more."""
    if terms is None:
        return None
    cheap = [n.tokens for n in reqs if n.cheap]
    if all(len(t) == 1 for t in terms) and any(frozenset().union(*terms) >= c for c in cheap):
        return None
    rest: dict[str, list[frozenset[str]]] = {}
    for t in terms:
        key = max(sorted(t), key=len)
        rest.setdefault(key, []).append(t - {key})
    return frozenset(rest), {k: tuple(v) for k, v in rest.items()}


def _terms_hold(index: _TermIndex, tokens: set[str] | frozenset[str]) -> bool:
    keys, rest = index
    for k in keys.intersection(tokens):  # a loop, not any(genexpr): a few µs per scan on short texts
        for r in rest[k]:
            if r <= tokens:
                return True
    return False


def _mixed_hold(mixed: tuple[tuple[frozenset[str], tuple[str, ...]], ...], tokens: set[str] | frozenset[str],
                contains: Any) -> bool:
    """Every (words, strings) requirement holds: one of the words is a token or one of the strings occurs."""
    for toks, subs in mixed:  # noqa: SIM110 - a loop: cheaper than all() over a generator
        if toks.isdisjoint(tokens) and not any(map(contains, subs)):
            return False
    return True


def _all_meet(token_sets: tuple[frozenset[str], ...], tokens: set[str] | frozenset[str]) -> bool:
    """Every set shares a word with ``tokens`` (a loop: cheaper than ``all`` over a generator, per pattern)."""
    for s in token_sets:  # noqa: SIM110
        if s.isdisjoint(tokens):
            return False
    return True


# Words most memories hold: a pattern indexed under one of them is visited (its checks run) by most scans, so a
# requirement without them makes the better index key. Only the choice of key depends on this list, never what
# matches.
_COMMON_WORDS = frozenset(
    "a an the and or but if of in on at to for from by with as is are was were be been am i me my you your he she "
    "it its we our they their them this that these those user users not no do does did have has had will would "
    "can could should must may might all any every each some more most so than then there here what which who when "
    "where why how now new one also just only please".split())


def _key_cost(n: Need) -> tuple[int, int]:
    return sum(t in _COMMON_WORDS for t in n.tokens), n.size


MAX_CHECKED_STRINGS = 8  # a further string requirement is checked only if it names at most this many strings


def _selective(s: str) -> bool:
    """A substring worth a test of its own: two characters or more, or one that is neither a word character nor
    a space ("@", "<", "="); a single letter or a space occurs in nearly every text."""
    return len(s) >= 2 or not (_is_word(s) or s.isspace())


def _string_needs(parsed: Any, reqs: Sequence[Need]) -> tuple[Need, ...]:
    """String requirements of ``parsed`` that :func:`_requirements` leaves out (it keeps the token ones, or else
    one string requirement): every match holds one of each one's words or strings too (:func:`_needs`), so each
    is a further necessary condition, tested with ``in`` before the regex runs. A pattern that needs
    ``@`` besides one of eight words is then ruled out by one substring test. Only small, selective ones."""
    if parsed.state.flags & _FLAGS:
        return ()
    out = []
    for n in _needs(parsed, False, False, _Expander()):
        if n.cheap or n in reqs or n.size > MAX_CHECKED_STRINGS or not all(map(_selective, n.substrings)):
            continue
        out.append(n)
    return tuple(dict.fromkeys(out))


def _check_order(n: Need) -> tuple[int, tuple[str, ...]]:
    return n.size, tuple(sorted(n.tokens | n.substrings))  # fewest alternatives first; ties in a fixed order


def _index(patterns: Sequence[str]) -> _Index:
    regexes = []
    by_token: dict[str, list[int]] = {}
    always: list[int] = []
    checks: list[_Checks] = []
    anchors: list[tuple[tuple[frozenset[str], frozenset[str]], ...]] = []
    widths: list[Width | None] = []
    terms: list[_TermIndex | None] = []
    ascii_ok: list[bool] = []
    for j, p in enumerate(patterns):
        parsed = sre_parse.parse(p)
        reqs = _requirements(parsed)
        more = _string_needs(parsed, reqs)
        ascii_ok.append(all(any(map(str.isascii, n.tokens)) or any(map(str.isascii, n.substrings))
                            for n in (*reqs, *more)))
        regexes.append(sre_compiler.compile(parsed))  # parsed once, for the analysis and the regex
        widths.append(_width(parsed) if not parsed.state.flags & _FLAGS else None)
        anchors.append(tuple((n.tokens, n.substrings) for n in reqs))
        term_index = _term_index(_word_terms(parsed), reqs)
        terms.append(term_index)
        cheap = sorted((n for n in reqs if n.cheap), key=_key_cost)
        # the key a pattern is visited by: its most selective token requirement, where one of the term key words
        # (implied by the terms, which are still checked) is a requirement too
        keyed = Need(tokens=term_index[0]) if term_index is not None else None
        if keyed is not None and (not cheap or _key_cost(keyed) < _key_cost(cheap[0])):
            for tok in keyed.tokens:
                by_token.setdefault(tok, []).append(j)
        elif cheap:
            for tok in cheap[0].tokens:
                by_token.setdefault(tok, []).append(j)
            cheap = cheap[1:]
        else:
            always.append(j)
        mixed = tuple((n.tokens, tuple(sorted(n.substrings, key=len, reverse=True)))
                      for n in sorted({*(n for n in reqs if not n.cheap), *more}, key=_check_order))
        checks.append((tuple(n.tokens for n in cheap), mixed))
    plans = tuple((checks[j][0], checks[j][1], terms[j], widths[j], anchors[j], regexes[j])
                  for j in range(len(patterns)))
    return _Index(tuple(regexes), {tok: tuple(js) for tok, js in by_token.items()}, frozenset(by_token),
                  tuple(always), tuple(checks), tuple(anchors), tuple(widths), tuple(terms), plans,
                  tuple(j for j in always if ascii_ok[j]))


class RuleMatcher:
    """``search(text, tokens)`` ≡ ``re.compile("|".join(f"(?:{p})" for p in patterns)).search(text)`` when
    ``tokens`` holds every ``\\w+`` run of ``text`` (a superset is fine), skipping patterns that cannot match.

    Each pattern with a token requirement is indexed by that requirement's tokens (the smallest such set), so a
    search visits only the patterns one of the candidate's tokens names, plus those with no token requirement.
    The index is built on first use, so commands that never scan do not pay for it at start-up."""

    __slots__ = ("_index", "patterns")

    def __init__(self, patterns: Sequence[str]) -> None:
        self.patterns = tuple(patterns)
        self._index: _Index | None = None

    def combined(self) -> re.Pattern[str]:
        """The one alternation this matcher stands for (what :meth:`search` is checked against)."""
        return re.compile("|".join(f"(?:{p})" for p in self.patterns))

    def search(self, text: str, tokens: set[str] | frozenset[str],
               layout: Layout | None = None, *, first: bool = False) -> re.Match[str] | None:
        """The match, as described above. ``layout`` (:meth:`Layout.of` of ``text``): on a long text, a pattern
        with an anchor word and a bounded width is searched only in windows around the anchor's occurrences,
        with the same result. ``first``: for a caller that only asks *whether* the alternation matches, the
        first pattern's match found (not necessarily the leftmost): ``None`` exactly when :meth:`search` is
        ``None``, without searching the remaining patterns."""
        ix = self._index
        if ix is None:
            ix = self._index = _index(self.patterns)  # one assignment: concurrent first uses build the same
        always = ix.always_ascii if text.isascii() else ix.always
        keys = ix.keys.intersection(tokens)
        if not keys:
            if not always:
                return None
            found: Iterable[int] = always  # already in order
        elif not always and len(keys) == 1:
            found = ix.by_token[next(iter(keys))]  # in order, built so
        else:
            by_token = ix.by_token
            merged = set(always)
            for tok in keys:
                merged.update(by_token[tok])
            found = sorted(merged)
        best: re.Match[str] | None = None
        contains = text.__contains__
        plans = ix.plans
        for j in found:
            token_sets, mixed, terms, width, anchor_needs, rx = plans[j]
            if token_sets and not _all_meet(token_sets, tokens):
                continue
            if mixed and not _mixed_hold(mixed, tokens, contains):
                continue
            if terms is not None and not _terms_hold(terms, tokens):
                continue  # no alternative has all its words in the text
            windows = None
            if layout is not None and width is not None and (anchor_needs or terms is not None):
                anchors = layout.rarest(anchor_needs, tokens) if anchor_needs else None
                if terms is not None:
                    by_terms = layout.term_anchors(terms, tokens)
                    if by_terms is not None and (anchors is None or by_terms[1] < layout.count(anchors)):
                        anchors = by_terms[0]
                if anchors is not None:
                    windows = _windows(layout, anchors, layout.reach(width))
            m = rx.search(text) if windows is None else _search_windows(rx, text, windows)
            if m is not None and (best is None or m.start() < best.start()):  # ties: the earlier pattern wins
                best = m
                if first or not m.start():
                    break  # nothing can start earlier, or the caller needs no more than one match
        return best
