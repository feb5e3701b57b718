"""The content scanner of the write gate (G2–G5): normalise once, then run the rule families on it.

Order: Unicode findings from normalisation (invisible, bidi, tag, variation-selector runs, homoglyphs) →
secrets (on the original text: key formats are case-sensitive) → the rule families of :mod:`.rules` (only those
whose trigger words occur) → encoded payloads (base64/hex/rot13 decoded and scanned again, bounded) →
session-scoped references (stripped, or the candidate dropped when that is all it is) → the confidence threshold
for model-extracted candidates (G5). Everything is compiled once, at import.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from memwarden.gate import REJECT, Candidate, RuleHit
from memwarden.gate.classify import classify
from memwarden.gate.normalize import Normalized, normalize
from memwarden.gate.prefilter import RuleMatcher
from memwarden.gate.rules import (
    AGENT_CUES,
    DECODE_AND_FOLLOW,
    EXFIL_VERBS,
    IMPERATIVE_VERBS,
    RESTATE,
    ROUTE_VERBS,
    RULES,
    SENSITIVE_PHRASES,
    SENSITIVE_SYMBOLIC,
    SENSITIVE_WORDS,
    STANDING_PHRASES,
    STANDING_WORDS,
    TRIGGER_PHRASES,
    TRIGGER_WORDS,
    Rule,
)
from memwarden.gate.secrets import find_secrets, secret_rule_hits
from memwarden.gate.session_refs import find_session_refs, only_references
from memwarden.policy import Policy

STRIP = "strip"  # a hit whose span is removed from the stored content (G4); does not block the write
_TOKEN = re.compile(r"\w+")
_ASCII_TOKEN = re.compile(r"[A-Za-z0-9_]+")  # \w on ASCII text
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_B64 = re.compile(r"(?<![\w+/-])(?:[A-Za-z0-9+/]{4}){4,}(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{1,3})?"
                  r"(?![\w+/=-])|(?<![\w+/-])[A-Za-z0-9_-]{22,}={0,2}(?![\w+/=-])")
_HEX = re.compile(r"(?<![0-9A-Fa-f])(?:[0-9A-Fa-f]{2}){12,}(?![0-9A-Fa-f])|(?:\\x[0-9A-Fa-f]{2}){8,}|"
                  r"(?<![0-9A-Fa-f])(?:[0-9A-Fa-f]{2}[ :]){11,}[0-9A-Fa-f]{2}(?![0-9A-Fa-f])")
_DECODE_AND_FOLLOW = re.compile(DECODE_AND_FOLLOW)
_DECODE_WORDS = frozenset("decode decrypt deobfuscate base64 rot13 unhex translate".split())
_BLOB_GATE = re.compile(r"[A-Za-z0-9+/_-]{16}|\\x[0-9A-Fa-f]{2}")
MAX_DECODE_DEPTH = 2
MAX_DECODED_CHARS = 8192


@dataclass(frozen=True, slots=True)
class _Compiled:
    rule: Rule
    matcher: RuleMatcher
    words: frozenset[str]
    needles: tuple[str, ...]


def _compile(rules: Iterable[Rule]) -> tuple[_Compiled, ...]:
    out = []
    for rule in rules:
        words = frozenset(part for w in rule.words for part in _TOKEN.findall(w.casefold()))
        out.append(_Compiled(rule, RuleMatcher(rule.patterns), words, rule.needles))
    return tuple(out)


_RULES = _compile(RULES)
_NEEDLES = tuple(sorted({nd for c in _RULES for nd in c.needles}))
# word → indices of the rules it activates; needle → indices; the CJK rules. A candidate then visits only the
# rules one of its words (or needles) can activate, in rule order.
_BY_WORD: dict[str, tuple[int, ...]] = {}
for _i, _c in enumerate(_RULES):
    for _word in _c.words:
        _BY_WORD[_word] = (*_BY_WORD.get(_word, ()), _i)
_BY_NEEDLE = {nd: tuple(i for i, c in enumerate(_RULES) if nd in c.needles) for nd in _NEEDLES}
_CJK_RULES = tuple(i for i, c in enumerate(_RULES) if c.rule.cjk)
_ASCII_NEEDLES = tuple(nd for nd in _NEEDLES if nd.isascii())


@dataclass(slots=True)
class Analysis:
    """What the content scanner found: hits (original spans), the G2 class, and the normalised text."""

    hits: list[RuleHit] = field(default_factory=list)
    kind: str = "fact"
    normalized: Normalized | None = None


def _words(text: str) -> list[str]:
    """``\\w+`` runs; on ASCII text the same runs by a byte-class scan (no Unicode category lookups)."""
    return (_ASCII_TOKEN if text.isascii() else _TOKEN).findall(text)


def _tokens(n: Normalized) -> set[str]:
    tokens = set(_words(n.skeleton))
    if n.text != n.skeleton:
        tokens.update(_words(n.text))
    if "_" in n.skeleton:
        tokens.update(part for tok in [t for t in tokens if "_" in t] for part in tok.split("_"))
    return tokens


def _rule_hits(n: Normalized, tokens: set[str] | None = None,
               compiled: tuple[_Compiled, ...] | None = None) -> list[RuleHit]:
    compiled = _RULES if compiled is None else compiled
    hits: list[RuleHit] = []
    latin, text = n.skeleton, n.text
    if tokens is None:
        tokens = _tokens(n)
    ascii_only = text.isascii()
    by_word = _BY_WORD
    active = {i for tok in tokens if tok in by_word for i in by_word[tok]}
    for nd in _ASCII_NEEDLES if ascii_only else _NEEDLES:
        if nd in text:
            active.update(_BY_NEEDLE[nd])
    if not ascii_only and _CJK.search(text):
        active.update(_CJK_RULES)
    done: set[str] = set()
    for i in sorted(active):
        c = compiled[i]
        rule = c.rule
        if rule.id in done:
            continue
        target = latin if rule.script == "latin" else text
        m = c.matcher.search(target, tokens)
        if m is None and rule.script == "latin" and text != latin:
            m = c.matcher.search(text, tokens)
            in_skeleton = False
        else:
            in_skeleton = rule.script == "latin"
        if m is None:
            continue
        done.add(rule.id)
        hits.append(RuleHit(rule.id, rule.action, rule.message,
                            n.original_span(m.start(), m.end(), in_skeleton=in_skeleton)))
    return hits


_AGENT = RuleMatcher(AGENT_CUES)  # ≡ re.compile(AGENT_CUE).search, skipping cues whose words are absent
_SENSITIVE_SYMBOLIC = re.compile(SENSITIVE_SYMBOLIC)


def _sensitive(clause: str, words: set[str]) -> bool:
    return (not SENSITIVE_WORDS.isdisjoint(words) or any(p in clause for p in SENSITIVE_PHRASES)
            or _SENSITIVE_SYMBOLIC.search(clause) is not None)


def _standing(clause: str, words: set[str]) -> bool:
    return not STANDING_WORDS.isdisjoint(words) or any(p in clause for p in STANDING_PHRASES)


def _trigger(clause: str, words: set[str]) -> bool:
    return not TRIGGER_WORDS.isdisjoint(words) or any(p in clause for p in TRIGGER_PHRASES)
_EXFIL = re.compile(EXFIL_VERBS)
_ROUTE = re.compile(ROUTE_VERBS)
_CLAUSE = re.compile(r"[^.!?\n]+")
_USER_PREFERENCE = re.compile(r"\s*(?:the\s+)?(?:user|customer|client)(?:'s)?\s+(?:prefers?|likes?|loves?|wants?|"
                              r"would (?:like|rather)|wishes|asked|asks|enjoys?|dislikes?|hates?|favou?rs?)\b")
_HEURISTIC_MESSAGES = {
    "directive.future_behaviour": RESTATE,
    "exfil.beacon": "it tells the assistant to send data somewhere; memory cannot hold instructions to move data",
    "route.tool": "it tells the assistant which tool, endpoint or account to use; tool routing is configured by "
                  "the application, not remembered",
    "trigger.delayed": "it sets up a delayed trigger (when X happens, do Y); memory cannot hold conditional "
                       "instructions",
}


_IMPERATIVE_WORDS = frozenset(w for w in IMPERATIVE_VERBS.split("|") if " " not in w and "-" not in w)
_LEAD_WORDS = frozenset(
    "remember make be don do please just also then and always never now immediately automatically silently quietly "
    "kindly simply permanently forever henceforth when whenever if once as the should any anytime later after next "
    "in from for going".split())
_AGENT_WORDS = frozenset("you your yourself assistant agent ai model bot chatbot llm gpt copilot answer answers reply "
                         "replies response responses output outputs message messages email commit summary".split())
_QUOTED = re.compile(r"\"[^\"\n]{1,200}\"|“[^”\n]{1,200}”|«[^»\n]{1,200}»")
_CLAUSE_START = re.compile(r"(?:^|[.!?;:\n])\s*(\w+)")


def _standing_instruction(n: Normalized, tokens: set[str]) -> list[RuleHit]:
    """A clause that addresses the assistant and is standing or aims at something sensitive (see rules.py)."""
    # Quoted speech is content, not an instruction ("a friend's motto: 'let go of what no longer serves you'");
    # the explicit rules still see the whole text, quotes included. Blanking keeps offsets.
    text = n.skeleton
    if '"' in text or "“" in text or "«" in text:
        text = _QUOTED.sub(lambda m: " " * len(m.group()), text)
    starts = set(_CLAUSE_START.findall(text))
    if _AGENT_WORDS.isdisjoint(tokens) and _IMPERATIVE_WORDS.isdisjoint(starts) and _LEAD_WORDS.isdisjoint(starts):
        return []
    if not _AGENT.search(text, tokens):
        return []
    for m in _CLAUSE.finditer(text):
        clause = m.group()
        if _USER_PREFERENCE.match(clause) or not _AGENT.search(clause.lstrip(), tokens):
            continue
        words = set(_TOKEN.findall(clause))
        sensitive = _sensitive(clause, words)
        if not (sensitive or _standing(clause, words)):
            continue
        if sensitive and _trigger(clause, words):
            family = "trigger.delayed"
        elif sensitive and _EXFIL.search(clause):
            family = "exfil.beacon"
        elif sensitive and _ROUTE.search(clause):
            family = "route.tool"
        else:
            family = "directive.future_behaviour"
        return [RuleHit(family, REJECT, _HEURISTIC_MESSAGES[family],
                        n.original_span(m.start(), m.end(), in_skeleton=True))]
    return []


def _printable_text(raw: bytes) -> str | None:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if len(text) < 8:
        return None
    good = sum(ch.isprintable() or ch in "\n\t" for ch in text)
    letters = sum(ch.isalpha() for ch in text)
    return text if good >= 0.95 * len(text) and letters >= 0.5 * len(text.replace(" ", "")) else None


def _may_hold_blob(text: str) -> bool:
    """``_BLOB_GATE.search(text)``, answered without a scan when no whitespace-free run is 16 characters long
    (a blob has no whitespace, so it lies inside one such run)."""
    if "\\x" not in text and max(map(len, text.split()), default=0) < 16:
        return False
    return _BLOB_GATE.search(text) is not None


def _decode_blobs(original: str) -> list[tuple[tuple[int, int], str, str]]:
    """(span, encoding, decoded text) for every base64/hex blob that decodes to readable text."""
    out: list[tuple[tuple[int, int], str, str]] = []
    for m in _B64.finditer(original):
        blob = m.group()
        for decoder in (base64.b64decode, base64.urlsafe_b64decode):
            body = blob.rstrip("=")
            body = body[: len(body) - len(body) % 4] if len(body) % 4 == 1 else body  # a truncated blob
            try:
                raw = decoder(body + "=" * (-len(body) % 4))
            except (binascii.Error, ValueError):
                continue
            text = _printable_text(raw)
            if text:
                out.append((m.span(), "base64", text))
                break
    for m in _HEX.finditer(original):
        digits = re.sub(r"\\x|[ :]", "", m.group())
        try:
            text = _printable_text(bytes.fromhex(digits))
        except ValueError:
            continue
        if text:
            out.append((m.span(), "hex", text))
    return out


def _inner_rules(text: str, depth: int, budget: list[int]) -> list[str]:
    """Rule ids (rejecting) that fire on a decoded payload: rules, secrets, and nested encodings."""
    budget[0] -= len(text)
    if budget[0] < 0:
        return []
    n = normalize(text)
    tokens = _tokens(n)
    found = [h.rule for h in _rule_hits(n, tokens) + _standing_instruction(n, tokens) if h.action == REJECT]
    found += [s.rule for s in find_secrets(text)]
    if depth < MAX_DECODE_DEPTH and not found:
        for _span, _enc, inner in _decode_blobs(text):
            found += _inner_rules(inner, depth + 1, budget)
            if found:
                break
    return found


def _encoded_hits(original: str, n: Normalized, tokens: set[str]) -> list[RuleHit]:
    hits: list[RuleHit] = []
    m = None if _DECODE_WORDS.isdisjoint(tokens) else _DECODE_AND_FOLLOW.search(n.skeleton)
    if m:
        hits.append(RuleHit("encoded.payload", REJECT, "it asks for an encoded text to be decoded and acted on",
                            n.original_span(m.start(), m.end(), in_skeleton=True)))
        return hits
    budget = [MAX_DECODED_CHARS]
    blobs = _decode_blobs(original) if _may_hold_blob(original) else []
    for span, enc, decoded in blobs:
        inner = _inner_rules(decoded, 1, budget)
        if inner:
            hits.append(RuleHit("encoded.payload", REJECT,
                                f"it hides a {enc}-encoded payload that decodes to forbidden content "
                                f"({', '.join(sorted(set(inner)))})", span))
            break
    if not hits and (not tokens.isdisjoint(_ROT13_WORDS) or _looks_rot13(tokens)):
        inner = _inner_rules(codecs.encode(original, "rot13"), 1, budget)
        if inner:
            hits.append(RuleHit("encoded.payload", REJECT,
                                f"it hides a rot13-encoded payload that decodes to forbidden content "
                                f"({', '.join(sorted(set(inner)))})", (0, len(original))))
    return hits


_STOP_WORDS = "the and is a to of you in that it for on are this with be your from now"
_STOP = frozenset(_STOP_WORDS.split())
_STOP_ROT13 = frozenset(codecs.encode(" ".join(_STOP), "rot13").split())


_ROT13_WORDS = frozenset("rot13 rot caesar rot47".split())


def _looks_rot13(tokens: set[str]) -> bool:
    """English under rot13: no common English stop words, several of their rot13 forms."""
    return len(tokens) >= 5 and tokens.isdisjoint(_STOP) and len(tokens & _STOP_ROT13) >= 2


class ContentScanner:
    """The built-in content rules. Call :meth:`analyze` for hits plus the G2 class."""

    def analyze(self, c: Candidate, policy: Policy) -> Analysis:
        original: str = c.content
        n = normalize(original)
        hits: list[RuleHit] = [RuleHit(f.rule, REJECT, f.message, f.span) for f in n.findings]
        secret_hits = find_secrets(original)
        hits += secret_rule_hits(secret_hits)
        tokens = _tokens(n)
        hits += _rule_hits(n, tokens)
        if not any(h.action == REJECT for h in hits):
            hits += _standing_instruction(n, tokens)
        if not any(h.rule.startswith(("exec.", "directive.", "claim.")) for h in hits):
            hits += _encoded_hits(original, n, tokens)
        refs = find_session_refs(original, tokens if original.isascii() else None)
        if refs:
            if only_references(original, refs):
                hits.append(RuleHit(refs[0].rule, REJECT,
                                    "it is only a reference to something that exists in this session (an upload, "
                                    "a temporary or signed URL, a session id, a local address or path) and will "
                                    "not exist later", refs[0].span))
            else:
                hits += [RuleHit(r.rule, STRIP, "a session-scoped reference was removed before saving", r.span)
                         for r in refs]
        if c.source == "model" and isinstance(c.confidence, (int, float)) \
                and float(c.confidence) < policy.min_confidence:
            hits.append(RuleHit("confidence.below_threshold", REJECT,
                                f"its confidence {float(c.confidence):.2f} is below the threshold "
                                f"{policy.min_confidence:.2f} for model-extracted memories"))
        rejected = any(h.action == REJECT for h in hits)
        return Analysis(hits, classify(n.text, rejected=rejected, tokens=tokens), n)


SCANNER = ContentScanner()
