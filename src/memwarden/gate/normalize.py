"""Unicode normalisation and obfuscation detection that runs before the gate's rule matching (G3).

``normalize(text)`` returns a :class:`Normalized` with three views of a candidate:

* ``text``: NFKC, case-folded, invisible/format characters removed, whitespace runs collapsed to one space and
  stripped. Rules match here, so ``"IG\\u200bNORE"`` and ``"ｉｇｎｏｒｅ"`` both read ``"ignore"``.
* ``skeleton``: the same pipeline with Latin-lookalike letters of other scripts folded to Latin first, so
  ``"іgnоrе"`` (Cyrillic і, о, е) reads ``"ignore"``. Latin-script rules match here.
* ``findings``: what was hidden or disguised, as :class:`UnicodeFinding` with spans in the *original* string:
  ``unicode.invisible``, ``unicode.bidi``, ``unicode.tag``, ``unicode.variation_run``, ``unicode.homoglyph``.

Detection, not silent removal: every removed invisible, bidi-control, tag or variation-selector character that is
not ordinary orthography becomes a finding. Left alone (no finding, still removed from ``text``): ZWJ inside emoji
sequences, one VS15/VS16 after an emoji base (and keycaps), ideographic variation selectors after a CJK ideograph,
soft hyphens between letters, ZWJ/ZWNJ between letters of scripts whose orthography uses them (Arabic, Persian,
Syriac, the Indic scripts, Myanmar, Khmer, Mongolian), a leading byte-order mark, emoji subdivision-flag tag
sequences. Whole words in another script (a Cyrillic name, a Greek phrase) are legitimate and give no finding;
only a *word mixing* Latin letters with lookalikes (except Latin capitals with small Greek letters: "TNFα", "IκB"),
or a word styled in fullwidth/mathematical/enclosed letters (fullwidth is ordinary typography in CJK text, so it is
not flagged there), is ``unicode.homoglyph``. Invisible characters are removed before NFKC rather than after, so
that ``"e\\u200b\\u0301"`` composes like ``"e\\u0301"`` and normalising ``text`` again changes nothing.

Why the confusables table is hand-written: the gate needs a small, fast, reviewed fold table whose every entry
maps one character to one lowercase ASCII letter, with offsets that stay mappable, not the 2 MB general
UTS #39 table (and no dependency such as ``confusable-homoglyphs``). Its entries were checked against UTS #39
``confusables.txt`` and cover the scripts that are actually used for Latin lookalikes: Cyrillic, Greek, Armenian,
Cherokee, Latin small capitals and the enclosed letters NFKC does not fold (fullwidth and mathematical letters
are folded by NFKC itself). Keys are cased, because after case folding Greek ``η`` could have been ``Η`` (H) or
``η`` (n): the skeleton is folded before case folding.

Speed: ASCII input takes a fast path (``lower``/``split``/``join``). Otherwise the work is C-level
(``unicodedata.normalize``, ``str.casefold``, ``str.translate``, compiled regexes); Python loops run only over
regex matches that are already suspicious. The text-to-original offset map is built lazily by
:meth:`Normalized.original_span`, so only rule hits pay for it.

Linear time: CPython's NFKC sorts a run of combining marks by insertion sort, which is quadratic (100 KB of
alternating marks takes seconds). Runs of more than ``MAX_COMBINING_RUN`` consecutive non-starters are therefore
cut to that length before and after normalisation; no orthography stacks that many marks on one base, and strings
no longer than the cap skip the check. Every regex is linear (no nested quantifiers; lookarounds anchored at word or
run starts).
"""

from __future__ import annotations

import bisect
import functools
import itertools
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = ["MAX_COMBINING_RUN", "Normalized", "UnicodeFinding", "hidden_tag_text", "normalize", "skeleton_of"]

MAX_COMBINING_RUN = 256  # consecutive non-starters kept per run; longer runs are cut (linear time)
_MAX_FINDINGS_PER_RULE = 16  # further findings of one rule are merged into one summary finding

INVISIBLE, BIDI, TAG, VARIATION_RUN, HOMOGLYPH = (
    "unicode.invisible", "unicode.bidi", "unicode.tag", "unicode.variation_run", "unicode.homoglyph")


@dataclass(frozen=True, slots=True)
class UnicodeFinding:
    rule: str  # "unicode.invisible" | "unicode.bidi" | "unicode.tag" | "unicode.variation_run" | "unicode.homoglyph"
    span: tuple[int, int]  # offsets in the ORIGINAL text
    message: str  # short and human; never echoes the content (hidden tag text is only counted)
    firm: bool = True  # False: a lone invisible character outside a word (a copy-paste artefact more often than
    # a disguise: held for review on the strict tiers, kept in an episode)


@dataclass(frozen=True, slots=True)
class Normalized:
    original: str
    text: str  # NFKC → casefold → invisible/format chars removed → whitespace runs collapsed to one space, stripped
    skeleton: str  # `text` with Latin-lookalike letters from other scripts folded to Latin
    findings: tuple[UnicodeFinding, ...]
    _maps: dict[bool, tuple[list[int], list[int]]] = field(
        default_factory=dict, init=False, repr=False, compare=False)
    _runs: dict[bool, _AsciiRuns | None] = field(default_factory=dict, init=False, repr=False, compare=False)

    def original_span(self, start: int, end: int, *, in_skeleton: bool = False) -> tuple[int, int]:
        """Map a span in `text` (or `skeleton`) back to the original string. Computed lazily (only rule hits need it).

        The result covers every original character that contributed to ``text[start:end]``: an invisible character
        inside the span, the combining marks of a base letter and the whole whitespace run behind a collapsed space
        are included. An empty span maps to an empty span at the corresponding position.
        """
        target = self.skeleton if in_skeleton else self.text
        if not 0 <= start <= end <= len(target):
            raise ValueError(f"span ({start}, {end}) is outside the normalised text of length {len(target)}")
        skeleton = in_skeleton and self.skeleton != self.text
        runs = self._ascii_runs(skeleton)
        if runs is not None:
            return runs.span(start, end)
        starts, ends = self._offsets(skeleton)
        if start == end:
            if start < len(starts):
                return starts[start], starts[start]
            pos = ends[-1] if ends else 0
            return pos, pos
        return starts[start], ends[end - 1]

    def _ascii_runs(self, skeleton: bool) -> _AsciiRuns | None:
        """The run table of an ASCII original whose target is its lower-cased runs joined by single spaces (what
        :func:`_offset_map_ascii` would map character by character), else None; cached like the offset maps."""
        if skeleton not in self._runs:
            target = self.skeleton if skeleton else self.text
            self._runs[skeleton] = _AsciiRuns.of(self.original, target) if self.original.isascii() else None
        return self._runs[skeleton]

    def _offsets(self, skeleton: bool) -> tuple[list[int], list[int]]:
        cached = self._maps.get(skeleton)
        if cached is None:
            cached = _offset_map(self.original, self.skeleton if skeleton else self.text, skeleton)
            self._maps[skeleton] = cached
        return cached


