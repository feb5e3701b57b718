"""The de-obfuscated view of a candidate: what a model would read, with every disguise the gate knows undone (G9).

:func:`normalize` already gives the gate NFKC, case-folded text with invisible characters removed and Latin
lookalikes from Cyrillic, Greek, Armenian and Cherokee folded. Attackers get past that with disguises a model
still reads straight through (issue 11): ``ïgnörë``, ``ig*nore*``, ``ig<b>nore</b>``, ``&#105;gnore``,
``%69gnore``, ``i.g.n.o.r.e``, ``I-G-N-O-R-E``, ``i g n o r e``, ``IGN0RE PREV1OUS``, ``ignorePreviousInstructions``,
``ignoreprevious``, ``ingore``, letters from Lisu or Coptic, turned letters, tatweel and Braille-blank fillers.

:func:`deobfuscate` undoes all of them, in this order, and returns the result as a :class:`Normalized` whose
``text`` and ``skeleton`` are the de-obfuscated string (``None`` when it equals the plain skeleton, which is the
common case and costs one regex scan):

1. line and paragraph separators (U+2028, U+2029, U+0085) become newlines; filler characters (tatweel outside
   Arabic words, U+FFFC, U+2800, U+115F/U+1160 outside Hangul, U+3164) are removed, and so are Latin combining
   marks on letters of scripts that never take them (Arabic, Hebrew, Indic, Thai, CJK);
2. markup: HTML comments and markdown comments (``[//]: # (…)``) are unwrapped, HTML and BBCode tags are removed,
   emphasis marks (``*``, ``_``, ``~``, backquotes) between letters are removed, ``[text](url)`` becomes ``text url``;
3. escapes: HTML entities, ``%XX``, ``\\uXXXX`` and ``\\xXX`` are decoded, a backslash before every letter dropped;
4. joined identifiers are split: ``camelCase``, ``snake_case``, ``kebab-case``;
5. folding: NFKC, case folding, the skeleton's lookalikes plus Lisu, Coptic, turned and small-capital letters,
   and diacritics and combining marks stripped from Latin, Greek and Cyrillic letters (``ø``→``o``, ``ß``→``ss``);
6. leetspeak inside words that mix letters with digits or symbols (``n0w``, ``@dmin``, ``pr3v1ous``), choosing
   ``1``→``i`` or ``l`` by the gate's vocabulary;
7. separators inside words: runs of single letters joined by one repeated separator (``.``, ``-``, ``_``, ``/``,
   ``|``, ``·``, ``•``, ``*``, ``+``, ``~``, ``:``, ``,`` or one space) become one word;
8. words run together (``ignorepreviousinstructions``) are split into the gate's vocabulary when that covers them;
9. typos: a word one edit (insertion, deletion, substitution, transposition) away from one of the gate's attack
   words becomes that word, only when the text also holds another attack word.

The result is only ever *matched against*: it is never stored or shown, so a fold that reads a benign word oddly
costs nothing unless the whole rule then matches. Every step is linear in the input (bounded regexes, per-token
dictionary lookups, no backtracking), and text without any of these features returns at once.
"""

from __future__ import annotations

import functools
import html
import re
import unicodedata
from collections.abc import Iterable

from memwarden.gate.normalize import Normalized, lower_then_upper, normalize, skeleton_of

__all__ = ["attack_vocabulary", "deobfuscate", "fold_letters"]

# Cheap tests for "anything here could be a disguise" on ASCII text (any other character is a signal by itself):
# a markup or escape character, a digit or symbol touching a letter, an inner capital, single letters joined by a
# separator, a hyphenated or very long run of letters.
_MARKS = "*_~`<>&%\\|[@"  # ("!" and "$" are too common to be a signal alone; "n0w", "@dmin" still are)
_HYPHENS = re.compile(r"[a-zA-Z]-[a-zA-Z]+-[a-zA-Z]")
_DISGUISE_CHAR = re.compile(
    "[\u0640\ufffc\u2800\u3164\uffa0\u115f\u1160\u2028\u2029\u0085\u2061-\u2064\u180e"
    "\ua4d0-\ua4ff\u2c80-\u2cff\u03e2-\u03ef\u1d00-\u1d2b\u0250-\u02af\u2200\u2c6f\u2132\u2141-\u2144"
    "\u0180-\u0188\u01dd\u0237\u0238-\u024f]|[A-Za-z\u0590-\u08ff\u0900-\u0dff\u0e00-\u0eff\u3040-\u9fff"
    "\uac00-\ud7af][\u0300-\u036f]")
