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
            if strings is not None:
                need = _chunk_need(strings, before, after)
                if need is not None:
                    out.append(need)
            else:  # too many combinations together: each item on its own
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
            alts = [_best(_needs(alt, before, after, ex)) for alt in av[1]]
            if alts and all(a is not None for a in alts):
                union = Need()
                for a in alts:
                    union = union | a  # type: ignore[operator]
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


def _index(patterns: Sequence[str]) -> _Index:
    regexes = []
    by_token: dict[str, list[int]] = {}
    always: list[int] = []
    checks: list[_Checks] = []
    for j, p in enumerate(patterns):
        parsed = sre_parse.parse(p)
        reqs = _requirements(parsed)
        regexes.append(sre_compiler.compile(parsed))  # parsed once, for the analysis and the regex
        cheap = sorted((n for n in reqs if n.cheap), key=lambda n: n.size)
        if cheap:
            for tok in cheap[0].tokens:
                by_token.setdefault(tok, []).append(j)
            cheap = cheap[1:]
        else:
            always.append(j)
        mixed = tuple((n.tokens, tuple(sorted(n.substrings, key=len, reverse=True))) for n in reqs if not n.cheap)
        checks.append((tuple(n.tokens for n in cheap), mixed))
    return _Index(tuple(regexes), {tok: tuple(js) for tok, js in by_token.items()}, frozenset(by_token),
                  tuple(always), tuple(checks))


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

    def search(self, text: str, tokens: set[str] | frozenset[str]) -> re.Match[str] | None:
        ix = self._index
        if ix is None:
            ix = self._index = _index(self.patterns)  # one assignment: concurrent first uses build the same
        found = set(ix.always)
        for tok in ix.keys.intersection(tokens):
            found.update(ix.by_token[tok])
        if not found:
            return None
        best: re.Match[str] | None = None
        contains = text.__contains__
        for j in sorted(found):
            token_sets, mixed = ix.checks[j]
            if token_sets and any(s.isdisjoint(tokens) for s in token_sets):
                continue
            if mixed and not all(not toks.isdisjoint(tokens) or any(map(contains, subs)) for toks, subs in mixed):
                continue
            m = ix.regexes[j].search(text)
            if m is not None and (best is None or m.start() < best.start()):  # ties: the earlier pattern wins
                best = m
                if not m.start():
                    break  # nothing can start earlier
        return best