# --- character classes -------------------------------------------------------------------------------------------
# CPython's regex compiler turns a character class into a fast bitmap only if every member is in the BMP; one astral
# range makes it a linear list of range tests. So every class is a BMP part and an astral part, alternated.
def _either(bmp: str, astral: str = "") -> str:
    return f"(?:[{bmp}]|[{astral}])" if astral else f"[{bmp}]"


# Default_Ignorable_Code_Point (Unicode 14) plus the interlinear annotation controls, split by kind. All of them are
# removed from `text`/`skeleton`; whether one is a finding depends on its neighbours.
_BIDI_BMP = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_TAG_ASTRAL = "\U000e0000-\U000e007f"
_VS_BMP, _VS_ASTRAL = "\u180b-\u180d\u180f\ufe00-\ufe0f", "\U000e0100-\U000e01ef"
_INVISIBLE_BMP = ("\u00ad\u034f\u115f\u1160\u17b4\u17b5\u180e\u200b-\u200d\u2060-\u2065\u206a-\u206f\u3164"
                  "\ufeff\uffa0\ufff0-\ufffb")
_INVISIBLE_ASTRAL = "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0080-\U000e00ff\U000e01f0-\U000e0fff"
_IGNORABLE_BMP = _BIDI_BMP + _VS_BMP + _INVISIBLE_BMP
_IGNORABLE_ASTRAL = "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff"
_IGNORABLE = re.compile(_either(_IGNORABLE_BMP, _IGNORABLE_ASTRAL) + "+")
_BIDI_CHARS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")

# Styled letters: fullwidth Latin, mathematical alphanumerics, parenthesized/circled/squared/negative letters.
_STYLED_BMP = "\uff21-\uff3a\uff41-\uff5a\u249c-\u24e9"
_STYLED_ASTRAL = "\U0001d400-\U0001d7ff\U0001f130-\U0001f149\U0001f150-\U0001f169\U0001f170-\U0001f189"
_STYLED_CHAR = re.compile(_either(_STYLED_BMP, _STYLED_ASTRAL))
_NEGATIVE_LETTERS = "\U0001f150-\U0001f169\U0001f170-\U0001f189"  # in the fold table, not folded by NFKC
# Two single-class scans (each a fast bitmap or a few range tests) decide whether the slower checks run at all.
_SUSPICIOUS_BMP = re.compile(f"[{_IGNORABLE_BMP}{_STYLED_BMP}]")
_SUSPICIOUS_ASTRAL = re.compile(f"[{_IGNORABLE_ASTRAL}{_STYLED_ASTRAL}]")
# Compatibility characters common in CJK text (fullwidth forms, ideographic space): mapped one by one before NFKC
# so that CJK text usually passes NFKC's quick check instead of taking its slow path over the whole string.
_FULLWIDTH_FORMS = re.compile("([\u3000\uff01-\uffee])")
_LATIN_BMP = "A-Za-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f\u1e00-\u1eff"
_CJK = re.compile(_either("\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
                          "\uff66-\uff9f", "\U00020000-\U0003ffff"))
# A non-word, non-space run this long may hide a run of combining marks (all of them are [^\w\s]); the lookbehind
# anchors the search at run starts, so a string of shorter runs is still scanned in linear time.
_MARK_RUN_HINT = re.compile(rf"(?<![^\w\s])[^\w\s]{{{MAX_COMBINING_RUN + 1}}}")