_SEPARATED = re.compile(r"(?<![A-Za-z0-9])[A-Za-z0-9][.\-/·:+,' ][A-Za-z0-9][.\-/·:+,' ][A-Za-z0-9](?![A-Za-z0-9])")


def _disguised_unicode(text: str, tokens: Iterable[str] | None) -> bool:
    """Non-ASCII text needs the de-obfuscated view when it holds a character only a disguise uses (fillers, line
    separators, Lisu, Coptic, turned or small-capital letters, a combining mark on a Latin letter) or an accented
    word that reads as an attack word without its accents ("ïgnörë"); accented names ("Zoë", "Kraków") do not."""
    if _DISGUISE_CHAR.search(text) is not None:
        return True
    words = [t for t in (tokens if tokens is not None else _WORD.findall(text.lower()))
             if not t.isascii() and _FOLDABLE_RUN.search(t) is not None]
    if not words:
        return False
    # fold_letters(t) for each word at once: folding maps runs of foldable letters (which a NUL never joins) and
    # single characters, none of them to a NUL, so the joined result splits back into the words' folds
    return not attack_vocabulary().isdisjoint(fold_letters("\0".join(words)).split("\0"))


def _signalled(text: str, tokens: Iterable[str] | None) -> bool:
    if not text.isascii() and _disguised_unicode(text, tokens):
        return True
    for c in _MARKS:
        if c in text:
            return True
    if ("-" in text and _HYPHENS.search(text) is not None) or lower_then_upper(text):
        return True
    singles = 0
    for t in tokens if tokens is not None else _WORD_OR_NUMBER.findall(text.lower()):
        if len(t) >= 16 or (not t.isalpha() and not t.isdigit() and t.isalnum() and t.isascii()):
            return True  # a run-together word, or letters and digits mixed (leetspeak)
        singles += len(t) == 1
    return singles >= 3 and _SEPARATED.search(text) is not None


_SEPARATORS = re.compile("[\u2028\u2029\u0085\u000b\u000c]")
# Latin combining marks on letters of scripts that never take them (Hebrew, Arabic, Indic, Thai, CJK, Hangul)
_FOREIGN_MARKS = re.compile("(?<=[\u0590-\u08ff\u0900-\u0dff\u0e00-\u0eff\u3040-\u9fff\uac00-\ud7af])"
                            "[\u0300-\u036f]+")
_FILLERS = re.compile("[\ufffc\u2800\u3164\uffa0\u115f\u1160\u2061-\u2064\u180e]")
_TATWEEL = re.compile("\u0640+")
_FILLER_CELL = re.compile("([.\\-_/|·•*+~:,])[\u0640\ufffc\u2800\u3164\uffa0\u115f\u1160\u2061-\u2064\u180e]+\\1")
_ARABIC = re.compile("[\u0600-\u06ff\u0750-\u077f\u08a0-\u08ff\ufb50-\ufdff\ufe70-\ufeff]")

_HTML_COMMENT = re.compile(r"<!--(.{0,2000}?)-->", re.DOTALL)
_MD_COMMENT = re.compile(r"\[//\]:\s*#\s*[(\"'](.{0,2000}?)[)\"']")
_TAG = re.compile(r"</?[A-Za-z][\w:-]{0,20}(?:\s[^<>]{0,200})?/?>")
_MD_LINK = re.compile(r"!?\[([^\[\]\n]{0,300})\]\(([^()\s]{0,500})\)")
# emphasis marks: "*", "~" and backquotes anywhere around letters; "_" only at a word's edge ("_ignore_"), since
# inside a word it joins an identifier (snake_case, split into words below)
_EMPHASIS = re.compile(r"(?<=\w)[*~`]{1,3}(?=\w)|(?<![\w*_~`])[*_~`]{1,3}(?=\w)|(?<=\w)[*_~`]{1,3}(?![\w*_~`])")
_MARK_CELL = re.compile(r"([.\-/|·•+:,])[*~`]{1,3}\1")
_STRAY_MARKS = re.compile(r"(?<=[^\w\s*~`])[*~`]{1,3}|[*~`]{1,3}(?=[^\w\s*~`])")  # "g.*.n": marks beside punctuation
_PERCENT = re.compile(r"%([0-9A-Fa-f]{2})")
_BBCODE = re.compile(r"(?:\[/?(?:b|i|u|s|em|url|color|size|font|quote|code|spoiler|sup|sub|img|h\d)"
                     r"(?:=[^\]\n]{0,40})?\]){1,8}", re.IGNORECASE)
