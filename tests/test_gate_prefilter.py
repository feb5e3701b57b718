"""The rule prefilter (gate/prefilter.py) must change nothing but speed: G3 verdicts and spans stay exactly those
of one combined regex per rule. Compared on the corpus, generated memories and adversarial random text."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memwarden.gate import content
from memwarden.gate.normalize import normalize
from memwarden.gate.prefilter import Layout, RuleMatcher, requirements

CORPUS = Path(__file__).parent / "gate_corpus"
TEXTS = [json.loads(line)["text"] for name in ("attacks.jsonl", "negatives.jsonl")
         for line in (CORPUS / name).read_text(encoding="utf-8").splitlines() if line.strip()]
COMBINED = [(c.matcher, c.matcher.combined()) for c in content._RULES]


def _span(m: re.Match[str] | None) -> tuple[int, int] | None:
    return None if m is None else m.span()


def _assert_same(text: str) -> None:
    n = normalize(text)
    tokens = content._tokens(n)
    for target in {n.skeleton, n.text}:
        for matcher, combined in COMBINED:
            assert _span(matcher.search(target, tokens)) == _span(combined.search(target)), (text, matcher.patterns)


def test_g3_prefilter_matches_exactly_like_the_combined_rule_on_the_corpus() -> None:
    assert len(TEXTS) > 1000
    for text in TEXTS:
        _assert_same(text)


# Words and punctuation the rules are made of, so random text often gets close to (or into) a match.
_VOCAB = sorted({w for c in content._RULES for p in c.rule.patterns for n in requirements(p)
                 for w in (*n.tokens, *n.substrings)} | {" ", ".", ",", ":", "\n", "'", '"', "_", "-", "/"})


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_VOCAB) | st.text(max_size=4), min_size=1, max_size=30))
def test_g3_prefilter_property_any_text_matches_like_the_combined_rule(parts: list[str]) -> None:
    _assert_same(" ".join(parts))
    _assert_same("".join(parts))  # words glued together: token boundaries move


def test_g3_prefilter_word_with_boundaries_is_a_token_requirement() -> None:
    (need,) = requirements(r"\b(?:approved|authori[sz]ed)\b")
    assert need.cheap and need.tokens == {"approved", "authorized", "authorised"}
    (need,) = requirements(r"\brules?\s+apply")
    assert need.tokens == {"apply"} or need.tokens == {"rule", "rules"}


def test_g3_prefilter_text_without_boundaries_is_a_substring_requirement() -> None:
    (need,) = requirements(r"foo(?:bar|baz)")
    assert not need.cheap and need.substrings == {"foobar", "foobaz"}  # "xfoobar" matches: not a token


@pytest.mark.parametrize("pattern", [r"[a-z]+\d", r"(?i)\bsecret\b", r"(?i:secret)", r"(?a)\bsecret\b", r"x?"])
def test_g3_prefilter_proves_nothing_where_it_cannot(pattern: str) -> None:
    assert requirements(pattern) == ()
    matcher = RuleMatcher([pattern])
    for text in ("SECRET agent", "secret", "ab1", ""):
        assert _span(matcher.search(text, set(re.findall(r"\w+", text)))) == _span(re.search(pattern, text))


def test_g3_prefilter_ties_go_to_the_earlier_pattern_and_leftmost_wins() -> None:
    matcher = RuleMatcher([r"\bcall\b", r"\bcall the\b", r"\bthe tool\b"])
    text = "then call the tool"
    tokens = set(text.split())
    assert _span(matcher.search(text, tokens)) == _span(matcher.combined().search(text)) == (5, 9)


def test_g3_prefilter_covers_most_rule_patterns_with_token_checks() -> None:
    patterns = [p for c in content._RULES for p in c.rule.patterns]
    token_checked = [p for p in patterns if any(n.cheap for n in requirements(p))]
    assert len(token_checked) >= 0.6 * len(patterns)


def test_g3_agent_cue_matcher_finds_what_the_agent_cue_regex_finds() -> None:
    from memwarden.gate.rules import AGENT_CUE

    regex = re.compile(AGENT_CUE)
    for text in TEXTS:
        skeleton = normalize(text).skeleton
        tokens = content._tokens(normalize(text))
        for part in [skeleton, *re.findall(r"[^.!?\n]+", skeleton)]:
            assert _span(content._AGENT.search(part.lstrip(), tokens)) == _span(regex.search(part.lstrip())), part


# --- windowed search on long texts (Layout) ----------------------------------------------------------------------


def _assert_windowed_same(text: str) -> int:
    """Every rule's windowed search on ``text``'s views finds exactly the combined regex's match; returns how many
    views were long enough to be searched in windows."""
    n = normalize(text)
    tokens = content._tokens(n)
    long_views = 0
    for target in {n.skeleton, n.text}:
        layout = Layout.of(target, tokens)
        if layout is None:
            continue
        long_views += 1
        for matcher, combined in COMBINED:
            assert _span(matcher.search(target, tokens, layout)) == _span(combined.search(target)), matcher.patterns
    return long_views


def test_g3_windowed_search_matches_like_the_combined_rule_on_long_corpus_texts() -> None:
    """Long candidates made of corpus attacks and hard negatives (so anchors occur often and windows merge, reach
    the text's ends and get dropped for a whole-text search): the same match as one regex per rule."""
    import random

    rng = random.Random(7)
    searched = 0
    for size in (12, 25, 60):
        for _ in range(6):
            searched += _assert_windowed_same(" ".join(rng.choice(TEXTS) for _ in range(size)))
    assert searched >= 18


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(TEXTS), min_size=8, max_size=30),
       st.text(alphabet="abcdefghij ,.:-_/'\"()#*<>|0123456789", min_size=0, max_size=400))
def test_g3_property_windowed_search_is_exact_with_noise_between_the_anchors(parts: list[str], noise: str) -> None:
    """Corpus sentences joined by random punctuation-heavy noise (long tokens widen windows, separators sit at
    window edges): still exactly the combined regex's match."""
    _assert_windowed_same(noise.join(parts))


def test_g3_layout_refuses_texts_it_cannot_bound() -> None:
    """Windows rely on single spaces (a normalised view): other whitespace, or a short text, gets no layout."""
    assert Layout.of("short text", {"short", "text"}) is None
    assert Layout.of("word\n" * 400, {"word"}) is None
    assert Layout.of("word  " * 400, {"word"}) is None
    assert Layout.of("word " * 400, {"word"}) is not None