# --- the hand-written fold table ----------------------------------------------------------------------------------
# One key character → one lowercase ASCII letter. Keys are NFKC-stable (a test checks it), cased (see docstring).
_LOOKALIKES: dict[str, str] = {
    # Cyrillic capitals and small letters (UTS #39), plus the small-capital-shaped к м т н в п ь.
    "А": "a", "В": "b", "Е": "e", "К": "k", "М": "m", "Н": "h", "О": "o", "Р": "p", "С": "c", "Т": "t",
    "У": "y", "Х": "x", "Ѕ": "s", "І": "i", "Ј": "j", "Ү": "y", "Һ": "h", "Ӏ": "i", "Ԍ": "g", "Ԛ": "q",
    "Ԝ": "w", "Ѵ": "v", "Ь": "b", "Ԁ": "d",
    "а": "a", "е": "e", "о": "o", "р": "p", "с": "c", "у": "y", "х": "x", "ѕ": "s", "і": "i", "ј": "j",
    "ү": "y", "һ": "h", "ӏ": "l", "ԁ": "d", "ԛ": "q", "ԝ": "w", "ѵ": "v", "ѡ": "w", "г": "r", "ҽ": "e",
    "к": "k", "м": "m", "т": "t", "н": "h", "в": "b", "п": "n", "ь": "b",
    # Greek (μ is left out on purpose: "5μm" is a unit, not an attack).
    "Α": "a", "Β": "b", "Ε": "e", "Ζ": "z", "Η": "h", "Ι": "i", "Κ": "k", "Μ": "m", "Ν": "n", "Ο": "o",
    "Ρ": "p", "Τ": "t", "Υ": "y", "Χ": "x", "Ϳ": "j", "Ϝ": "f",
    "α": "a", "γ": "y", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p", "σ": "o", "υ": "u", "χ": "x",
    "η": "n", "ω": "w", "ϳ": "j",
    # Armenian.
    "Օ": "o", "Ս": "u", "Տ": "s", "Լ": "l", "օ": "o", "ս": "u", "ո": "n", "ռ": "n", "հ": "h", "ց": "g",
    "զ": "q", "գ": "q", "ա": "w",
    # Cherokee capitals (their small letters are added below).
    "Ꭰ": "d", "Ꭱ": "r", "Ꭲ": "t", "Ꭵ": "i", "Ꭹ": "y", "Ꭺ": "a", "Ꭻ": "j", "Ꭼ": "e", "Ꮃ": "w", "Ꮇ": "m",
    "Ꮋ": "h", "Ꮍ": "y", "Ꮐ": "g", "Ꮒ": "h", "Ꮓ": "z", "Ꮟ": "b", "Ꮢ": "r", "Ꮤ": "w", "Ꮥ": "s", "Ꮩ": "v",
    "Ꮪ": "s", "Ꮮ": "l", "Ꮯ": "c", "Ꮲ": "p", "Ꮶ": "k", "Ꮷ": "d", "Ᏻ": "g", "Ᏼ": "b",
    # Latin-script lookalikes that NFKC keeps: dotless i/j, script a/g, iota, small capitals.
    "ı": "i", "ȷ": "j", "ɑ": "a", "ɡ": "g", "ɩ": "i", "ɪ": "i", "ʏ": "y", "ʋ": "u", "ᴀ": "a", "ʙ": "b",
    "ᴄ": "c", "ᴅ": "d", "ᴇ": "e", "ɢ": "g", "ʜ": "h", "ᴊ": "j", "ᴋ": "k", "ʟ": "l", "ᴍ": "m", "ɴ": "n",
    "ᴏ": "o", "ᴘ": "p", "ʀ": "r", "ꜱ": "s", "ᴛ": "t", "ᴜ": "u", "ᴠ": "v", "ᴡ": "w", "ᴢ": "z",
}
_LOOKALIKES.update({k.lower(): v for k, v in list(_LOOKALIKES.items()) if "\u13a0" <= k <= "\u13f5"})
_LOOKALIKES.update({chr(base + i): chr(0x61 + i) for base in (0x1F150, 0x1F170) for i in range(26)})
# Identity entries for the scripts that usually surround lookalikes: str.translate then never has to raise and
# swallow a KeyError per unmapped character (3x faster on Cyrillic or Greek text).
_SKELETON_TABLE: dict[int, int] = {cp: cp for cp in (*range(0x250), *range(0x370, 0x590))}
_SKELETON_TABLE.update({ord(k): ord(v) for k, v in _LOOKALIKES.items()})
_NON_LATIN_LOOKALIKES = frozenset(k for k in _LOOKALIKES if "\u0370" <= k <= "\u058f" or "\u13a0" <= k <= "\uabbf")
_NL = re.escape("".join(sorted(_NON_LATIN_LOOKALIKES)))
_SKELETON_KEYS_BMP = re.compile("[" + re.escape("".join(sorted(k for k in _LOOKALIKES if k <= "\uffff"))) + "]")
_SKELETON_KEYS_ASTRAL = re.compile(f"[{_NEGATIVE_LETTERS}]")
assert all(k <= "\uffff" or "\U0001f150" <= k <= "\U0001f189" for k in _LOOKALIKES)

# Cheap trigger: a non-Latin lookalike right next to a Latin letter. Each form starts with one class, so the scan
# skips ahead to that class; the form starting with the rarer class is used (lookalikes in mostly-ASCII text).
_ADJACENT_NL_FIRST = re.compile(f"[{_NL}](?:(?=[{_LATIN_BMP}])|(?<=[{_LATIN_BMP}][{_NL}]))")
_ADJACENT_LATIN_FIRST = re.compile(f"[{_LATIN_BMP}](?:(?=[{_NL}])|(?<=[{_NL}][{_LATIN_BMP}]))")
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
_WORD_BMP = (r"\w" + _IGNORABLE_BMP + _STYLED_BMP
             + "\u0300-\u036f\u0483-\u0489\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f")


class _Regexes:
    """The scanners that need both BMP and astral classes, compiled twice: text without astral characters (most
    text) gets the fast BMP-only bitmaps."""

    __slots__ = ("ignorable", "mixed_word", "styled", "word_char", "word_run")

    def __init__(self, astral: bool) -> None:
        word = _either(_WORD_BMP, _IGNORABLE_ASTRAL + "\U0001f130-\U0001f189") if astral else f"[{_WORD_BMP}]"
        self.ignorable = _IGNORABLE if astral else re.compile(f"[{_IGNORABLE_BMP}]+")
        self.styled = _STYLED_CHAR if astral else re.compile(f"[{_STYLED_BMP}]")
        self.word_char = re.compile(word)
        self.word_run = re.compile(word + "*")
        # A word holding both a Latin letter and a non-Latin lookalike. The lookaheads run only at word starts.
        self.mixed_word = re.compile(f"(?<!{word})(?={word}*?[{_LATIN_BMP}])(?={word}*?[{_NL}]){word}+")


_RX_BMP, _RX_ALL = _Regexes(astral=False), _Regexes(astral=True)

_EMOJI_EXTRAS = frozenset("\u203c\u2049\u2139\u3030\u303d")
# Emoji blocks, as ranges, for the regex that lets ordinary emoji sequences skip the per-run checks. The per-run
# checks accept every character these ranges accept, so the shortcut never hides a finding.
_EMOJI_BMP = ("\u00a9\u00ae\u203c\u2049\u2122\u2139\u2194-\u21aa\u231a-\u23ff\u24c2\u25aa-\u25fe\u2600-\u27bf"
              "\u2934\u2935\u2b05-\u2b55\u3030\u303d\u3297\u3299")