_BACKSLASHED = re.compile(r"(?:\\[^\W\d_]){2,}")  # a backslash before every letter
_UESCAPE = re.compile(r"\\u([0-9A-Fa-f]{4})|\\x([0-9A-Fa-f]{2})|\\U([0-9A-Fa-f]{8})")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z]{2})")  # digits: leetspeak inside a hump
# Joined identifiers worth splitting: camel humps (a capital and lowercase letters or leetspeak digits), two or more,
# in a word of 10+ characters or with three humps ("YouTube", "GitHub" and "iPhone" stay whole, so a brand name
# never produces a stray "you"; an all-capitals word is not camelCase).
_JOINED_WORD = re.compile(r"\b(?=[A-Za-z0-9]{10,}\b|(?:[a-z0-9]*[A-Z]){3})[a-z0-9]*(?:[A-Z][a-z0-9]+){2,}\b")
_JOINERS = re.compile(r"(?<=[A-Za-z])[_-](?=[A-Za-z])")
# two camel humps in a row, which every _JOINED_WORD match holds: a class first, which the regex engine skips to
# fast (the word pattern starts with a look-ahead tried at every position)
_HUMPS = re.compile(r"[A-Z][a-z0-9]+[A-Z][a-z0-9]")

# Letters the skeleton does not fold: Lisu (shaped after Latin capitals), Coptic, turned, reversed and other
# IPA letters, Latin small capitals and letters with strokes. Each maps to one lowercase ASCII letter (or two).
_EXTRA_FOLDS: dict[str, str] = {
    # Lisu
    "ꓐ": "b", "ꓑ": "p", "ꓒ": "d", "ꓓ": "d", "ꓔ": "t", "ꓕ": "t", "ꓖ": "g", "ꓗ": "k", "ꓘ": "k", "ꓙ": "j",
    "ꓚ": "c", "ꓛ": "c", "ꓜ": "z", "ꓝ": "f", "ꓞ": "f", "ꓟ": "m", "ꓠ": "n", "ꓡ": "l", "ꓢ": "s", "ꓣ": "r",
    "ꓤ": "r", "ꓥ": "v", "ꓦ": "v", "ꓧ": "h", "ꓨ": "w", "ꓩ": "f", "ꓪ": "w", "ꓫ": "x", "ꓬ": "y", "ꓭ": "g",
    "ꓮ": "a", "ꓯ": "a", "ꓰ": "e", "ꓱ": "e", "ꓲ": "i", "ꓳ": "o", "ꓴ": "u", "ꓵ": "u", "ꓶ": "l", "ꓷ": "d",
    # Coptic (shaped like Greek, folded the way the skeleton folds Greek)
    "ⲁ": "a", "ⲃ": "b", "ⲅ": "r", "ⲇ": "d", "ⲉ": "e", "ⲋ": "s", "ⲍ": "z", "ⲏ": "h", "ⲑ": "o", "ⲓ": "i",
    "ⲕ": "k", "ⲗ": "l", "ⲙ": "m", "ⲛ": "n", "ⲝ": "e", "ⲟ": "o", "ⲡ": "n", "ⲣ": "p", "ⲥ": "c", "ⲧ": "t",
    "ⲩ": "y", "ⲫ": "o", "ⲭ": "x", "ⲯ": "y", "ⲱ": "w", "ϣ": "w", "ϥ": "q", "ϧ": "x", "ϩ": "h", "ϫ": "x",
    "ϭ": "c", "ϯ": "t",
    "Ⲁ": "a", "Ⲃ": "b", "Ⲅ": "r", "Ⲇ": "d", "Ⲉ": "e", "Ⲍ": "z", "Ⲏ": "h", "Ⲓ": "i", "Ⲕ": "k", "Ⲗ": "l",
    "Ⲙ": "m", "Ⲛ": "n", "Ⲟ": "o", "Ⲡ": "n", "Ⲣ": "p", "Ⲥ": "c", "Ⲧ": "t", "Ⲩ": "y", "Ⲭ": "x", "Ⲱ": "w",
    # turned / reversed letters (upside-down text), IPA letters
    "ɐ": "a", "ɒ": "a", "ʌ": "v", "ɔ": "c", "ǝ": "e", "ə": "e", "ɘ": "e", "ɛ": "e", "ɜ": "e", "ɟ": "f",
    "ƃ": "g", "ɓ": "b", "ɥ": "h", "ɦ": "h", "ᴉ": "i", "ɨ": "i", "ɾ": "j", "ʞ": "k", "ꞁ": "l", "ɯ": "m",
    "ɰ": "m", "ɱ": "m", "ɲ": "n", "ŋ": "n", "ɵ": "o", "ɹ": "r", "ɻ": "r", "ɽ": "r", "ɿ": "r", "ʁ": "r",
    "ʃ": "s", "ʂ": "s", "ʇ": "t", "ʈ": "t", "ʉ": "u", "ʊ": "u", "ʍ": "w", "ʎ": "y", "ʐ": "z", "ʑ": "z",
    "ɖ": "d", "ɗ": "d", "ƚ": "l", "ɫ": "l", "ɬ": "l", "ɭ": "l", "ƙ": "k", "ƥ": "p", "ƭ": "t", "ʋ": "v",
    "ƴ": "y", "ƶ": "z", "ɀ": "z", "ȥ": "z", "ꜹ": "av", "ꝏ": "oo",
    "∀": "a", "Ɐ": "a", "Ɔ": "c", "Ǝ": "e", "Ⅎ": "f", "⅁": "g", "Ɥ": "h", "ſ": "s", "Ꞁ": "l", "⅂": "l", "Ɯ": "m",
    "Ʌ": "v", "Ʇ": "t", "Ʞ": "k", "⅄": "y",
    # letters with strokes, ligatures and others NFKD does not take apart
    "ø": "o", "ł": "l", "đ": "d", "ð": "d", "ħ": "h", "ŧ": "t", "ƀ": "b", "ɇ": "e", "ɉ": "j", "ɍ": "r",
    "ɏ": "y", "ß": "ss", "æ": "ae", "œ": "oe", "þ": "th", "ĸ": "k", "ŀ": "l",
}
_EXTRA_TABLE = {ord(k): v for k, v in _EXTRA_FOLDS.items()}
assert all(k > 0x7F for k in _EXTRA_TABLE), "fold_letters returns ASCII text unchanged"
_FOLDABLE_SCRIPTS = ((0x0000, 0x024F), (0x0370, 0x03FF), (0x0400, 0x052F), (0x1E00, 0x1FFF))

