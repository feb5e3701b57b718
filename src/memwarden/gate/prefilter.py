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
    anchors: tuple[tuple[tuple[frozenset[str], frozenset[str]], ...], ...]  # per pattern, each requirement as
    # (words, strings): one of the words (a token of the text) or strings is inside every match
    widths: tuple[Width | None, ...]  # per pattern: how far a match (with its look-arounds) reaches, or None


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


def _index(patterns: Sequence[str]) -> _Index:
    regexes = []
    by_token: dict[str, list[int]] = {}
    always: list[int] = []
    checks: list[_Checks] = []
    anchors: list[tuple[tuple[frozenset[str], frozenset[str]], ...]] = []
    widths: list[Width | None] = []
    for j, p in enumerate(patterns):
        parsed = sre_parse.parse(p)
        reqs = _requirements(parsed)
        regexes.append(sre_compiler.compile(parsed))  # parsed once, for the analysis and the regex
        widths.append(_width(parsed) if not parsed.state.flags & _FLAGS else None)
        anchors.append(tuple((n.tokens, n.substrings) for n in reqs))
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
                  tuple(always), tuple(checks), tuple(anchors), tuple(widths))


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
               layout: Layout | None = None) -> re.Match[str] | None:
        """The match, as described above. ``layout`` (:meth:`Layout.of` of ``text``): on a long text, a pattern
        with an anchor word and a bounded width is searched only in windows around the anchor's occurrences,
        with the same result."""
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
            width = ix.widths[j]
            windows = None
            if layout is not None and width is not None and ix.anchors[j]:
                anchors = layout.rarest(ix.anchors[j], tokens)
                if anchors is not None:
                    windows = _windows(layout, anchors, layout.reach(width))
            m = ix.regexes[j].search(text) if windows is None else _search_windows(ix.regexes[j], text, windows)
            if m is not None and (best is None or m.start() < best.start()):  # ties: the earlier pattern wins
                best = m
                if not m.start():
                    break  # nothing can start earlier
        return best