_EMOJI = _either(_EMOJI_BMP, "\U0001f000-\U0001faff")
_EMOJI_CHAR = re.compile(_EMOJI)
_ZWJ_VS_FREE = (_BIDI_BMP + "\u180b-\u180d\u180f\ufe00-\ufe0d\u00ad\u034f\u115f\u1160\u17b4\u17b5\u180e\u200b"
                "\u200c\u2060-\u2065\u206a-\u206f\u3164\ufeff\uffa0\ufff0-\ufffb")  # _IGNORABLE_BMP minus ZWJ, VS15/16
# An ignorable (BMP, no astral suspects around) that is *not* a ZWJ between emoji, a VS15/VS16 after an emoji or a
# keycap's VS16. If there is none, the text's ignorables are all ordinary emoji glue.
_ODD_IGNORABLE_BMP = re.compile(
    f"\u200d(?!(?<=(?:{_EMOJI}|\ufe0f)\u200d){_EMOJI})"
    f"|[\ufe0e\ufe0f](?!(?<={_EMOJI}[\ufe0e\ufe0f])(?![{_VS_BMP}])|(?<=[#*0-9]\ufe0f)\u20e3)"
    f"|[{_ZWJ_VS_FREE}]")
_KEYCAP_BASES = frozenset("#*0123456789")
_ZERO_WIDTH = frozenset("\u200b\u200c\u200d\u2060\ufeff")


# --- the pipeline --------------------------------------------------------------------------------------------------
def normalize(text: str) -> Normalized:
    """Normalise a candidate for rule matching and report hidden or disguised characters (see module docstring)."""
    if text.isascii():
        folded = " ".join(text.lower().split())
        return Normalized(text, folded, folded, ())
    found = _Findings()
    core, skeleton = _views(text, found)
    return Normalized(text, core, skeleton, found.result())


def skeleton_of(text: str) -> str:
    """``normalize(text).skeleton`` without the findings (and without ``text`` when the skeleton differs): for
    callers that read only the skeleton. The views never depend on the findings, which are only collected."""
    if text.isascii():
        return " ".join(text.lower().split())
    return _views(text, None, need_core=False)[1]


def _views(text: str, found: _Findings | None, *, need_core: bool = True) -> tuple[str, str]:
    """(``text``, ``skeleton``) of a non-ASCII candidate, collecting its findings into ``found`` unless None
    (``text`` is "" when not ``need_core`` and the skeleton differs from it)."""
    stripped = text
    # Emoji are astral too, so look for astral *suspects* (tags, selectors, math letters) from the first astral char.
    first_astral = _ASTRAL.search(text)
    astral = first_astral is not None and _SUSPICIOUS_ASTRAL.search(text, first_astral.start()) is not None
    rx = _RX_ALL if astral else _RX_BMP
    if astral or _SUSPICIOUS_BMP.search(text) is not None:
        if rx.ignorable.search(text) is not None:
            if found is not None and (astral or _ODD_IGNORABLE_BMP.search(text) is not None):
                _ignorable_findings(text, found, rx)
            stripped = text.replace("\u200d", "").replace("\ufe0f", "")  # the usual ones, fast
            if rx.ignorable.search(stripped) is not None:
                stripped = rx.ignorable.sub("", stripped)
        if found is not None and rx.styled.search(text) is not None:
            _styled_findings(text, found, rx)
    if found is not None:
        mostly_ascii = 2 * len(stripped.encode("ascii", "ignore")) > len(stripped)
        adjacent = _ADJACENT_NL_FIRST if mostly_ascii else _ADJACENT_LATIN_FIRST
        if adjacent.search(stripped) is not None:  # on the stripped text: "і\u200bgnore" mixes scripts too
            _mixed_script_findings(text, found, rx)
    nfkc = _nfkc(_cap_if_needed(stripped))
    if _SKELETON_KEYS_BMP.search(nfkc) is None and not (astral and _SKELETON_KEYS_ASTRAL.search(nfkc) is not None):
        core = " ".join(_finish(nfkc).split())
        return core, core
    core = " ".join(_finish(nfkc).split()) if need_core else ""
    return core, " ".join(_finish(nfkc.translate(_SKELETON_TABLE)).split())


_CASE_CLASSES = bytes(97 if 97 <= b <= 122 else 65 if 65 <= b <= 90 else 32 for b in range(256))


def lower_then_upper(text: str) -> bool:
    """``re.search("[a-z][A-Z]", text) is not None`` (ASCII letters only, as that pattern reads them), by one
    C-level encode, translate and substring test instead of a regex pass trying every position: the encoding
    turns each character into one byte (anything else into ``?``), so neighbours stay neighbours."""
    raw = text.encode("ascii") if text.isascii() else text.encode("ascii", "replace")
    return b"aA" in raw.translate(_CASE_CLASSES)


def ascii_digits(text: str) -> int:
    """How many of ``0``–``9`` ``text`` holds (``len(text) - len(text.translate(<delete 0-9>))``): the ASCII
    characters kept by one encode, then a C-level byte deletion."""
    raw = text.encode("ascii", "ignore")
    return len(raw) - len(raw.translate(None, b"0123456789"))


def hidden_tag_text(text: str) -> str:
    """The ASCII smuggled in Unicode tag characters (U+E0020–U+E007E), for re-scanning by the rules layer.

    Never put the result in a message shown to the agent: it is attacker-controlled content.
    """
    return "".join(chr(ord(c) - 0xE0000) for c in text if "\U000e0020" <= c <= "\U000e007e")


@functools.cache
def _fullwidth_map() -> dict[str, str]:
    return {chr(c): unicodedata.normalize("NFKC", chr(c)) for c in (0x3000, *range(0xFF01, 0xFFEF))}