_LEET = str.maketrans({"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "8": "b", "9": "g", "@": "a",
                       "$": "s", "!": "i", "|": "l", "€": "e", "+": "t"})
_LEET_HINT = re.compile(r"[\d@$!|€+]")  # a character leetspeak writes a letter with
_LEET_TOKEN = re.compile(r"(?<![\w@$!|€+])(?=[\w@$!|€+]*[a-z])(?=[\w@$!|€+]*[0-9@$!|€+])[\w@$!|€+]{2,64}")
# single letters (or leetspeak digits) joined by one repeated separator: "i.g.n.0.r.3"
# (a separator right after the last letter goes too: "i.g.n.o.r.e. all" is "ignore all")
_SPACED = re.compile(r"(?<![^\W_])([^\W_])([.\-_/|·•*+~:,' ])(?:[^\W_]\2){1,60}[^\W_](?![^\W_])(?:\2(?=\s|$))?")
_SPACED_WS = re.compile(r"(?<![^\W_])[^\W_](?: [^\W_]){2,60}(?![^\W_])")
_WORD = re.compile(r"[^\W\d_]+")
_WORD_OR_NUMBER = re.compile(r"[a-z0-9]+")
_LONG_WORD = re.compile(r"[a-z]{10,64}")
# A run-together word is split only if it holds one of these (C-speed test before the dynamic programme).
_JOINED_HINT = re.compile("ignor|instruc|previous|prior|system|prompt|assistant|override|forget|disregard|jailbr|"
                          "develop|admin|password|secret|reveal|conceal|always|never|fromnow|goingforward|bypass|"
                          "safety|guardrail|restrict|unrestrict|execute|confirm|permission|credential")