def _nfkc(s: str) -> str:
    """``unicodedata.normalize("NFKC", s)``, avoiding its slow path when only fullwidth forms fail the quick check.

    Replacing a character by its own NFKC form keeps the string compatibility-equivalent, so when the result is
    already NFKC it *is* the NFKC of ``s``; otherwise normalising it gives the same answer as normalising ``s``.
    """
    if unicodedata.is_normalized("NFKC", s):
        return s
    if _FULLWIDTH_FORMS.search(s) is not None:
        table = _fullwidth_map()
        parts = _FULLWIDTH_FORMS.split(s)  # text, form, text, form, ..., text
        for i in range(1, len(parts), 2):
            parts[i] = table[parts[i]]
        s = "".join(parts)
        if unicodedata.is_normalized("NFKC", s):
            return s
    return unicodedata.normalize("NFKC", s)


def _cap_if_needed(s: str) -> str:
    if len(s) > MAX_COMBINING_RUN and _MARK_RUN_HINT.search(s) is not None:
        return _cap_mark_runs(s)
    return s


def _strip(s: str) -> str:
    """Remove ignorable characters and cut overlong combining-mark runs (both before NFKC)."""
    return _cap_if_needed(_IGNORABLE.sub("", s))


def _finish(nfkc: str) -> str:
    """Casefold and settle an NFKC string into a fixed point of casefold∘NFKC, then cut overlong mark runs."""
    return _cap_if_needed(_settle(nfkc.casefold()))


def _fold(s: str, skeleton: bool) -> str:
    """The pipeline for one piece of text before whitespace collapsing (the offset map relies on it)."""
    nfkc = _nfkc(_strip(s))
    return _finish(nfkc.translate(_SKELETON_TABLE) if skeleton else nfkc)


def _settle(t: str) -> str:
    """Iterate casefold∘NFKC to a fixed point so that normalising `text` again changes nothing (idempotence).

    ``t`` is already case-folded and case folding is idempotent, so an NFKC-normal ``t`` is a fixed point; the
    loop runs only for the rare strings where case folding produced something NFKC recomposes.
    """
    if t.isascii() or unicodedata.is_normalized("NFKC", t):
        return t
    for _ in range(8):
        nxt = unicodedata.normalize("NFKC", t).casefold()
        if nxt == t:
            break
        t = nxt
    return t


def _cap_mark_runs(s: str) -> str:
    out: list[str] = []
    run = 0
    combining = unicodedata.combining
    for ch in s:
        if combining(ch):
            run += 1
            if run > MAX_COMBINING_RUN:
                continue
        else:
            run = 0
        out.append(ch)
    return "".join(out)


# --- findings -------------------------------------------------------------------------------------------------------
class _Findings:
    """Collects findings; past ``_MAX_FINDINGS_PER_RULE`` of one rule, only a count and the covering span are kept,
    so a 100 KB flood costs no messages and yields a short tuple."""

    __slots__ = ("counts", "items", "overflow")

    def __init__(self) -> None:
        self.items: list[UnicodeFinding] = []
        self.counts: dict[str, int] = {}
        self.overflow: dict[str, list[int]] = {}  # rule -> [count, start, end]

    def full(self, rule: str) -> bool:
        return self.counts.get(rule, 0) >= _MAX_FINDINGS_PER_RULE - 1

    def add(self, rule: str, span: tuple[int, int], message: str, firm: bool = True) -> None:
        self.items.append(UnicodeFinding(rule, span, message, firm))
        self.counts[rule] = self.counts.get(rule, 0) + 1

    def skip(self, rule: str, span: tuple[int, int]) -> None:
        o = self.overflow.get(rule)
        if o is None:
            self.overflow[rule] = [1, span[0], span[1]]
        else:
            o[0] += 1
            o[2] = span[1]

    def result(self) -> tuple[UnicodeFinding, ...]:
        if not self.items and not self.overflow:
            return ()
        out = list(self.items)
        for rule, (count, a, b) in self.overflow.items():
            out.append(UnicodeFinding(rule, (a, b), f"{count} more findings of this kind"))
        out.sort(key=lambda f: (f.span, f.rule))
        return tuple(out)


def _category(c: str) -> str:
    return unicodedata.category(c) if c else ""


def _is_letter(c: str) -> bool:
    return _category(c)[:1] in ("L", "M")


def _is_han(c: str) -> bool:
    return bool(c) and ("\u3400" <= c <= "\u4dbf" or "\u4e00" <= c <= "\u9fff" or "\uf900" <= c <= "\ufaff"
                        or "\U00020000" <= c <= "\U0003ffff")


def _uses_joiners(c: str) -> bool:
    """Scripts whose orthography uses ZWJ/ZWNJ inside words: Arabic, Syriac, Thaana, N'Ko, Indic, Tibetan, ..."""
    return bool(c) and ("\u0600" <= c <= "\u08ff" or "\u0900" <= c <= "\u0dff" or "\u0f00" <= c <= "\u109f"
                        or "\u1780" <= c <= "\u18af" or "\ua8e0" <= c <= "\ua8ff" or "\ua9e0" <= c <= "\uaa7f"
                        or "\ufb50" <= c <= "\ufdff" or "\ufe70" <= c <= "\ufefe"
                        or "\U00010d00" <= c <= "\U00010d3f" or "\U00011000" <= c <= "\U00011fff")


def _emoji_left(c: str) -> bool:
    return (_category(c) in ("So", "Sk") or c in ("\ufe0f", "\U000e007f") or c in _EMOJI_EXTRAS
            or _EMOJI_CHAR.match(c) is not None)


def _emoji_right(c: str) -> bool:
    return _category(c) == "So" or c in _EMOJI_EXTRAS or _EMOJI_CHAR.match(c) is not None


def _is_jamo(c: str) -> bool:
    return bool(c) and ("\u1100" <= c <= "\u11ff" or "\ua960" <= c <= "\ua97f" or "\ud7b0" <= c <= "\ud7ff")


def _invisible_ok(c: str, prev: str, nxt: str, at: int) -> bool:
    if c == "\u00ad":  # soft hyphen between letters: a hyphenation hint
        return _is_letter(prev) and _is_letter(nxt)
    if c in ("\u200c", "\u200d"):
        if _uses_joiners(prev) and _uses_joiners(nxt):
            return True
        return c == "\u200d" and _emoji_left(prev) and _emoji_right(nxt)
    if c == "\ufeff":
        return at == 0  # a leading byte-order mark
    if c in ("\u115f", "\u1160"):  # Hangul fillers inside a conjoining-jamo syllable
        return _is_jamo(prev) or _is_jamo(nxt)
    return False


def _vs_ok(vs: str, base: str, nxt: str) -> bool:
    if not base:
        return False
    if vs in ("\ufe0e", "\ufe0f"):  # text/emoji presentation
        if base in _KEYCAP_BASES:
            return nxt == "\u20e3"
        return _category(base) in ("So", "Sk", "Sm") or base in _EMOJI_EXTRAS or _EMOJI_CHAR.match(base) is not None
    if "\ufe00" <= vs <= "\ufe0d":  # standardized variants: math symbols, CJK compatibility ideographs
        return _category(base) in ("Sm", "So") or _is_han(base)
    if "\U000e0100" <= vs <= "\U000e01ef":  # ideographic variation sequences
        return _is_han(base)
    return "\u1800" <= base <= "\u18af"  # Mongolian free variation selectors


def _names(run: str) -> str:
    seen = list(dict.fromkeys(run))
    shown = ", ".join(unicodedata.name(c, f"U+{ord(c):04X}") for c in seen[:2])
    return shown + (", ..." if len(seen) > 2 else "")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _where(prev: str, nxt: str) -> str:
    if prev.isalnum() and nxt.isalnum():
        return "inside a word"
    if not prev:
        return "at the start of the text"
    if not nxt:
        return "at the end of the text"
    return "between words" if prev.isspace() or nxt.isspace() else "next to punctuation or symbols"


def _is_subdivision_flag(run: str, prev: str) -> bool:
    """🏴 + 2..6 tag letters/digits + CANCEL TAG, e.g. the flag of England or Scotland."""
    body = run[:-1]
    return (prev == "\U0001f3f4" and run[-1] == "\U000e007f" and 2 <= len(body) <= 6
            and all("\U000e0030" <= c <= "\U000e0039" or "\U000e0061" <= c <= "\U000e007a" for c in body))


def _kind(c: str) -> str:
    if c in _BIDI_CHARS:
        return "bidi"
    if "\U000e0000" <= c <= "\U000e007f":
        return "tag"
    if "\ufe00" <= c <= "\ufe0f" or "\U000e0100" <= c <= "\U000e01ef" or c in "\u180b\u180c\u180d\u180f":
        return "vs"
    return "inv"


def _kind_runs(run: str, a: int) -> list[tuple[str, int, int]]:
    """Split a run of ignorables into runs of one kind (usually the whole run is one kind)."""
    if len(run) == 1:
        return [(_kind(run), a, a + 1)]
    out: list[tuple[str, int, int]] = []
    for i, c in enumerate(run):
        kind = _kind(c)
        if out and out[-1][0] == kind:
            out[-1] = (kind, out[-1][1], a + i + 1)
        else:
            out.append((kind, a + i, a + i + 1))
    return out


def _ignorable_findings(s: str, found: _Findings, rx: _Regexes) -> None:
    n = len(s)
    for m in rx.ignorable.finditer(s):
        a, b = m.span()
        if a and b < n and b - a <= 2:  # fast path for everyday emoji sequences: ZWJ, VS16, VS16 + ZWJ
            run = m.group()
            if run == "\u200d" or run == "\ufe0f\u200d":
                if _emoji_left(s[a - 1]) and _emoji_right(s[b]) and (b - a == 1 or _vs_ok("\ufe0f", s[a - 1], "")):
                    continue
            elif run == "\ufe0f" and _vs_ok(run, s[a - 1], s[b]):
                continue
        for kind, a, b in _kind_runs(m.group(), m.start()):
            run = s[a:b]
            prev = s[a - 1] if a else ""
            nxt = s[b] if b < n else ""
            if kind == "inv":
                if len(run) == 1 and _invisible_ok(run, prev, nxt, a):
                    continue
                rule = INVISIBLE
            elif kind == "bidi":
                rule = BIDI
            elif kind == "tag":
                if _is_subdivision_flag(run, prev):
                    continue
                rule = TAG
            else:
                if len(run) == 1 and _vs_ok(run, prev, nxt):
                    continue
                rule = VARIATION_RUN
            if found.full(rule):
                found.skip(rule, (a, b))
            else:
                lone = rule == INVISIBLE and len(run) == 1 and not (prev.isalnum() and nxt.isalnum())
                found.add(rule, (a, b), _ignorable_message(kind, run, prev, nxt), not lone)


def _ignorable_message(kind: str, run: str, prev: str, nxt: str) -> str:
    if kind == "inv":
        what = "zero-width character" if set(run) <= _ZERO_WIDTH else "invisible character"
        return f"{_plural(len(run), what)} ({_names(run)}) {_where(prev, nxt)}"
    if kind == "bidi":
        return f"{_plural(len(run), 'bidirectional control character')} ({_names(run)}) can reorder displayed text"
    if kind == "tag":
        hidden = len(hidden_tag_text(run))
        return f"{_plural(len(run), 'invisible tag character')} hiding {_plural(hidden, 'ASCII character')}"
    if len(run) > 1:
        return f"run of {len(run)} variation selectors (can smuggle data)"
    return "variation selector after a character that has no such variant"


def _script(c: str) -> str:
    if "\u0370" <= c <= "\u03ff":
        return "Greek"
    if "\u0400" <= c <= "\u052f":
        return "Cyrillic"
    if "\u0530" <= c <= "\u058f":
        return "Armenian"
    return "Cherokee"


def _is_latin(c: str) -> bool:
    return c.isascii() or "\u00c0" <= c <= "\u024f" or "\u1e00" <= c <= "\u1eff"