MAX_SEGMENTED = 24  # run-together words split per candidate (each is a small dynamic programme)
MAX_TYPO_WORDS = 96  # distinct unknown words checked for typos per candidate (bounded cost on long texts)


@functools.cache
def _diacritic_fold(c: str) -> str:
    """``c`` with combining marks removed when its base is Latin, Greek or Cyrillic (other scripts keep theirs:
    Indic vowel signs, Arabic harakat and Hebrew points are part of the word)."""
    decomposed = unicodedata.normalize("NFKD", c)
    base = decomposed[:1]
    if not base or not any(lo <= ord(base) <= hi for lo, hi in _FOLDABLE_SCRIPTS):
        return c
    kept = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return unicodedata.normalize("NFC", kept)


_FOLDABLE_RUN = re.compile("[\u00c0-\u024f\u0300-\u036f\u0370-\u03ff\u0400-\u052f\u1e00-\u1fff]+")


@functools.lru_cache(maxsize=8192)
def _fold_run(run: str) -> str:
    out: list[str] = []
    for ch in run:
        if unicodedata.combining(ch):
            continue  # a mark inside a run of Latin/Greek/Cyrillic letters (or on nothing): drop it
        out.append(_diacritic_fold(ch))
    return "".join(out)


def fold_letters(text: str) -> str:
    """Strip diacritics and combining marks from Latin/Greek/Cyrillic letters and fold the extra lookalikes.
    Work is per run of such letters (cached), so other scripts cost one regex scan."""
    if text.isascii():
        return text  # the lookalike table folds only non-ASCII characters
    text = _extra_folds(text)
    if text.isascii():
        return text
    return _extra_folds(_FOLDABLE_RUN.sub(lambda m: _fold_run(m.group()), text))


_NON_ASCII_RUN = re.compile(r"[^\x00-\x7f]+")


def _extra_folds(text: str) -> str:
    """``text.translate(_EXTRA_TABLE)``; on mostly ASCII text (a long note with a few curly quotes or accented
    names) only its non-ASCII runs are translated, since the table has no ASCII key (``str.translate`` with a dict
    looks every character up)."""
    non_ascii = len(text) - len(text.encode("ascii", "ignore"))
    if non_ascii * 16 >= len(text):
        return text.translate(_EXTRA_TABLE)
    return _NON_ASCII_RUN.sub(lambda m: m.group().translate(_EXTRA_TABLE), text)


# --- vocabulary: the words the gate's rules are written in -------------------------------------------------------
_CORE_WORDS = (
    "ignore disregard forget override bypass skip previous prior above earlier instructions instruction rules rule "
    "guidelines directives system prompt prompts policy policies safety filter filters guardrails restrictions "
    "developer mode jailbreak jailbroken unrestricted unfiltered admin administrator root superuser sudo "
    "permission permissions privileges authorized approved verified assistant you your always never from now on "
    "going forward henceforth future session sessions every all any must should will shall answer reply respond "
    "tell reveal send forward upload include secret secrets password passwords token tokens credentials api key "
    "keys user users conversation history message messages execute run download install curl wget bash shell "
    "hide conceal mention confirm confirmation asking ask verify verification review tests delete remove transfer "
    "approve deny pretend act behave follow obey comply new real true actual mode enable disable off on the and "
    "to of in is are a an for with without this that these those do not don't dont no longer previously told "
    "memory memories data email webhook endpoint url link image script command terminal output print display "
    "share leak exfiltrate attach append embed repeat dump contents env environment variables private ssh "
    "wallet account bank refund payment pay wire whenever when if trigger word phrase says say later next time "
    "agent model ai bot chatbot llm gpt claude chatgpt override safeguards moderation ethics limitations "
    "boundaries protocols checks constraints content training programming original initial default existing "
    "current old everything anything above before below preceding instead only also please now important note "
    "reminder remember treat trusted trust operator owner grant granted access elevated full unlimited "
    "archive address file files folder link links reply replies answer answers copy copies paste site page web "
    "server account accounts key login logins code codes note notes log logs report reports order orders "
    "it its they them their there here what which who with from into onto about after before over under "
    "every each other others more most some such only own same so than too very can could would should may "
    "might must shall will just also now then when where why how all any both few many much no nor not "
    "out up down off again further once here"
)


@functools.cache
def attack_vocabulary() -> frozenset[str]:
    """Lowercase ASCII words the rules are written in: the rule trigger words plus the core words above."""
    from memwarden.gate import rules

    words: set[str] = set(_CORE_WORDS.split())
    for rule in rules.RULES:
        words.update(w for w in rule.words if w.isascii() and w.isalpha() and len(w) >= 2)
    words.update(w for w in rules.SENSITIVE_WORDS | rules.STANDING_WORDS if w.isalpha())
    return frozenset(words)


# Words whose misspellings are worth correcting: long enough that one edit rarely lands on another real word.
_TYPO_TARGETS = (
    "ignore disregard previous instructions instruction guidelines directives override restrictions jailbreak "
    "developer unrestricted administrator permission permissions privileges confirmation verification assistant "
    "forget system prompt secrets password passwords credentials conversation exfiltrate henceforth bypass "
    "execute download reveal conceal safety filters guardrails forward upload").split()
# Real words one edit away from a target that must not be "corrected".
_NOT_TYPOS = frozenset(
    "signore ignores ignored ignoring ignorer ignorance instructor instructs instructed previews previewed "
    "directed director directory directs overrides overridden overriding developers developed developing "
    "developed permissive forgets forgot forged forget's systems systemic prompted prompter prompts promptly "
    "password's passwords' reveals revealed conceals concealed bypassed bypasses executed executes executor "
    "downloads downloaded forwards forwarded forwarder uploads uploaded uploader safely safe safer filtered "
    "filter filtering guardrail secret secreted secrets' credential assistants assistant's conversations "
    "verifications confirmations instructions' revert reverse".split())


@functools.cache
def _deletes() -> dict[str, str]:
    """Symmetric-delete index (distance 1) of the typo targets: every string one deletion away → the target."""
    out: dict[str, str] = {}
    for word in _TYPO_TARGETS:
        for i in range(len(word)):
            out.setdefault(word[:i] + word[i + 1:], word)
        out.setdefault(word, word)
    return out


def _correct(token: str) -> str | None:
    """The typo target ``token`` is one edit away from (insertion, deletion, substitution, transposition)."""
    if len(token) < 5 or token in _NOT_TYPOS:
        return None
    index = _deletes()
    hit = index.get(token)
    if hit is not None:
        return hit if hit != token else None
    for i in range(len(token)):
        cand = index.get(token[:i] + token[i + 1:])
        if cand is not None and abs(len(cand) - len(token)) <= 1:
            return cand
    return None


def _leet(token: str, vocab: frozenset[str]) -> str:
    plain = token.translate(_LEET)
    if plain in vocab or ("1" not in token and "|" not in token and "!" not in token):
        return plain
    alt = token.replace("1", "l").replace("|", "l").replace("!", "i").translate(_LEET)
    return alt if alt in vocab else plain


def _segment(word: str, vocab: frozenset[str]) -> str | None:
    """``word`` split into vocabulary words by dynamic programming (fewest unknown letters, then fewest pieces;
    unknown letters stay together as one piece), or None unless that finds two words of three letters or more
    and leaves at most 40 % of the letters unknown."""
    n = len(word)
    inf = (n + 1, n + 1)
    best: list[tuple[int, int]] = [(0, 0)] + [inf] * n  # (unknown letters, pieces) up to position i
    back: list[tuple[int, bool]] = [(0, False)] * (n + 1)  # (start of the last piece, it is a known word)
    for j in range(1, n + 1):
        u, p = best[j - 1]
        best[j], back[j] = (u + 1, p + 1), (j - 1, False)
        for i in range(max(0, j - 16), j):
            piece = word[i:j]
            if piece in vocab and (len(piece) > 1 or piece in ("a", "i")):
                u, p = best[i]
                if (u, p + 1) < best[j]:
                    best[j], back[j] = (u, p + 1), (i, True)
    parts: list[tuple[str, bool]] = []
    j = n
    while j > 0:
        i, known = back[j]
        if not known and parts and not parts[-1][1]:
            parts[-1] = (word[i:j] + parts[-1][0], False)
        else:
            parts.append((word[i:j], known))
        j = i
    parts.reverse()
    words = [w for w, known in parts if known and len(w) >= 3]
    if len(words) < 2 or best[n][0] > 0.4 * n:
        return None
    return " ".join(w for w, _ in parts)