def _mixed_script_findings(s: str, found: _Findings, rx: _Regexes) -> None:
    for m in rx.mixed_word.finditer(s):
        word = m.group()
        latin = [c for c in word if c.isalpha() and _is_latin(c)]
        fakes = [c for c in word if c in _NON_LATIN_LOOKALIKES]
        # "іgnоrе", "ІGNОRЕ", "Аdmin" are attacks; capitals with a small Greek letter ("TNFα", "IκB") are biochemistry.
        if all(c.isupper() for c in latin) and all(c.islower() and "\u0370" <= c <= "\u03ff" for c in fakes):
            continue
        if found.full(HOMOGLYPH):
            found.skip(HOMOGLYPH, m.span())
            continue
        scripts = " and ".join(sorted({_script(c) for c in fakes}))
        found.add(HOMOGLYPH, m.span(), f"word mixes Latin letters with {scripts} lookalikes")


def _styled_findings(s: str, found: _Findings, rx: _Regexes) -> None:
    """Words written in fullwidth, mathematical or enclosed letters; a run of such words is one finding."""
    cjk = _CJK.search(s) is not None
    spans: list[list[int]] = []  # [start, end] of merged runs of styled words
    styles: list[str] = []
    pos, n = 0, len(s)
    while pos < n:
        hit = rx.styled.search(s, pos)
        if hit is None:
            break
        a = hit.start()
        while a > pos and rx.word_char.match(s, a - 1) is not None:  # back to the start of the word
            a -= 1
        end = rx.word_run.match(s, hit.end())
        b = end.end() if end is not None else hit.end()
        pos = b
        word = s[a:b]
        styled = rx.styled.findall(word)
        if len(styled) < 2 and not any(c.isalpha() for c in rx.styled.sub("", word)):
            continue  # a lone 𝑥 or ⓐ is notation, not a disguised word
        lo, hi = min(styled), max(styled)
        if lo >= "\uff21" and hi <= "\uff5a":
            if cjk:
                continue  # fullwidth Latin is ordinary typography in CJK text
            style = "fullwidth"
        elif lo >= "\U0001d400" and hi <= "\U0001d7ff":
            style = "mathematical-styled"
        elif not any("\uff21" <= c <= "\uff5a" or "\U0001d400" <= c <= "\U0001d7ff" for c in styled):
            style = "enclosed (circled or squared)"
        else:
            style = "styled"
        if spans and styles[-1] == style and s[spans[-1][1]:a].isspace():
            spans[-1][1] = b
        else:
            spans.append([a, b])
            styles.append(style)
    for (a, b), style in zip(spans, styles, strict=True):
        if found.full(HOMOGLYPH):
            found.skip(HOMOGLYPH, (a, b))
        else:
            found.add(HOMOGLYPH, (a, b), f"text written in {style} letters")


# --- lazy offset map ---------------------------------------------------------------------------------------------
@functools.cache
def _composes_backward() -> frozenset[str]:
    """Starters (combining class 0) that canonical composition can merge into the character before them."""
    seconds: set[str] = {chr(c) for c in range(0x1161, 0x1176)} | {chr(c) for c in range(0x11A8, 0x11C3)}  # jamo
    for cp in range(0xC0, 0x30000):
        d = unicodedata.decomposition(chr(cp))
        if d and not d.startswith("<"):
            parts = d.split()
            if len(parts) == 2:
                seconds.add(chr(int(parts[1], 16)))
    return frozenset(seconds)


_IGNORABLE_CHAR = re.compile(_either(_IGNORABLE_BMP, _IGNORABLE_ASTRAL))


@functools.lru_cache(maxsize=8192)
def _starts_piece(c: str) -> bool:
    """Whether normalisation never merges ``c`` with what precedes it, so the offset map may cut before it."""
    if c.isascii():
        return True
    if _IGNORABLE_CHAR.match(c) is not None or unicodedata.combining(c):
        return False
    first = unicodedata.normalize("NFKD", c)[:1]
    backward = _composes_backward()
    return bool(first) and not unicodedata.combining(first) and first not in backward and c not in backward


@functools.lru_cache(maxsize=4096)
def _fold_piece(seg: str, skeleton: bool) -> str:
    return _fold(seg, skeleton)


def _pieces_fine(s: str) -> list[tuple[int, int]]:
    cuts = [0] + [i for i in range(1, len(s)) if _starts_piece(s[i])]
    return list(zip(cuts, [*cuts[1:], len(s)], strict=True))


def _pieces_ascii(s: str) -> list[tuple[int, int]]:
    """Cut only before ASCII characters: ASCII never composes with, or reorders across, its neighbours."""
    cuts = [0] + [i for i in range(1, len(s)) if s[i].isascii()]
    return list(zip(cuts, [*cuts[1:], len(s)], strict=True))


def _assemble(s: str, pieces: Iterable[tuple[int, int]], skeleton: bool) -> tuple[str, list[int], list[int]]:
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    _pieces_into(s, pieces, skeleton, out, starts, ends, None)
    return "".join(out), starts, ends


def _pieces_into(s: str, pieces: Iterable[tuple[int, int]], skeleton: bool, out: list[str], starts: list[int],
                 ends: list[int], pending: list[int] | None) -> list[int] | None:
    """Fold each piece and append its characters with the piece's original span to the running results; a
    whitespace run becomes one space spanning the whole run. ``pending``: the original span of the whitespace run
    waiting to become that space (returned, for the caller to go on with)."""
    for a, b in pieces:
        seg = s[a:b]
        folded = seg.lower() if seg.isascii() else _fold_piece(seg, skeleton) if b - a <= 8 else _fold(seg, skeleton)
        for ch in folded:
            if ch.isspace():
                pending = _widen(pending, a, b)
                continue
            if pending is not None:
                _space(out, starts, ends, pending)
                pending = None
            out.append(ch)
            starts.append(a)
            ends.append(b)
    return pending


def _widen(pending: list[int] | None, a: int, b: int) -> list[int]:
    """The whitespace run waiting to become one space, grown by the original span ``a:b``."""
    if pending is None:
        return [a, b]
    pending[1] = b
    return pending


def _space(out: list[str], starts: list[int], ends: list[int], pending: list[int]) -> None:
    """Emit the one space a whitespace run collapses to (none before the first character: the text is stripped)."""
    if out:
        out.append(" ")
        starts.append(pending[0])
        ends.append(pending[1])


_NON_SPACE = re.compile(r"\S+")


class _AsciiRuns:
    """:func:`_offset_map_ascii`'s two lists, looked up instead of built: for each run of non-space characters,
    where it starts in the normalised text and its span in the original. A character of a run maps to itself
    (start, start + 1); the space after a run to (the run's end, the next run's start). Mapping one span then
    costs a bisection instead of a list entry per character of the text."""

    __slots__ = ("at", "length", "spans")

    def __init__(self, at: list[int], spans: list[tuple[int, int]], length: int) -> None:
        self.at = at  # normalised offset of each run's first character
        self.spans = spans  # each run's (start, end) in the original
        self.length = length  # of the normalised text

    @classmethod
    def of(cls, original: str, target: str) -> _AsciiRuns | None:
        spans = [m.span() for m in _NON_SPACE.finditer(original)]
        at: list[int] = []
        pos = 0
        for a, b in spans:
            at.append(pos)
            pos += b - a + 1
        length = max(pos - 1, 0)
        if length != len(target) or " ".join(original[a:b] for a, b in spans).lower() != target:
            return None
        return cls(at, spans, length)

    def _start(self, k: int) -> int:
        r = bisect.bisect_right(self.at, k) - 1
        a, b = self.spans[r]
        off = k - self.at[r]
        return a + off if off < b - a else b  # a character of the run, or the space after it

    def _end(self, k: int) -> int:
        r = bisect.bisect_right(self.at, k) - 1
        a, b = self.spans[r]
        off = k - self.at[r]
        return a + off + 1 if off < b - a else self.spans[r + 1][0]

    def span(self, start: int, end: int) -> tuple[int, int]:
        """``Normalized.original_span`` from the lists :func:`_offset_map_ascii` would build."""
        if start == end:
            if start < self.length:
                pos = self._start(start)
                return pos, pos
            pos = self.spans[-1][1] if self.spans else 0
            return pos, pos
        return self._start(start), self._end(end - 1)


def _offset_map_ascii(original: str) -> tuple[str, list[int], list[int]]:
    """:func:`_assemble` for ASCII text, where normalising is lower-casing and collapsing whitespace runs: the same
    three results, built per run of non-space characters instead of per character (the common case, ~10x faster)."""
    parts: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    prev = -1
    for m in _NON_SPACE.finditer(original):
        a, b = m.span()
        if prev >= 0:  # the collapsed space stands for the whole whitespace run between the two
            parts.append(" ")
            starts.append(prev)
            ends.append(a)
        parts.append(original[a:b].lower())
        starts.extend(range(a, b))
        ends.extend(range(a + 1, b + 1))
        prev = b
    return "".join(parts), starts, ends


_ASCII_RUN = re.compile(r"[\x00-\x7f]+")


def _assemble_fine(s: str, skeleton: bool) -> tuple[str, list[int], list[int]]:
    """``_assemble(s, _pieces_fine(s), skeleton)``, with each run of ASCII characters that are pieces of their own
    done at once as in :func:`_offset_map_ascii` (real text is mostly ASCII with a few curly quotes, dashes or
    accents; the per-character assembly made mapping one span of a long text cost milliseconds). The ASCII
    character before a character that does not start a piece (a combining mark) goes with it, piece by piece."""
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    pending: list[int] | None = None  # original span of the whitespace run waiting to become one space
    pos = 0  # everything before it is assembled; it starts a piece
    n = len(s)
    for m in _ASCII_RUN.finditer(s):
        a, e = m.span()
        c = e if e == n or _starts_piece(s[e]) else e - 1  # the last character may go with what follows
        if c <= a:
            continue  # a one-character run that does: it is assembled with the characters after it
        pending = _assemble_into(s, pos, a, skeleton, out, starts, ends, pending)
        pending = _ascii_into(s, a, c, out, starts, ends, pending)
        pos = c
    _assemble_into(s, pos, n, skeleton, out, starts, ends, pending)
    return "".join(out), starts, ends


def _assemble_into(s: str, lo: int, hi: int, skeleton: bool, out: list[str], starts: list[int], ends: list[int],
                   pending: list[int] | None) -> list[int] | None:
    """:func:`_pieces_into` for ``s[lo:hi]`` cut into fine pieces (``lo`` starts one)."""
    if hi <= lo:
        return pending
    cuts = [lo] + [i for i in range(lo + 1, hi) if _starts_piece(s[i])] + [hi]
    return _pieces_into(s, itertools.pairwise(cuts), skeleton, out, starts, ends, pending)


def _ascii_into(s: str, lo: int, hi: int, out: list[str], starts: list[int], ends: list[int],
                pending: list[int] | None) -> list[int] | None:
    """:func:`_assemble` of the ASCII characters ``s[lo:hi]`` (each a piece of its own), run by run."""
    pos = lo
    for m in _NON_SPACE.finditer(s, lo, hi):
        x, y = m.span()
        if x > pos:
            pending = _widen(pending, pos, x)
        if pending is not None:
            _space(out, starts, ends, pending)
            pending = None
        out.append(s[x:y].lower())
        starts.extend(range(x, y))
        ends.extend(range(x + 1, y + 1))
        pos = y
    if pos < hi:
        pending = _widen(pending, pos, hi)
    return pending


def _offset_map(original: str, target: str, skeleton: bool) -> tuple[list[int], list[int]]:
    """Per character of ``target``: the original span it came from. Fine pieces first, coarser if they disagree."""
    if original.isascii():
        built, starts, ends = _offset_map_ascii(original)
        if built == target:
            return starts, ends
    built, starts, ends = _assemble_fine(original, skeleton)
    if built == target:
        return starts, ends
    built, starts, ends = _assemble(original, _pieces_ascii(original), skeleton)
    if built == target:
        return starts, ends
    n = len(target)  # normalisation did not split: every character comes from the whole original
    return [0] * n, [len(original)] * n