def _unescape(text: str) -> str:
    if "&" in text and ";" in text:
        text = html.unescape(text)
    if "%" in text:
        text = _PERCENT.sub(lambda m: chr(int(m.group(1), 16)) if int(m.group(1), 16) >= 0x20 else m.group(), text)
    if "\\" in text:
        def dec(m: re.Match[str]) -> str:
            code = int(m.group(1) or m.group(2) or m.group(3), 16)
            return chr(code) if 0x20 <= code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF else m.group()
        text = _UESCAPE.sub(dec, text)
        text = _BACKSLASHED.sub(lambda m: m.group().replace("\\", ""), text)  # "\\S\\a\\v\\e" is "Save"
    return text


def _demarkup(text: str) -> str:
    if "<!--" in text:
        text = _HTML_COMMENT.sub(lambda m: f" {m.group(1)} ", text)
    if "[//]" in text:
        text = _MD_COMMENT.sub(lambda m: f" {m.group(1)} ", text)
    if "<" in text:
        text = _TAG.sub(lambda m: "" if _inside_word(text, m.start(), m.end()) else " ", text)
    if "](" in text:
        text = _MD_LINK.sub(lambda m: f"{m.group(1)} {m.group(2)}", text)
    if "[" in text and "]" in text:
        text = _BBCODE.sub(lambda m: "" if _inside_word(text, m.start(), m.end()) else " ", text)
    if any(c in text for c in "*_~`"):
        # a mark standing for a letter between two separators ("i.g.*.n.o.r.e") goes with one of them, so the
        # letters still read as one spaced word (found by the property test: "g.*.n" left "g..n" behind)
        text = _MARK_CELL.sub(r"\1", text)
        text = _EMPHASIS.sub("", _STRAY_MARKS.sub("", text))
    return text


def _inside_word(text: str, a: int, b: int) -> bool:
    return a > 0 and b < len(text) and text[a - 1].isalnum() and text[b].isalnum()


def _fillers(text: str) -> str:
    text = _SEPARATORS.sub("\n", text)
    if not text.isascii():
        text = _FOREIGN_MARKS.sub("", text)
    arabic = "\u0640" in text and _ARABIC.search(text.replace("\u0640", "")) is not None
    # a filler standing for a letter between two separators ("i.g.ـ.n.o.r.e") goes with one of them
    text = _FILLER_CELL.sub(lambda m: m.group(1) if not arabic or "\u0640" not in m.group() else m.group(), text)
    text = _FILLERS.sub("", text)
    if "\u0640" in text and not arabic:
        text = _TATWEEL.sub("", text)
    elif "\u0640" in text:
        text = re.sub(r"(?<![\u0600-\u06ff])\u0640+|\u0640+(?![\u0600-\u06ff])", "", text)
    return text


# What every match of _SPACED / _SPACED_WS holds (a separator, a single letter, the same separator; a space, a
# letter, a space and a letter), found by patterns that start with a literal or a class of separators, which the
# regex engine skips to fast, instead of a look-behind tried at every position: without one there is no match,
# and the substitution would return the text unchanged.
_SPACED_HINT = re.compile(r"([.\-_/|·•*+~:,' ])[^\W_]\1")
_SPACED_WS_HINT = re.compile(r" [^\W_] [^\W_]")


def _despace(text: str) -> str:
    """Collapse runs of single letters joined by one repeated separator into words (``i.g.n.o.r.e``)."""
    def join(m: re.Match[str]) -> str:
        return m.group().replace(m.group(2), "")
    if _SPACED_HINT.search(text) is not None:
        text = _SPACED.sub(join, text)
    # "i g n o r e  p r e v i o u s": single spaces join letters, wider gaps separate words
    if _SPACED_WS_HINT.search(text) is None:
        return text
    return _SPACED_WS.sub(lambda m: m.group().replace(" ", ""), text)


def _tokens_fix(text: str, vocab: frozenset[str]) -> str:
    """Leetspeak, run-together words and typos, token by token (only tokens that need it are touched)."""
    if _LEET_HINT.search(text) is not None:
        text = _LEET_TOKEN.sub(lambda m: _leet(m.group(), vocab), text)
    return _typos(_joined(text, vocab), vocab)


def _joined(text: str, vocab: frozenset[str]) -> str:
    # only a long word holding a hint is ever split, so the hint is looked for in the long words (the alternation
    # of hints costs ~0.1 µs per character of the whole text, the long-word scan a tenth of that)
    if any(_JOINED_HINT.search(w) is not None for w in _LONG_WORD.findall(text)):
        budget = [MAX_SEGMENTED]

        def split(m: re.Match[str]) -> str:
            w = m.group()
            if w in vocab or budget[0] <= 0 or _JOINED_HINT.search(w) is None:
                return w
            budget[0] -= 1
            return _segment(w, vocab) or w
        text = _LONG_WORD.sub(split, text)
    return text


def _typos(text: str, vocab: frozenset[str]) -> str:
    """Correct words one edit from an attack word, when with the attack words already present that makes two."""
    fixes = typo_fixes(set(_WORD.findall(text)))
    return _WORD.sub(lambda m: fixes.get(m.group(), m.group()), text) if fixes else text


_TARGET_SET = frozenset(_TYPO_TARGETS)
_TYPO_PREFIXES = frozenset(w[:3] for w in _TYPO_TARGETS) | frozenset(w[1:4] for w in _TYPO_TARGETS)


def typo_fixes(tokens: Iterable[str]) -> dict[str, str]:
    """Misspelt attack words in plain text and their corrections, when with the attack words already present they
    make two ("ignroe all previous instructions"; "ingore all previus instrucions"); else nothing. Cheap: only
    words sharing three letters with an attack word's start are tried."""
    words = tokens if isinstance(tokens, (set, frozenset)) else set(tokens)
    vocab = attack_vocabulary()
    suspects = [t for t in words - vocab
                if 5 <= len(t) <= 15 and (t[:3] in _TYPO_PREFIXES or t[1:4] in _TYPO_PREFIXES) and t.isascii()]
    known = len(words & _TARGET_SET)
    if not suspects or known + len(suspects) < 2:
        return {}
    fixes: dict[str, str] = {}
    for t in suspects:
        c = _correct(t)
        if c is not None:
            fixes[t] = c
    if not fixes or known + len(fixes) < 2:
        return {}
    return fixes


def deobfuscate(original: str, n: Normalized | None = None, tokens: Iterable[str] | None = None
                ) -> Normalized | None:
    """The de-obfuscated view of ``original`` (see the module docstring), or None when it reads the same as the
    plain skeleton ``n`` (computed when not given). ``tokens`` (the plain text's words) let plain text without
    any disguise skip everything but the typo check, and that too unless :func:`typo_fixes` finds a misspelling."""
    if n is None:
        n = normalize(original)
    if not _signalled(original, tokens):
        fixes = typo_fixes(tokens) if tokens is not None else {}
        if not fixes:
            return None
        fixed = _WORD.sub(lambda m: fixes.get(m.group(), m.group()), n.skeleton)
        return None if fixed == n.skeleton else Normalized(original, fixed, fixed, ())
    text = _fillers(original)
    text = _demarkup(text)
    text = _unescape(text)
    if not text.isascii():  # accents off first (case kept), so "IgnöréAll" still splits at its humps
        text = fold_letters(text)
    if _HUMPS.search(text) is not None:  # every joined word has two humps
        text = _JOINED_WORD.sub(lambda m: _CAMEL.sub(" ", m.group()), text)
    if "_" in text or "-" in text:  # a joiner is one of them
        text = _JOINERS.sub(" ", text)
    text = _despace(text)
    folded = skeleton_of(text)  # what normalize(text).skeleton is, ASCII or not
    folded = fold_letters(folded)
    folded = _despace(folded)
    folded = _tokens_fix(folded, attack_vocabulary())
    folded = " ".join(folded.split())
    if folded == n.skeleton:
        return None
    return Normalized(original, folded, folded, ())


def views(original: str, n: Normalized) -> Iterable[Normalized]:
    """The plain normalised text, then the de-obfuscated view when it differs."""
    yield n
    deep = deobfuscate(original, n)
    if deep is not None:
        yield deep
